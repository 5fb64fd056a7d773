import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  recordSend,
  reserveSend,
  spacedUntil,
  type KeyBookings,
  type KeySpacing,
  type UncountedLaunch,
  type Bucket,
  type LaunchRecord,
  type LaunchSend,
  type RecordedBucket,
} from '../core/launch-estimate';
import { documentClient } from './table';

/** The record's key: one item per deployment and region (EC2's buckets are per account and region). */
export const launchRecordPk = (deployment: string): string => `LAUNCHES#${deployment}`;
export const launchRecordSk = (region: string): string => `#REGION#${region}`;

/**
 * Attempts at one write before it is given up (each loss re-reads the
 * record). Workers book turns at the same moments (just before their calls,
 * once a predicted turn comes), so races cluster: with 8, a worker lost 8 in
 * a row in the shared-pacing test and paced that call alone. A reservation's
 * deadline bounds the tries in time.
 */
const MAX_TRIES = 16;
/** After a lost race, a write waits up to this many ms times the losses so far (random). */
const RACE_JITTER_MS = 10;
/** How long a reserved call's instances wait for the next reservation to count them. */
const FLUSH_MS = 2_000;
/** Flushes of a region's uncounted instances that may fail in a row before they are dropped. */
export const MAX_FLUSH_FAILURES = 3;
/**
 * How long one GetItem or PutItem of the record may take before it is
 * aborted: a single small item answers in milliseconds, and a loaded local
 * table took a few seconds at worst, so 5 s is only reached by a stalled
 * request. It keeps one stalled request from holding the region's chain of
 * writes (every later reservation and count waits for it) and ends under the
 * launch batcher's 10 s reservation timeout.
 */
export const RECORD_REQUEST_TIMEOUT_MS = 5_000;
/** The lead a reservation books its turn with at most (see `leadMs`). */
export const MAX_RESERVE_LEAD_MS = 2_000;
/** Writes whose durations set the lead (the slowest of them). */
const LEAD_WINDOW = 8;

/** A reservation given up before anything was written (its deadline passed, or its turn was too far). */
export class ReservationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReservationRefused';
  }
}

export interface ReserveOptions {
  /** Epoch ms after which the caller no longer waits: the reservation throws instead of writing. */
  deadlineMs?: number;
  /** A turn further off than this is not booked: the reservation throws instead of writing. */
  maxWaitMs?: number;
  /** The call's launch key and worker: its booking is kept in the record for other workers' spacing. */
  spacing?: KeySpacing;
  now?: () => number;
}

function isBucket(v: unknown): v is RecordedBucket {
  const b = v as Partial<RecordedBucket> | undefined;
  return (
    typeof b?.burst === 'number' && typeof b.perSecond === 'number' && typeof b.fullAt === 'number'
  );
}

function isKeyBookings(v: unknown): v is KeyBookings {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The record as stored; `keys` only when the item has them (items before key spacing do not). */
export function parseLaunchRecord(
  item: Record<string, unknown> | undefined,
): LaunchRecord | undefined {
  if (!item || !isBucket(item.requests) || !isBucket(item.instances)) return undefined;
  return {
    requests: item.requests,
    instances: item.instances,
    version: typeof item.version === 'number' ? item.version : 0,
    ...(isKeyBookings(item.keys) ? { keys: item.keys } : {}),
  };
}

/** What a prediction found: the bucket's next turn, and the spacing of the key's calls, if any. */
export interface PredictedTurn {
  /** When a RunInstances reserved now would go out (epoch ms), by the request bucket. */
  at: number;
  /**
   * Another worker launches the same key: its calls and this worker's are
   * spaced, and this one should not go before then (core/launch-estimate.ts
   * `spacedUntil`). Absent when the key is this worker's alone.
   */
  spacedUntil?: number;
}

/**
 * This deployment's recent launches, as one item per region (DESIGN.md
 * "Launching at scale"; API.md "Plans (dry run)": the estimate counts what
 * this deployment launched recently). The worker's launch batcher writes it
 * once per RunInstances it sends, after the call (never per machine, never
 * before the launch): the two buckets as GCRA full-again times, under the
 * item's version, so that workers writing at once each count. A plan reads
 * it with one GetItem. Cost: one write (1 WCU: the item is under 1 KB) per
 * RunInstances, plus one read and one write per lost race between workers;
 * one read (1 RCU, strongly consistent) per plan.
 */
export class LaunchRecordStore {
  private readonly doc: DynamoDBDocumentClient;
  /** The record as this process last wrote or read it, per region: a write needs no read first. */
  private readonly known = new Map<string, LaunchRecord | undefined>();
  /** The last write of each region, which the next one waits for. */
  private readonly writing = new Map<string, Promise<void>>();
  /** Per region: instances of reserved calls not counted in the record yet (countLater). */
  private readonly uncounted = new Map<string, UncountedLaunch[]>();
  private readonly flushTimers = new Map<string, NodeJS.Timeout>();
  /** Per region: flushes failed in a row (at MAX_FLUSH_FAILURES the uncounted instances are dropped). */
  private readonly flushFailures = new Map<string, number>();
  /** Conditional writes lost to another worker's write (each cost a read and a write more). */
  lostRaces = 0;
  /** How long this process's last writes of the record took (ms), newest last. */
  private readonly writeMs: number[] = [];

  /**
   * How far ahead a reservation books its turn: the slowest of this
   * process's last LEAD_WINDOW writes (at most MAX_RESERVE_LEAD_MS). A turn
   * is worked out before its write goes out, and the call cannot leave
   * before the write is answered; booked as of now, a call would reach EC2
   * as late after its turn as the write took, while calls booked after it
   * may go on time, and EC2's bucket, which had filled meanwhile, refuses
   * the excess. Booked as of now + lead, the call waits for its turn instead.
   */
  leadMs(): number {
    return Math.min(MAX_RESERVE_LEAD_MS, Math.max(0, ...this.writeMs));
  }

  /** Each GetItem/PutItem of the record is aborted after this long (ms). */
  private readonly requestTimeoutMs: number;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    readonly deployment: string,
    opts: { requestTimeoutMs?: number } = {},
  ) {
    this.doc = documentClient(client);
    this.requestTimeoutMs = opts.requestTimeoutMs ?? RECORD_REQUEST_TIMEOUT_MS;
  }

  /**
   * The record of a region, without its key bookings (plans and the
   * workers' checks read the buckets only); undefined when this deployment
   * never launched there.
   */
  read(region: string): Promise<LaunchRecord | undefined> {
    return this.readItem(region, false);
  }

  /** The record as stored, with its key bookings when `withKeys` (a write rewrites the whole item). */
  private async readItem(region: string, withKeys: boolean): Promise<LaunchRecord | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: launchRecordPk(this.deployment), sk: launchRecordSk(region) },
        ConsistentRead: true,
        ...(withKeys
          ? {}
          : {
              ProjectionExpression: '#requests, #instances, #version',
              ExpressionAttributeNames: {
                '#requests': 'requests',
                '#instances': 'instances',
                '#version': 'version',
              },
            }),
      }),
      { abortSignal: AbortSignal.timeout(this.requestTimeoutMs) },
    );
    return parseLaunchRecord(out.Item);
  }

  /**
   * Counts one RunInstances sent in `region` (the buckets are the writer's
   * settings). This process's writes of one region go one after the other,
   * so they never race each other; only other workers' writes can.
   */
  record(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    send: LaunchSend,
  ): Promise<void> {
    return this.update(region, send.atMs, (before) => ({
      next: recordSend(before, buckets, send),
      taken: [],
    }));
  }

  /**
   * Reserves the next RunInstances of `region` for every worker of the
   * deployment (core/launch-estimate.ts reserveSend: GCRA on the request
   * bucket's full-again time), with one conditional write, and resolves with
   * the time (epoch ms) at which the call may go out; the caller waits until
   * then. The write also counts the instances of this process's earlier
   * calls (`countLater`), so a call costs one write, not two. A lost race
   * (another worker reserved first) re-reads and reserves after it, at most
   * MAX_TRIES times; a write DynamoDB refuses rejects (the caller paces
   * locally instead). Once `deadlineMs` has passed (the caller gave up
   * waiting: it may still be queued behind this process's earlier writes), or
   * when the turn would be more than `maxWaitMs` away, it rejects with
   * ReservationRefused before writing: no turn is booked that no call uses.
   */
  async reserve(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    opts: ReserveOptions = {},
  ): Promise<number> {
    const now = opts.now ?? Date.now;
    let sendAtMs = 0;
    // checked before each read as well as before the write: after a failed write this process's
    // copy is gone, and a queued reservation past its deadline must not wait on a read (a hung
    // table would hold the whole chain RECORD_REQUEST_TIMEOUT_MS per entry)
    const givenUp = () => {
      if (opts.deadlineMs !== undefined && now() >= opts.deadlineMs) {
        throw new ReservationRefused('the reservation was given up before it was written');
      }
    };
    await this.update(
      region,
      now(),
      (before) => {
        givenUp();
        const at = now();
        const taken = [...(this.uncounted.get(region) ?? [])];
        // booked as of when the call can leave: once this write is answered
        const r = reserveSend(before, buckets, at + this.leadMs(), taken, opts.spacing);
        if (opts.maxWaitMs !== undefined && r.sendAtMs - at > opts.maxWaitMs) {
          throw new ReservationRefused(
            `the launch record's next turn is ${Math.round((r.sendAtMs - at) / 1000)} s away`,
          );
        }
        sendAtMs = r.sendAtMs;
        return { next: r.next, taken };
      },
      givenUp,
    );
    return sendAtMs;
  }

  /**
   * When a RunInstances reserved now would go out, read from the record
   * without booking anything (one eventually consistent GetItem, 0.5 RCU): a
   * batch waits until then while it keeps growing, and books its turn
   * (`reserve`) only once its members are recorded, just before its call, so
   * the call reaches EC2 at its turn and not seconds after it. With
   * `spacing`, also until when the call should wait for another worker's
   * call of the same launch key (`spacedUntil`).
   */
  async predictTurn(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    opts: { now?: () => number; spacing?: KeySpacing } = {},
  ): Promise<PredictedTurn> {
    const now = opts.now ?? Date.now;
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: launchRecordPk(this.deployment), sk: launchRecordSk(region) },
        ProjectionExpression: `#requests, #instances, #version${opts.spacing ? ', #keys' : ''}`,
        ExpressionAttributeNames: {
          '#requests': 'requests',
          '#instances': 'instances',
          '#version': 'version',
          ...(opts.spacing ? { '#keys': 'keys' } : {}),
        },
      }),
      { abortSignal: AbortSignal.timeout(this.requestTimeoutMs) },
    );
    const record = parseLaunchRecord(out.Item);
    const at = now();
    const turn: PredictedTurn = { at: reserveSend(record, buckets, at).sendAtMs };
    const spaced = opts.spacing ? spacedUntil(record, opts.spacing, at) : undefined;
    return spaced === undefined ? turn : { ...turn, spacedUntil: spaced };
  }

  /**
   * Instances a reserved call launched: counted by this process's next
   * reservation in the region, or after `flushMs` without one by a write of
   * their own (a failed one is reported to `onError` and tried again with the
   * next reservation). Lost if the process ends first (plans then count those
   * instances as not launched; EC2's pacing is not affected).
   */
  countLater(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    launch: UncountedLaunch,
    onError: (err: unknown) => void,
    flushMs = FLUSH_MS,
  ): void {
    if (launch.instances <= 0) return;
    this.uncounted.set(region, [...(this.uncounted.get(region) ?? []), launch]);
    this.armFlush(region, buckets, onError, flushMs);
  }

  /**
   * A write of the region's uncounted instances in `flushMs`, unless one is
   * armed already. What it counts is taken inside the region's chain of
   * writes (as a reservation takes it), so a reservation in flight when the
   * timer fires has removed its instances before the flush looks: none is
   * counted twice. A failed flush is reported and armed again; after
   * MAX_FLUSH_FAILURES in a row the instances are dropped (plans then count
   * them as not launched; EC2's pacing is not affected).
   */
  private armFlush(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    onError: (err: unknown) => void,
    flushMs: number,
  ): void {
    if (this.flushTimers.has(region)) return;
    const timer = setTimeout(() => {
      this.flushTimers.delete(region);
      this.update(region, Date.now(), (before) => {
        const taken = [...(this.uncounted.get(region) ?? [])];
        return taken.length === 0
          ? undefined
          : { next: reserveless(before, buckets, taken), taken };
      }).then(
        () => this.flushFailures.delete(region),
        (err: unknown) => {
          onError(err);
          const failures = (this.flushFailures.get(region) ?? 0) + 1;
          if (failures >= MAX_FLUSH_FAILURES) {
            this.flushFailures.delete(region);
            this.uncounted.delete(region);
            return;
          }
          this.flushFailures.set(region, failures);
          if (this.uncounted.has(region)) this.armFlush(region, buckets, onError, flushMs);
        },
      );
    }, flushMs);
    timer.unref();
    this.flushTimers.set(region, timer);
  }

  /** Keeps a write's duration for `leadMs`. */
  private wrote(ms: number): void {
    this.writeMs.push(ms);
    if (this.writeMs.length > LEAD_WINDOW) this.writeMs.shift();
  }

  /** Removes `taken` (counted by a write that succeeded) from the region's uncounted instances. */
  private counted(region: string, taken: readonly UncountedLaunch[]): void {
    if (taken.length === 0) return;
    const left = (this.uncounted.get(region) ?? []).filter((u) => !taken.includes(u));
    if (left.length > 0) {
      this.uncounted.set(region, left);
      return;
    }
    this.uncounted.delete(region);
    clearTimeout(this.flushTimers.get(region));
    this.flushTimers.delete(region);
  }

  /** Instances of this process's calls the record does not count yet, per region (tests read it). */
  uncountedIn(region: string): number {
    return (this.uncounted.get(region) ?? []).reduce((a, u) => a + u.instances, 0);
  }

  /**
   * Writes `next(before)` under the item's version; this process's writes of
   * a region in turn. `next` may throw (nothing is written) or answer
   * undefined (nothing to write); the uncounted instances it took are
   * removed as soon as its write succeeds, before the next write computes.
   */
  private update(
    region: string,
    atMs: number,
    next: (before: LaunchRecord | undefined) => Computed | undefined,
    beforeRead: () => void = () => undefined,
  ): Promise<void> {
    const previous = this.writing.get(region) ?? Promise.resolve();
    const write = previous
      .catch(() => undefined)
      .then(() => this.write(region, atMs, next, beforeRead));
    this.writing.set(region, write);
    void write
      .catch(() => undefined)
      .then(() => {
        if (this.writing.get(region) === write) this.writing.delete(region);
      });
    return write;
  }

  private async write(
    region: string,
    atMs: number,
    compute: (before: LaunchRecord | undefined) => Computed | undefined,
    beforeRead: () => void,
  ): Promise<void> {
    const read = () => {
      beforeRead();
      return this.readItem(region, true);
    };
    let before = this.known.has(region) ? this.known.get(region) : await read();
    for (let attempt = 1; ; attempt++) {
      const computed = compute(before);
      if (!computed) return;
      const { next, taken } = computed;
      const started = performance.now();
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              pk: launchRecordPk(this.deployment),
              sk: launchRecordSk(region),
              type: 'launch-record',
              requests: next.requests,
              instances: next.instances,
              version: next.version,
              ...(next.keys ? { keys: next.keys } : {}),
              updatedAt: new Date(atMs).toISOString(),
            },
            ConditionExpression: before ? '#version = :version' : 'attribute_not_exists(pk)',
            ...(before
              ? {
                  ExpressionAttributeNames: { '#version': 'version' },
                  ExpressionAttributeValues: { ':version': before.version },
                }
              : {}),
          }),
          { abortSignal: AbortSignal.timeout(this.requestTimeoutMs) },
        );
        this.wrote(performance.now() - started);
        this.known.set(region, next);
        this.counted(region, taken);
        return;
      } catch (err) {
        // another worker wrote first (or this process's copy is old): read, count again
        if (!(err instanceof ConditionalCheckFailedException) || attempt >= MAX_TRIES) {
          this.known.delete(region);
          throw err;
        }
        this.lostRaces += 1;
        // spread the workers that lost apart, so they do not all race again at once
        await new Promise((r) => setTimeout(r, Math.random() * RACE_JITTER_MS * attempt));
        before = await read();
      }
    }
  }
}

/** A write's new record, and the uncounted instances it counts. */
interface Computed {
  next: LaunchRecord;
  taken: readonly UncountedLaunch[];
}

/** The record with `uncounted` instances counted and no call taken. */
function reserveless(
  before: LaunchRecord | undefined,
  buckets: { requests: Bucket; instances: Bucket },
  uncounted: readonly UncountedLaunch[],
): LaunchRecord {
  let record = before;
  for (const u of uncounted) {
    record = recordSend(record, buckets, { atMs: u.atMs, calls: 0, instances: u.instances });
  }
  return { ...record!, version: (before?.version ?? 0) + 1 };
}
