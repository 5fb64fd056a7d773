/**
 * When the last machine of a request will have been launched, under EC2's
 * launch limits as the provisioner knows them (API.md "Plans (dry run)"):
 * a RunInstances request bucket and an instance bucket, each a burst then a
 * refill rate (EC2's defaults: 5 calls at once then 2 a second; 1,000
 * instances at once then 2 a second, per account and region).
 */

/** A token bucket: `burst` at once, then `perSecond`. */
export interface Bucket {
  readonly burst: number;
  readonly perSecond: number;
}

export interface LaunchBudget {
  /** RunInstances calls (the worker paces its calls on this one: PROVISIONER_LAUNCH_BURST / _RATE). */
  readonly requests: Bucket;
  /** Instances launched (EC2's resource bucket). */
  readonly instances: Bucket;
  /** Instances one RunInstances may launch (MaxCount). */
  readonly maxPerCall: number;
  /** How long a launch waits for its batch to fill (PROVISIONER_LAUNCH_BATCH_IDLE), in seconds. */
  readonly batchWaitSeconds: number;
  /** One RunInstances round trip, in seconds. */
  readonly roundTripSeconds: number;
}

/** EC2's published defaults per account and region. */
export const EC2_REQUEST_BUCKET: Bucket = { burst: 5, perSecond: 2 };
export const EC2_INSTANCE_BUCKET: Bucket = { burst: 1000, perSecond: 2 };
/** EC2 takes up to this many instances in one RunInstances. */
export const MAX_INSTANCES_PER_CALL = 1000;
/**
 * A RunInstances round trip, with the workflow's planning and zone claim
 * before it: EC2 answers RunInstances in about a second; the rest is margin.
 */
export const LAUNCH_ROUND_TRIP_SECONDS = 2;

export interface LaunchEstimate {
  /** Seconds until the last machine is launched (0 when nothing is launched). */
  seconds: number;
  /** RunInstances calls the launches take. */
  calls: number;
  /** What goes over the immediate budget, in words; empty when nothing does. */
  notes: string[];
}

/**
 * When the `n`-th token (1-based) of a bucket holding `left` tokens now (a
 * full one by default) is available, in seconds from now.
 */
export function tokenAvailableAt(bucket: Bucket, n: number, left: number = bucket.burst): number {
  if (n <= left) return 0;
  if (bucket.perSecond <= 0) return Number.POSITIVE_INFINITY;
  return (n - left) / bucket.perSecond;
}

/**
 * A bucket's state as one number (a token bucket written as GCRA): the time,
 * in epoch milliseconds, at which it is full again. A bucket that is full
 * has a time in the past (or none at all).
 */
export type FullAt = number | undefined;

/** Tokens left in the bucket at `nowMs`: between 0 and its burst. */
export function tokensLeft(bucket: Bucket, fullAt: FullAt, nowMs: number): number {
  if (fullAt === undefined || fullAt <= nowMs) return bucket.burst;
  if (bucket.perSecond <= 0) return 0;
  const missing = ((fullAt - nowMs) / 1000) * bucket.perSecond;
  return Math.max(0, bucket.burst - missing);
}

/**
 * The bucket's full-again time after `n` tokens were taken at `atMs`, from
 * `left` tokens then (tokensLeft). A bucket never goes below empty: taking
 * more than is left (EC2 granted what the configured bucket did not know of,
 * e.g. a raised limit) counts as emptying it, as EC2's own bucket would be.
 */
export function fullAtAfter(bucket: Bucket, left: number, atMs: number, n: number): number {
  if (bucket.perSecond <= 0) return atMs;
  const missing = bucket.burst - Math.min(left, bucket.burst) + Math.min(Math.max(0, n), left);
  return atMs + (missing / bucket.perSecond) * 1000;
}

/**
 * What this deployment's recent launches left of both buckets now: the
 * worker records every RunInstances it sends (state/launch-record.ts), the
 * plan reads that record. Absent: both buckets full.
 */
export interface BucketsLeft {
  requests: number;
  instances: number;
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function rate(perSecond: number): string {
  return perSecond === 1 ? '1 a second' : `${count(perSecond)} a second`;
}

/**
 * The estimate for launches grouped as the worker batches them: `batches`
 * holds, per launch spec and zone, how many machines share it (each group
 * goes out in calls of at most `maxPerCall`), starting from what is `left`
 * of each bucket now (full when not given).
 */
export function estimateLaunch(
  batches: readonly number[],
  budget: LaunchBudget,
  left: BucketsLeft = { requests: budget.requests.burst, instances: budget.instances.burst },
): LaunchEstimate {
  const machines = batches.reduce((a, b) => a + b, 0);
  if (machines === 0) return { seconds: 0, calls: 0, notes: [] };
  const calls = batches.reduce((a, n) => a + Math.ceil(n / budget.maxPerCall), 0);
  const byRequests = tokenAvailableAt(budget.requests, calls, left.requests);
  const byInstances = tokenAvailableAt(budget.instances, machines, left.instances);
  const notes: string[] = [];
  // tokens come whole: what can go out at once is the whole part of what is left
  const nowInstances = Math.floor(left.instances);
  const nowRequests = Math.floor(left.requests);
  if (machines > left.instances) {
    notes.push(
      `${count(machines)} machines over the next ${count(Math.ceil(byInstances))} s: ` +
        `${count(nowInstances)} at once, then ${rate(budget.instances.perSecond)}`,
    );
  }
  if (calls > left.requests) {
    notes.push(
      `${count(calls)} RunInstances calls over the next ${count(Math.ceil(byRequests))} s: ` +
        `${count(nowRequests)} at once, then ${rate(budget.requests.perSecond)}`,
    );
  }
  if (nowInstances < budget.instances.burst) {
    notes.push(
      `this deployment's recent launches leave ${count(nowInstances)} of the ` +
        `${count(budget.instances.burst)} instances EC2 launches at once; ` +
        `they come back at ${rate(budget.instances.perSecond)}`,
    );
  }
  if (nowRequests < budget.requests.burst) {
    notes.push(
      `this deployment's recent launches leave ${count(nowRequests)} of the ` +
        `${count(budget.requests.burst)} RunInstances calls at once; ` +
        `they come back at ${rate(budget.requests.perSecond)}`,
    );
  }
  const seconds = Math.ceil(
    budget.batchWaitSeconds + Math.max(byRequests, byInstances) + budget.roundTripSeconds,
  );
  return { seconds, calls, notes };
}

/** One bucket as recorded: its settings when last written, and when it is full again. */
export interface RecordedBucket extends Bucket {
  /** Epoch milliseconds at which the bucket is full again (GCRA's theoretical arrival time). */
  fullAt: number;
}

/** What a deployment's launches have left of EC2's buckets in one region. */
export interface LaunchRecord {
  /** RunInstances calls (the worker's pacing: PROVISIONER_LAUNCH_BURST / _RATE). */
  requests: RecordedBucket;
  /** Instances launched (EC2's instance bucket: PROVISIONER_LAUNCH_INSTANCE_BURST / _RATE). */
  instances: RecordedBucket;
  /** Bumped on every write (optimistic concurrency between workers). */
  version: number;
  /**
   * Per launch key (a short hash of a batch's region, zone and spec): when
   * each worker's last RunInstances of that key was booked (epoch ms), for
   * the spacing between workers' batches of one key (`spacedUntil`). Absent
   * in records written before it (or never booked with a key).
   */
  keys?: KeyBookings;
}

/** Launch key → worker id → its last booked send of that key (epoch ms). */
export type KeyBookings = Record<string, Record<string, number>>;

/**
 * A RunInstances of one launch key by one worker, spaced from other
 * workers' calls of the same key by `spacingMs` (state/launch-record.ts).
 */
export interface KeySpacing {
  /** The launch key (a short hash of the batch's region, zone and spec). */
  key: string;
  /** The booking worker (one id per launch batcher, random). */
  worker: string;
  spacingMs: number;
  /**
   * How long after a spacing this worker yields when the key's latest
   * booking is its own (default OWN_KEY_YIELD spacings): long enough for the
   * other worker's batch, released at the spacing, to pass its marks and
   * commit and book, so this worker's re-read sees that booking.
   */
  ownYieldMs?: number;
}

/**
 * Another worker is launching a key while its last booking of it is at most
 * this many spacings old: then every call of the key is spaced, this
 * worker's own after its own too. Three: a worker whose batches alternate
 * with another's books every two spacings, and one spacing more of margin.
 */
export const KEY_ACTIVE_SPACINGS = 3;
/**
 * When this worker made the key's last booking and another worker launches
 * the key too, this worker's next turn of it is a spacing and this share of
 * one more after it, so that the other worker's batch, waiting for a spacing
 * only, books first and the two alternate (rather than both booking at the
 * same moment once the spacing has passed).
 */
export const OWN_KEY_YIELD = 0.5;

/**
 * Until when (epoch ms) a call of `spacing.key` by `spacing.worker` should
 * wait so that the key's calls by several workers are spaced: undefined when
 * no other worker booked the key in the last KEY_ACTIVE_SPACINGS spacings
 * (one worker alone is never spaced after its own calls). Otherwise a
 * spacing after the key's latest booking, and `ownYieldMs` more (default
 * half a spacing, OWN_KEY_YIELD) when that booking is this worker's own.
 */
export function spacedUntil(
  record: LaunchRecord | undefined,
  spacing: KeySpacing,
  nowMs: number,
): number | undefined {
  const bookings = record?.keys?.[spacing.key];
  if (!bookings || spacing.spacingMs <= 0) return undefined;
  const activeSince = nowMs - KEY_ACTIVE_SPACINGS * spacing.spacingMs;
  let otherActive = false;
  let latest = Number.NEGATIVE_INFINITY;
  let latestOwn = false;
  for (const [worker, at] of Object.entries(bookings)) {
    if (typeof at !== 'number') continue;
    if (worker !== spacing.worker && at >= activeSince) otherActive = true;
    if (at > latest) {
      latest = at;
      latestOwn = worker === spacing.worker;
    }
  }
  if (!otherActive) return undefined;
  const yieldMs = spacing.ownYieldMs ?? OWN_KEY_YIELD * spacing.spacingMs;
  return latest + spacing.spacingMs + (latestOwn ? yieldMs : 0);
}

/**
 * The key bookings with `spacing.worker`'s send of `spacing.key` at `atMs`,
 * and without those older than KEY_ACTIVE_SPACINGS spacings at `nowMs` (bad
 * entries dropped too). Older ones can never change `spacedUntil` (it counts
 * only bookings that recent, and the latest booking is among them whenever
 * any is), so the item (rewritten whole by every reservation, read by every
 * gate) keeps only what is read.
 */
export function withKeyBooked(
  keys: KeyBookings | undefined,
  spacing: KeySpacing,
  atMs: number,
  nowMs: number,
): KeyBookings {
  const keptSince = nowMs - KEY_ACTIVE_SPACINGS * spacing.spacingMs;
  const out: KeyBookings = {};
  for (const [key, bookings] of Object.entries(keys ?? {})) {
    if (typeof bookings !== 'object' || bookings === null) continue;
    for (const [worker, at] of Object.entries(bookings)) {
      if (typeof at !== 'number' || at < keptSince) continue;
      (out[key] ??= {})[worker] = at;
    }
  }
  const mine = (out[spacing.key] ??= {});
  mine[spacing.worker] = Math.max(atMs, mine[spacing.worker] ?? atMs);
  return out;
}

/** One RunInstances the worker sent: when, and how many instances EC2 launched for it. */
export interface LaunchSend {
  atMs: number;
  calls: number;
  instances: number;
}

/** Both buckets after `send`, from the record as it stood (absent: both full). */
export function recordSend(
  before: LaunchRecord | undefined,
  buckets: { requests: Bucket; instances: Bucket },
  send: LaunchSend,
): LaunchRecord {
  const next = (was: RecordedBucket | undefined, bucket: Bucket, n: number): RecordedBucket => {
    // what was left at the send, under the settings it was recorded with
    const left = was ? tokensLeft(was, was.fullAt, send.atMs) : bucket.burst;
    const fullAt = fullAtAfter(bucket, left, send.atMs, n);
    // a send recorded late (another worker's later send written first) never makes the
    // bucket fuller than the record already says
    return {
      burst: bucket.burst,
      perSecond: bucket.perSecond,
      fullAt: was ? Math.max(fullAt, was.fullAt) : fullAt,
    };
  };
  return {
    requests: next(before?.requests, buckets.requests, send.calls),
    instances: next(before?.instances, buckets.instances, send.instances),
    version: (before?.version ?? 0) + 1,
    ...(before?.keys ? { keys: before.keys } : {}),
  };
}

/** What the record leaves of each bucket at `nowMs` (undefined record: both full). */
export function bucketsLeft(
  record: LaunchRecord | undefined,
  buckets: { requests: Bucket; instances: Bucket },
  nowMs: number,
): BucketsLeft {
  if (!record) return { requests: buckets.requests.burst, instances: buckets.instances.burst };
  return {
    requests: tokensLeft(record.requests, record.requests.fullAt, nowMs),
    instances: tokensLeft(record.instances, record.instances.fullAt, nowMs),
  };
}

/** A RunInstances this worker sent whose instances the record does not count yet. */
export interface UncountedLaunch {
  atMs: number;
  instances: number;
}

/** A reservation of one RunInstances in the shared record (reserveSend). */
export interface SendReservation {
  /** When the call may go out (epoch ms, the record's clock): `nowMs` when a token is left. */
  sendAtMs: number;
  /** The record with the call counted (and `uncounted` instances), to be written under `before`'s version. */
  next: LaunchRecord;
}

/**
 * Reserves one RunInstances token in the deployment's shared record (GCRA:
 * the request bucket's full-again time is its theoretical arrival time).
 * With `left` tokens at `nowMs` under the recorded settings, the call may go
 * at once when a whole token is left, else when the missing part has come
 * back at the configured rate; the bucket is full again one emission
 * interval after the later of its old full-again time and the send. Every
 * worker of a deployment reserves in the one record, so K workers together
 * spend one bucket. `uncounted` are this worker's earlier calls whose
 * instances the record does not hold yet: counted in the same write. With
 * `spacing`, the booking of its key is kept in the record (`keys`), for
 * other workers' spacing; the turn itself is the bucket's alone (a batch
 * waits for the spacing before it is fixed, not after: `spacedUntil`).
 */
export function reserveSend(
  before: LaunchRecord | undefined,
  buckets: { requests: Bucket; instances: Bucket },
  nowMs: number,
  uncounted: readonly UncountedLaunch[] = [],
  spacing?: KeySpacing,
): SendReservation {
  let record = before;
  for (const u of uncounted) {
    record = recordSend(record, buckets, { atMs: u.atMs, calls: 0, instances: u.instances });
  }
  const bucket = buckets.requests;
  const was = record?.requests;
  // tokens owed at `nowMs` under the recorded settings: past the burst when turns are reserved
  // ahead (GCRA's arrival time beyond now + burst), so the queue of reservations is kept
  const owed = !was || was.fullAt <= nowMs ? 0 : owedTokens(was, nowMs);
  // tokens missing from the configured bucket once this call's is taken
  const missing = owed + 1;
  const intervalMs = 1000 / bucket.perSecond;
  const sendAtMs = nowMs + Math.max(0, missing - bucket.burst) * intervalMs;
  const fullAt = nowMs + missing * intervalMs;
  const instances = record?.instances ?? {
    burst: buckets.instances.burst,
    perSecond: buckets.instances.perSecond,
    fullAt: nowMs,
  };
  return {
    sendAtMs,
    next: {
      requests: {
        burst: bucket.burst,
        perSecond: bucket.perSecond,
        // never fuller than the record already says (e.g. it was written with another rate)
        fullAt: was ? Math.max(fullAt, was.fullAt) : fullAt,
      },
      instances,
      version: (before?.version ?? 0) + 1,
      ...(spacing
        ? { keys: withKeyBooked(record?.keys, spacing, sendAtMs, nowMs) }
        : record?.keys
          ? { keys: record.keys }
          : {}),
    },
  };
}

/** Tokens a bucket owes at `nowMs` (unbounded: reservations ahead count past its burst). */
function owedTokens(was: RecordedBucket, nowMs: number): number {
  if (was.perSecond <= 0) return was.burst;
  return ((was.fullAt - nowMs) / 1000) * was.perSecond;
}
