import {
  describeInstances,
  runInstances,
  terminateInstances,
  type Ec2Instance as Instance,
  type RunInstancesInput,
} from '../ec2/instances';
import { createHash, randomUUID } from 'node:crypto';
import {
  EC2_INSTANCE_BUCKET,
  OWN_KEY_YIELD,
  type Bucket,
  type KeySpacing,
} from '../core/launch-estimate';
import type { LaunchBatchCall } from '../state/launch-batches';
import { ReservationRefused } from '../state/launch-record';
import { FAILURE } from '../temporal/failures';
import type { CapacityMemory } from './capacity-memory';
import { Coalescer, Withdrawn, type Settled } from './coalescer';
import { TokenBucket } from '../ec2/token-bucket';
import type { ActivityDeps } from './deps';
import { classifyError, classifyLaunchError, ec2ErrorCode } from '../ec2/errors';
import { EC2_MAX_ATTEMPTS, throttlesToCaller } from '../ec2/client';
import { failure } from './failures';
import { activityLog } from './log';
import { launchFailed, launchSent } from './metrics';
import { rootDiskGiB } from './plan';
import { launchTags, TAG_LAUNCH_BATCH } from '../ec2/tags';
import type { LaunchPlan, StartedInstance } from './types';

/**
 * A launch try that ended (cancelled, timed out, or withdrawn: a first read's
 * budget) before its batch went out: it launched nothing (withdrawn while its
 * batch gathered, or left out of the batch's call).
 */
export class TryEnded extends Error {
  constructor() {
    super(
      'the launch try ended (cancelled, timed out or out of its budget) before its batch went out',
    );
    this.name = 'TryEnded';
  }
}

/** The root device of Canonical's Ubuntu images (Juju uses the same). */
const ROOT_DEVICE = '/dev/sda1';

/** EC2's idempotency token: at most 64 ASCII characters, stable for what it is made from. */
export function clientToken(seed: string): string {
  return createHash('sha256').update(seed).digest('hex');
}

/** EC2 takes up to this many instances in one RunInstances (MaxCount); more go in the next batch. */
export const MAX_BATCH = 1000;

/** How a RunInstances waited for its turn: in the deployment's shared record, or on this worker's bucket. */
type Paced = 'shared' | 'local';

/**
 * What a batch waited for before it was recorded: its turn predicted from
 * the shared record (booked only once its members are recorded, just before
 * the call), or a token of this worker's own bucket (taken: the call goes
 * out on it).
 */
type Gated = 'predicted' | 'local';

/** A turn: how it was paced, and when it came (epoch ms). */
interface Turn {
  how: Paced;
  at: number;
}

/**
 * The slack the shared record books with: a burst one below EC2's and a
 * rate 10 % under it. Turns booked back to back leave EC2's bucket empty, so
 * a call that reaches EC2 later than its turn while one after it is on time
 * (a busy event loop, a slow socket: measured up to a few hundred ms here)
 * would find no token; one token held back absorbs 1 ÷ rate of such
 * lateness (0.5 s at EC2's 2/s), and the rate's 10 % gives it back at 0.2
 * tokens a second after it was used. It costs a tenth of the call rate at
 * the limit, where the batches grow to make up for it.
 */
export const SHARED_BURST_HELD_BACK = 1;
export const SHARED_RATE_SHARE = 0.9;

/**
 * A shared-paced call later than this after its turn does not go out on it:
 * it books another (at most MAX_REBOOKS times). A worker whose event loop
 * stalled (a busy machine: measured up to 2 s in the shared-pacing test)
 * would otherwise send every call whose turn passed during the stall at
 * once, where EC2's bucket, full at its burst, holds fewer: the stale turns
 * stay booked (EC2's bucket overflowed them anyway), the calls are spaced
 * again from now. 250 ms is half a token at EC2's 2/s, within the token
 * held back.
 */
export const LATE_TURN_MS = 250;
export const MAX_REBOOKS = 3;
/**
 * After EC2 throttles a RunInstances, its bucket is empty (and may be spent by
 * callers the pacing does not see: another deployment, a worker pacing alone):
 * the repeat waits this long first, doubled per throttle up to 16× (0.5 → 8 s),
 * then takes a fresh turn, as the SDK's backoff would have spread it.
 */
export const THROTTLE_BACKOFF_MS = 500;
/**
 * A committed batch goes out no later than this before its first member's
 * try ends (`liveUntil`): past that, it is sent at once instead of waiting
 * for a turn, so the wait after the commit never outlasts the activity.
 */
export const SEND_MARGIN_MS = 5_000;
/**
 * Key spacing (two workers, one launch key): a batch waits for another
 * worker's call of its key (core/launch-estimate.ts `spacedUntil`) at most
 * this many spacings after its window closed, then goes on the bucket's turn
 * alone. Without a bound, a worker whose own batches of the key are not
 * spaced yet (the other has booked none of it lately) could hold the other's
 * batch indefinitely.
 */
export const KEY_SPACING_MAX_WAITS = 2;
/** Times a batch asks the record again after waiting for a spacing (another worker may have booked meanwhile). */
export const KEY_SPACING_ROUNDS = 4;
/** A worker yields its key this many times its own gate-to-booking time (see keySpacing). */
export const BOOK_LAG_YIELD = 1.5;
/** A launch key in the record: a short hash of the batch's key (region, zone, spec). */
export function launchKey(batchKeyJson: string): string {
  return createHash('sha256').update(batchKeyJson).digest('base64url').slice(0, 10);
}

/** After a failed predict or reservation, batches pace locally this long without asking the record. */
export const RECORD_BREAKER_MS = 30_000;
const THROTTLE_BACKOFF_MAX_FACTOR = 16;

/**
 * How long a reservation in the shared launch record may take before the
 * worker paces alone: long, because a slow reservation only holds its batch
 * (which grows meanwhile), where pacing alone spends a bucket other workers
 * spend too. A local table busy with a burst's writes takes seconds at times.
 */
export const RESERVE_TIMEOUT_MS = 10_000;
/** A reserved send further off than this is not waited for (a clock far off): paced alone. */
export const MAX_RESERVED_WAIT_MS = 60_000;

/** Rejects with `what` timed out after `ms` (the promise itself goes on). */
function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** How long one batch's repeated answer is shared between its members' retries. */
const REPLAY_SHARE_MS = 30_000;

export interface LaunchRequest {
  model: string;
  machineId: string;
  zone: string;
  plan: LaunchPlan;
  tokenSeed: string;
  /** Availability-set mode: the partition of `plan.placementGroup` the zone claim assigned. */
  partition?: number;
  /**
   * The batch this try found for its attempt and settled (abandoned, or
   * sent without launching the machine): its batch may take the machine's
   * marker over from it (state/launch-batches.ts `mark`).
   */
  replaces?: string;
  /** The try is over (its activity was cancelled or timed out): its batch leaves it out. */
  signal?: AbortSignal;
  /** Epoch ms after which the try's activity has timed out: its batch leaves it out. */
  liveUntil?: number;
  /**
   * Aborted, the try gives its batch up only while that batch has not been
   * dispatched (a first read's budget, activities/launch.ts): withdrawn while
   * the batch gathers or waits at the gate, not marked when it is sent, and
   * no longer waiting for another batch of its attempt. Unlike `signal`, it
   * does not leave out a try already being marked: the batch's answer is
   * waited for anyway (the coalescer answers its members only once the call
   * is made), so leaving it out then would hold the try as long and gain
   * nothing but another batch and another RunInstances for it.
   */
  withdrawBy?: AbortSignal;
}

/** What `recover` found: the instance, or nothing, with the batch it settled for this attempt. */
export type Recovery = { started: StartedInstance } | { started?: undefined; settled?: string };

/**
 * A try's batch found the machine held by another batch of the same attempt
 * (another try, on this worker or another, joined it first): this batch
 * leaves the machine out, and the try takes what that batch launched.
 */
class HeldByAnotherBatch extends Error {
  constructor(readonly batchId: string) {
    super(`the launch attempt is a member of launch batch ${batchId || '(unknown)'}`);
    this.name = 'HeldByAnotherBatch';
  }
}

/** A batch a member's retry abandoned before it went out: its members launch afresh. */
class BatchAbandoned extends Error {
  constructor(readonly batchId: string) {
    super(`launch batch ${batchId} was abandoned before it went out`);
    this.name = 'BatchAbandoned';
  }
}

/** How long a try waits for the batch that holds its machine to be recorded before abandoning it. */
export const HELD_BATCH_WAIT_MS = 10_000;
const HELD_BATCH_POLL_MS = 250;
/** Batches one try may join (after the first: one abandoned, or one that held its machine). */
const MAX_ROUNDS = 3;

interface Launched {
  instance: Instance;
  call: LaunchBatchCall;
  batch: { id: string; size: number };
}

/** The batch's common spec: launches that share it may go out in one RunInstances. */
function batchKey(r: LaunchRequest): string {
  return JSON.stringify([
    r.plan.region,
    r.zone,
    r.model,
    r.plan.modelUid ?? '',
    r.plan.imageId,
    r.plan.instanceType,
    r.plan.subnetId ?? '',
    rootDiskGiB(r.plan.hardware.rootDisk),
    // one RunInstances places every instance it launches in one group and partition
    r.plan.placementGroup ?? '',
    r.partition ?? 0,
    r.plan.instanceProfile ?? '',
  ]);
}

function runInput(call: LaunchBatchCall, count: number): RunInstancesInput {
  return {
    ImageId: call.imageId,
    InstanceType: call.instanceType as never,
    MinCount: 1,
    MaxCount: count,
    ClientToken: call.clientToken,
    Placement: {
      AvailabilityZone: call.zone,
      ...(call.placementGroup ? { GroupName: call.placementGroup } : {}),
      ...(call.placementGroup && call.partition !== undefined
        ? { PartitionNumber: call.partition }
        : {}),
    },
    ...(call.subnetId ? { SubnetId: call.subnetId } : {}),
    ...(call.instanceProfile ? { IamInstanceProfile: { Name: call.instanceProfile } } : {}),
    // Juju's root device for Ubuntu images; its size is the plan's root disk (8 GiB at least)
    BlockDeviceMappings: [
      {
        DeviceName: ROOT_DEVICE,
        Ebs: { VolumeSize: call.rootDiskGiB, VolumeType: 'gp3', DeleteOnTermination: true },
      },
    ],
    TagSpecifications: [{ ResourceType: 'instance', Tags: call.tags }],
  };
}

/** The instances of a reservation by member position: AmiLaunchIndex, else the order EC2 listed them. */
function byLaunchIndex(instances: readonly Instance[]): Map<number, Instance> {
  const out = new Map<number, Instance>();
  instances.forEach((instance, position) => {
    out.set(instance.AmiLaunchIndex ?? position, instance);
  });
  return out;
}

/**
 * Launch coalescing (DESIGN.md "Launching at scale"): launches of one spec
 * and zone arriving within a short window go out as one RunInstances with
 * `MinCount: 1, MaxCount: k`, recorded before the call so that a crash, a
 * lost answer or a retry ends with exactly one instance per machine
 * (state/launch-batches.ts). Members map to instances by AmiLaunchIndex;
 * when EC2 launches fewer than k, the unserved members get the capacity
 * error and fail over. The batch's tags go on at launch (TagSpecifications):
 * no call is made per instance.
 */
export class LaunchBatcher {
  private readonly coalescer: Coalescer<LaunchRequest, Launched, Gated>;
  private readonly replays = new Map<string, { at: number; answer: Promise<Instance[]> }>();
  private readonly buckets = new Map<string, TokenBucket>();
  /** Each machine's launch under way in this worker (model and machine id → it). */
  private readonly underway = new Map<
    string,
    { tokenSeed: string; started: Promise<StartedInstance> }
  >();

  /** The region's RunInstances bucket, as EC2 publishes it (burst, then a rate). */
  private bucket(region: string): TokenBucket {
    let b = this.buckets.get(region);
    if (!b) {
      b = new TokenBucket(this.deps.tuning.launchBurst, this.deps.tuning.launchRatePerSecond);
      this.buckets.set(region, b);
    }
    return b;
  }

  constructor(
    private readonly deps: ActivityDeps,
    private readonly memory: CapacityMemory,
  ) {
    const { launchBatchIdleMs, launchBatchMaxMs } = deps.tuning;
    this.coalescer = new Coalescer<LaunchRequest, Launched, Gated>(
      { idleMs: launchBatchIdleMs, maxMs: launchBatchMaxMs, maxSize: MAX_BATCH },
      (key, requests, gated) => this.send(requests, gated ?? 'local', this.keySpacing(key)),
      // one RunInstances turn per batch: while it waits, the batch grows
      (key) => this.gate((JSON.parse(key) as string[])[0]!, this.keySpacing(key)),
      {
        // every try withdrawn while the batch waited at the gate (first reads out of their
        // budget, under load): nothing to mark or send, and the turn it took is given back
        dropped: (key, gated) => this.ungate((JSON.parse(key) as string[])[0]!, gated),
      },
    );
  }

  /**
   * Gives back what the gate took for a batch that was then dropped: with
   * local pacing its bucket's token (else spent on no call, a turn lost to
   * every batch behind it); with shared pacing its place among this worker's
   * batches not yet booked (it books no turn).
   */
  private ungate(region: string, gated: Gated | undefined): void {
    if (gated === 'local') this.bucket(region).refund();
    else if (gated === 'predicted') this.bookedOnce(region)();
  }

  /** This batcher in the launch record's key bookings (one per worker process). */
  readonly workerId = randomUUID().slice(0, 8);

  /**
   * The spacing of this batch key's calls from other workers' calls of it
   * (PROVISIONER_LAUNCH_KEY_SPACING, default the batch's max window: two
   * workers together then send a key's calls no more often than one worker
   * whose batches run their whole window); undefined when off (0).
   */
  private keySpacing(key: string): KeySpacing | undefined {
    const t = this.deps.tuning;
    const spacingMs = t.launchKeySpacingMs ?? t.launchBatchMaxMs;
    if (!(spacingMs > 0)) return undefined;
    // the other worker's batch released at the spacing books only after its marks and commit:
    // yield at least as long as this worker's own take (half a spacing at least, one at most),
    // or a re-read before that booking lands sees this worker's own as the latest and goes too
    const ownYieldMs = Math.min(
      spacingMs,
      Math.max(OWN_KEY_YIELD * spacingMs, BOOK_LAG_YIELD * this.bookLagMs),
    );
    return { key: launchKey(key), worker: this.workerId, spacingMs, ownYieldMs };
  }

  /**
   * How long this worker's batches take from the gate to their booking in the
   * record (marks, commit, reservation): each take raises it at once, and it
   * falls back a fifth of the way per faster take.
   */
  private bookLagMs = 0;

  private noteBookLag(ms: number): void {
    this.bookLagMs = Math.max(ms, 0.8 * this.bookLagMs + 0.2 * ms);
  }

  /** Batches that waited for another worker's call of their key (spacing), and how long in all (ms). */
  readonly spaced = { batches: 0, totalMs: 0 };

  /** RunInstances calls paced locally because the shared record could not be used. */
  localFallbacks = 0;
  /** Per region: batches past the gate whose turn is not booked yet (their marks and commit). */
  private readonly unbooked = new Map<string, number>();
  /** RunInstances attempts EC2 throttled, each repeated on a fresh turn (not by the SDK). */
  throttledAttempts = 0;
  /** Committed batches sent without a turn because their members' tries were nearly over (SEND_MARGIN_MS). */
  sentAtDeadline = 0;
  /** Shared turns passed by more than LATE_TURN_MS before their call could go: booked again. */
  staleTurns = 0;
  /** How late shared-paced calls went out after their turns (ms): the largest, and the sum. */
  readonly lateness = { calls: 0, maxMs: 0, totalMs: 0 };

  /** Pacing in the shared record is on and possible. */
  private get sharedPacing(): boolean {
    return this.deps.launchRecord !== undefined && this.deps.tuning.launchSharedPacing !== false;
  }

  /**
   * What a batch waits for while it grows: with shared pacing, the turn the
   * shared record predicts (read, not booked: the turn is booked after the
   * batch is recorded, `pace`). Alone, or when the read fails (and for
   * RECORD_BREAKER_MS after any failed read or reservation), a token of this
   * worker's bucket, so the batch grows while it waits as with local pacing.
   *
   * With `spacing`, when another worker launches the same key the batch
   * also waits until a spacing after that key's last call (and asks again
   * after, since the other worker may have booked meanwhile), at most
   * KEY_SPACING_MAX_WAITS spacings: the two workers' batches of the key
   * alternate, each growing while the other's goes out, instead of each
   * worker sending its own batch per window.
   */
  private async gate(region: string, spacing?: KeySpacing): Promise<Gated> {
    const record = this.deps.launchRecord;
    if (!record || !this.sharedPacing) {
      await this.bucket(region).take();
      return 'local';
    }
    if (this.recordBroken()) return this.gateLocally(region);
    const buckets = this.sharedBuckets();
    const started = Date.now();
    const spacedBy = spacing ? started + KEY_SPACING_MAX_WAITS * spacing.spacingMs : 0;
    let spacedMs = 0;
    for (let round = 0; ; round += 1) {
      let predicted: { at: number; spacedUntil?: number };
      try {
        const timeoutMs = this.deps.tuning.launchReserveTimeoutMs ?? RESERVE_TIMEOUT_MS;
        predicted = await withTimeout(
          record.predictTurn(region, buckets, spacing ? { spacing } : {}),
          timeoutMs,
          'the launch record read',
        );
      } catch (err) {
        // paced by this worker alone, with the token taken here: the batch grows while it waits,
        // as with local pacing, instead of being fixed at once and then waiting for a reservation
        this.recordFailed(region, err);
        return this.gateLocally(region);
      }
      // this worker's batches that passed the gate and have not booked yet take the turns
      // before this one: the record does not show them
      const ahead = ((this.unbooked.get(region) ?? 0) * 1000) / buckets.requests.perSecond;
      const turn = predicted.at + ahead;
      const spacedTo = Math.min(predicted.spacedUntil ?? 0, spacedBy);
      const now = Date.now();
      // waiting for another worker's call of the key, not for the bucket
      const forSpacing = spacedTo > turn && spacedTo > now;
      const waitMs = Math.min(Math.max(turn, spacedTo) - now, MAX_RESERVED_WAIT_MS);
      if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
      if (forSpacing) spacedMs += Date.now() - now;
      if (!forSpacing || Date.now() >= spacedBy || round + 1 >= KEY_SPACING_ROUNDS) break;
    }
    if (spacedMs > 0) {
      this.spaced.batches += 1;
      this.spaced.totalMs += spacedMs;
    }
    this.unbooked.set(region, (this.unbooked.get(region) ?? 0) + 1);
    return 'predicted';
  }

  /** A batch paced on this worker's bucket because the record cannot be used. */
  private async gateLocally(region: string): Promise<Gated> {
    this.localFallbacks += 1;
    await this.bucket(region).take();
    return 'local';
  }

  /** Until then (ms), the record failed recently: batches pace locally without asking it. */
  private recordBrokenUntil = 0;

  private recordBroken(): boolean {
    return Date.now() < this.recordBrokenUntil;
  }

  /**
   * A predict or reservation failed: the next RECORD_BREAKER_MS pace locally
   * without asking the record, so a hung table costs one batch the timeout,
   * not every batch.
   */
  private recordFailed(region: string, err: unknown): void {
    this.recordBrokenUntil = Date.now() + RECORD_BREAKER_MS;
    activityLog.warn('RunInstances paced by this worker alone: the launch record failed', {
      region,
      forMs: RECORD_BREAKER_MS,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }

  /** Once: a batch that passed the gate has booked its turn (or will not book one). */
  private bookedOnce(region: string): (reserved?: boolean) => void {
    let done = false;
    const since = Date.now();
    return (reserved = false) => {
      if (done) return;
      done = true;
      if (reserved) this.noteBookLag(Date.now() - since);
      const left = (this.unbooked.get(region) ?? 1) - 1;
      if (left > 0) this.unbooked.set(region, left);
      else this.unbooked.delete(region);
    };
  }

  /** The buckets the shared record books turns in: EC2's, with slack (SHARED_BURST_HELD_BACK). */
  private sharedBuckets(): { requests: Bucket; instances: Bucket } {
    const { requests, instances } = this.launchBuckets();
    return {
      requests: {
        burst: Math.max(1, requests.burst - SHARED_BURST_HELD_BACK),
        perSecond: requests.perSecond * SHARED_RATE_SHARE,
      },
      instances,
    };
  }

  /** The buckets as this worker is configured (EC2's, as the account has them). */
  private launchBuckets(): { requests: Bucket; instances: Bucket } {
    const t = this.deps.tuning;
    return {
      requests: { burst: t.launchBurst, perSecond: t.launchRatePerSecond },
      instances: {
        burst: t.launchInstanceBurst ?? EC2_INSTANCE_BUCKET.burst,
        perSecond: t.launchInstanceRatePerSecond ?? EC2_INSTANCE_BUCKET.perSecond,
      },
    };
  }

  /**
   * Waits for this RunInstances' turn (DESIGN.md "Launching at scale",
   * shared pacing): its send time reserved in the deployment's launch
   * record, which every worker reserves in, so K workers together send what
   * one would; while it waits, its batch keeps growing. When the record
   * cannot be used (DynamoDB refuses, or takes longer than
   * RESERVE_TIMEOUT_MS, or reserves a time absurdly far off), the call is
   * paced on this worker's own bucket instead, and that is logged: launching
   * never stops for the record.
   */
  private async pace(
    region: string,
    booked: (reserved?: boolean) => void = () => undefined,
    sendBy = Infinity,
    spacing?: KeySpacing,
  ): Promise<Turn> {
    const record = this.deps.launchRecord;
    if (Date.now() >= sendBy) return this.atDeadline(region, booked, sendBy);
    if (record && this.sharedPacing && this.recordBroken()) this.localFallbacks += 1;
    else if (record && this.sharedPacing) {
      const byMs = sendBy - Date.now();
      try {
        const timeoutMs = Math.min(
          this.deps.tuning.launchReserveTimeoutMs ?? RESERVE_TIMEOUT_MS,
          byMs,
        );
        // past the deadline, or with a turn too far off (or past the members' deadline), the
        // reservation writes nothing: the local fallback's record is then the call's only count
        const sendAtMs = await withTimeout(
          record.reserve(region, this.sharedBuckets(), {
            deadlineMs: Date.now() + timeoutMs,
            maxWaitMs: Math.min(MAX_RESERVED_WAIT_MS, byMs),
            // the key's booking, for other workers' spacing of their batches of it
            ...(spacing ? { spacing } : {}),
          }),
          timeoutMs,
          'the launch record reservation',
        );
        // the record shows this turn from now on: a gate counting it as unbooked too would
        // wait a turn more
        booked(true);
        const waitMs = sendAtMs - Date.now();
        if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
        // the worker's own bucket counts it too: a fallback later does not burst over it
        this.bucket(region).spend();
        return { how: 'shared', at: sendAtMs };
      } catch (err) {
        // refused or given up because the members' deadline is near: not the record's fault
        if (
          Date.now() >= sendBy ||
          (err instanceof ReservationRefused && byMs < MAX_RESERVED_WAIT_MS)
        )
          return this.atDeadline(region, booked, sendBy);
        this.localFallbacks += 1;
        this.recordFailed(region, err);
      }
    }
    booked();
    if (sendBy === Infinity) await this.bucket(region).take();
    else {
      // a token, or the members' deadline, whichever comes first (a token taken later is spent
      // then: the bucket spaces the calls after this one)
      let timer: NodeJS.Timeout | undefined;
      const waited = await Promise.race([
        this.bucket(region)
          .take()
          .then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), sendBy - Date.now()))),
      ]);
      clearTimeout(timer);
      if (!waited) {
        this.sentAtDeadline += 1;
        return { how: 'local', at: Date.now() };
      }
    }
    return { how: 'local', at: Date.now() };
  }

  /**
   * No turn before the members' deadline (`sendBy`): the committed batch
   * goes out at it, counted as a local call (the record booked nothing).
   */
  private async atDeadline(region: string, booked: () => void, sendBy: number): Promise<Turn> {
    booked();
    const waitMs = sendBy - Date.now();
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
    this.sentAtDeadline += 1;
    this.bucket(region).spend();
    return { how: 'local', at: Date.now() };
  }

  /**
   * Makes one RunInstances on `turn` (a turn is taken first when none is
   * given) and counts it in the record. A throttled attempt is not retried by
   * the SDK (throttlesToCaller): it is counted as a call, and repeated with
   * the same input (the ClientToken makes it the same launch) on a fresh turn,
   * up to EC2_MAX_ATTEMPTS attempts in all, so no repeat goes out unpaced.
   */
  private async runPaced(
    region: string,
    input: RunInstancesInput,
    first?: Turn,
    booked: () => void = () => undefined,
    sendBy = Infinity,
    spacing?: KeySpacing,
  ): Promise<Instance[]> {
    const { ec2 } = this.deps.ec2ForRegion(region);
    let turn: Turn;
    try {
      turn = first ?? (await this.pace(region, booked, sendBy, spacing));
    } finally {
      booked();
    }
    for (let attempt = 1; ; attempt++) {
      for (let rebooks = 0; turn.how === 'shared' && rebooks < MAX_REBOOKS; rebooks++) {
        // no rebooking past the members' deadline: the batch is committed, it goes now
        if (Date.now() - turn.at <= LATE_TURN_MS || Date.now() >= sendBy) break;
        this.staleTurns += 1;
        turn = await this.pace(region, undefined, sendBy, spacing);
      }
      const sentAt = Date.now();
      if (turn.how === 'shared') {
        const late = Math.max(0, sentAt - turn.at);
        this.lateness.calls += 1;
        this.lateness.totalMs += late;
        this.lateness.maxMs = Math.max(this.lateness.maxMs, late);
      }
      try {
        const out = await throttlesToCaller(() => runInstances(ec2, input));
        const instances = out.Instances ?? [];
        this.counted(region, turn.how, sentAt, instances.length);
        return instances;
      } catch (err) {
        // a call EC2 answered spent a request token and launched nothing; one failing without
        // an answer (a timeout after sending) may have reached EC2: counted as a call too, its
        // instances (if any) are recorded by the repeat that finds them (replay)
        this.counted(region, turn.how, sentAt, 0);
        if (classifyError(err) !== 'throttling' || attempt >= EC2_MAX_ATTEMPTS) throw err;
        this.throttledAttempts += 1;
        // EC2's bucket is empty: so is this worker's, and the repeat backs off before its turn
        this.bucket(region).empty();
        const base = this.deps.tuning.launchThrottleBackoffMs ?? THROTTLE_BACKOFF_MS;
        const backoffMs = base * Math.min(2 ** (attempt - 1), THROTTLE_BACKOFF_MAX_FACTOR);
        // no paced repeat fits before the members' tries end: their retries replay the token
        if (Date.now() + backoffMs >= sendBy) throw err;
        await new Promise((r) => setTimeout(r, backoffMs));
        turn = await this.pace(region, undefined, sendBy, spacing);
      }
    }
  }

  /**
   * Counts a RunInstances that went out in the record: a call paced in the
   * shared record is counted there already (its instances go with this
   * worker's next reservation, or a write of their own shortly after); a
   * call paced locally is recorded whole, as before.
   */
  private counted(region: string, paced: Paced, atMs: number, instances: number): void {
    if (paced === 'local') {
      this.recordSend(region, atMs, instances);
      return;
    }
    this.deps.launchRecord?.countLater(
      region,
      // the settings its turn was booked with: the record's request bucket keeps them
      this.sharedBuckets(),
      { atMs, instances },
      (err: unknown) => {
        activityLog.warn('launched instances were not recorded for plans', {
          region,
          instances,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        });
      },
    );
  }

  /**
   * Counts a RunInstances in this deployment's launch record, which plans
   * read (state/launch-record.ts). Not awaited: the batch's members get their
   * instances without waiting on the write; a failed write is logged, and the
   * plans then count that call as not made.
   */
  private recordSend(region: string, atMs: number, instances: number): void {
    const record = this.deps.launchRecord;
    if (!record) return;
    record
      .record(region, this.launchBuckets(), { atMs, calls: 1, instances })
      .catch((err: unknown) => {
        activityLog.warn('a launch was not recorded for plans', {
          region,
          instances,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        });
      });
  }

  /**
   * Launches one machine's instance, in whatever batch it joins. At most one
   * launch of a machine is under way in this worker: an activity retried
   * while its first attempt still waits for its batch (a heartbeat or
   * start-to-close timeout under load: the first attempt is not stopped) finds
   * no marker yet, and without this would join a second batch, and EC2 would
   * launch the machine twice. It waits for the earlier launch to settle
   * instead, and takes what that launch's batch launched for the machine.
   */
  async launch(request: LaunchRequest): Promise<StartedInstance> {
    const machine = JSON.stringify([request.model, request.machineId]);
    let replaces = request.replaces;
    for (;;) {
      const earlier = this.underway.get(machine);
      if (!earlier) break;
      const outcome = await earlier.started.then(
        (started) => ({ started }),
        () => undefined,
      );
      if (this.underway.get(machine) === earlier) this.underway.delete(machine);
      // the same attempt: its instance, as its batch answered it
      if (outcome && earlier.tokenSeed === request.tokenSeed) return outcome.started;
      // yet another launch of the machine began meanwhile: wait for that one too
      if (this.underway.has(machine)) continue;
      // another attempt, or one that failed: what its batch left (recover checks it fits)
      const found = await this.recover(request, { sameAttemptOnly: false });
      if (found.started) return found.started;
      replaces = found.settled ?? replaces;
    }
    const started = this.launchHeld({
      ...request,
      ...(replaces !== undefined ? { replaces } : {}),
    });
    const entry = { tokenSeed: request.tokenSeed, started };
    this.underway.set(machine, entry);
    try {
      return await started;
    } finally {
      if (this.underway.get(machine) === entry) this.underway.delete(machine);
    }
  }

  /**
   * Launches in a batch; when the batch finds the machine held by another
   * batch of the same attempt (another try joined it first, here or on
   * another worker), waits for that batch to be recorded and takes what it
   * launched for the machine (the same instance), or, if it was abandoned,
   * launches once more in its place; a batch abandoned by another member's
   * retry is launched again the same way. After MAX_ROUNDS batches, or when
   * the machine moved on to another attempt, the try fails (retryably)
   * without launching: the activity's next try looks first.
   */
  private async launchHeld(request: LaunchRequest): Promise<StartedInstance> {
    let current = request;
    for (let round = 0; ; round += 1) {
      try {
        return this.finish(
          // a try cancelled while its batch has not gone out is answered at once (the batch
          // leaves it out: sendBooked's isOver)
          await this.coalescer.submit(batchKey(current), current, endOf(current)),
          false,
        );
      } catch (err) {
        // withdrawn from its batch by the try's end: the same failure as a try the batch left out
        if (err instanceof Withdrawn) throw new TryEnded();
        if (round >= MAX_ROUNDS - 1) throw err;
        // a try that is over (its retry may be under way) or withdrawn launches nothing more,
        // and abandons nothing: only a live try may give up another try's batch
        if (endedOrWithdrawn(current)) throw err;
        if (err instanceof BatchAbandoned) {
          // another member's retry gave the batch up: launch again in its place (if that
          // retry holds this machine, the next batch finds it so and takes its instance),
          // unless the machine moved on to another attempt (a stale try of an earlier one)
          const marker = await this.deps.store.batches.marker(current.model, current.machineId);
          if (marker !== undefined && marker.tokenSeed !== current.tokenSeed) throw err;
          current = { ...current, replaces: err.batchId };
          continue;
        }
        if (!(err instanceof HeldByAnotherBatch)) throw err;
        await this.recorded(current, err.batchId);
        if (endedOrWithdrawn(current)) throw err;
        const found = await this.recover(current, { sameAttemptOnly: true });
        if (found.started) return found.started;
        // the machine moved on to another attempt: not this try's to launch
        if (found.settled === undefined) throw err;
        current = { ...current, replaces: found.settled };
      }
    }
  }

  /**
   * Waits (a while) for a batch that marked its members to record itself,
   * sent or abandoned; no longer than the waiting try itself lasts.
   */
  private async recorded(request: LaunchRequest, batchId: string): Promise<void> {
    if (!batchId) return;
    const until = Date.now() + HELD_BATCH_WAIT_MS;
    while (!(await this.deps.store.batches.written(request.model, batchId))) {
      // the waiting try is over or withdrawn: it leaves the batch alone
      if (endedOrWithdrawn(request)) return;
      if (Date.now() >= until) return; // its worker died or stalls: recover abandons it
      await new Promise((r) => setTimeout(r, HELD_BATCH_POLL_MS));
    }
  }

  /**
   * What the machine's last batch launched for it, if that batch went out:
   * repeated with its token, so EC2 answers the same reservation (or makes
   * the launch now, once, if the first call never reached it). With
   * `sameAttemptOnly`, only a batch joined for this very attempt counts. An
   * instance from an earlier attempt that does not fit this one (another
   * zone or spec) is terminated rather than left behind.
   */
  async recover(request: LaunchRequest, options: { sameAttemptOnly: boolean }): Promise<Recovery> {
    const { batches } = this.deps.store;
    const marker = await batches.marker(request.model, request.machineId);
    if (!marker) return {};
    const sameAttempt = marker.tokenSeed === request.tokenSeed;
    if (options.sameAttemptOnly && !sameAttempt) return {};
    const batch = await batches.settle(request.model, marker.batchId);
    // a batch of this attempt that launched nothing for the machine: this try takes its place
    const settled = { settled: marker.batchId };
    if (batch.state !== 'sent' || !batch.call) return settled;
    const index = batch.members.indexOf(request.machineId);
    if (index < 0) return settled;
    const { call } = batch;
    const { ec2 } = this.deps.ec2ForRegion(call.region);
    let instance: Instance | undefined;
    try {
      instance = byLaunchIndex(await this.replay(batch.id, call, batch.members.length)).get(index);
    } catch (err) {
      if (ec2ErrorCode(err) !== 'IdempotentInstanceTerminated') {
        if (!sameAttempt) return settled; // an old batch that failed: nothing of it is ours
        throw classifyLaunchError(err, call.zone);
      }
      // one of the batch's instances is gone: find ours by the batch's tag
      const out = await describeInstances(ec2, {
        Filters: [{ Name: `tag:${TAG_LAUNCH_BATCH}`, Values: [batch.id] }],
      });
      const all = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
      instance = byLaunchIndex(all).get(index);
    }
    if (!instance?.InstanceId) {
      if (!sameAttempt) return settled;
      // the batch went out and EC2 left this member unserved
      this.memory.remember(call.region, call.instanceType, call.zone);
      throw unserved(call.zone, batch.members.length);
    }
    const launched = { instance, call, batch: { id: batch.id, size: batch.members.length } };
    const state = instance.State?.Name;
    const fits =
      call.zone === request.zone &&
      call.imageId === request.plan.imageId &&
      call.instanceType === request.plan.instanceType &&
      (call.subnetId ?? '') === (request.plan.subnetId ?? '') &&
      (call.placementGroup ?? '') === (request.plan.placementGroup ?? '');
    if (state === 'terminated' || state === 'shutting-down') return settled;
    if (!sameAttempt && !fits) {
      await terminateInstances(ec2, [instance.InstanceId]);
      return settled;
    }
    return { started: this.finish(launched, !sameAttempt) };
  }

  /**
   * Repeats a batch's call. Members of one batch retried together (a worker
   * died, an answer was lost) share one repeat instead of one call each.
   */
  private replay(batchId: string, call: LaunchBatchCall, count: number): Promise<Instance[]> {
    const now = Date.now();
    for (const [id, r] of this.replays) if (now - r.at > REPLAY_SHARE_MS) this.replays.delete(id);
    const shared = this.replays.get(batchId);
    if (shared) return shared.answer;
    // a repeat is a RunInstances like any other, and may be the one that launches the batch
    // (its first call never reached EC2): it is recorded, answered or not (an idempotent
    // repeat counted twice makes plans too careful, never too hopeful)
    const answer = this.runPaced(call.region, runInput(call, count));
    this.replays.set(batchId, { at: now, answer });
    // a failed repeat is not shared: the next member asks again
    answer.catch(() => this.replays.delete(batchId));
    return answer;
  }

  /**
   * Says what was launched. No call per instance: the instance keeps its
   * launch tags (deployment, model, model uid, batch), and its machine is
   * known from what is recorded (the batch's members by AmiLaunchIndex, the
   * machine's instance id: activities/instance-owners.ts, the table's
   * byInstance index).
   */
  private finish(launched: Launched, adopted: boolean): StartedInstance {
    const { instance, call } = launched;
    const instanceId = instance.InstanceId!;
    this.memory.forget(call.region, call.instanceType, call.zone);
    const placementGroup = instance.Placement?.GroupName || call.placementGroup;
    const partition = instance.Placement?.PartitionNumber ?? call.partition;
    return {
      instanceId,
      zone: instance.Placement?.AvailabilityZone ?? call.zone,
      instanceType: instance.InstanceType ?? call.instanceType,
      imageId: instance.ImageId ?? call.imageId,
      adopted,
      batch: launched.batch,
      ...(placementGroup ? { placementGroup } : {}),
      ...(placementGroup && partition !== undefined ? { partition } : {}),
    };
  }

  /** Records the batch, then makes its one RunInstances and answers each member. */
  private async send(
    requests: LaunchRequest[],
    gated: Gated,
    spacing?: KeySpacing,
  ): Promise<Array<Settled<Launched>>> {
    const booked = this.bookedOnce(requests[0]!.plan.region);
    try {
      return await this.sendBooked(requests, gated, booked, spacing);
    } finally {
      if (gated === 'predicted') booked();
    }
  }

  private async sendBooked(
    requests: LaunchRequest[],
    gated: Gated,
    booked: () => void,
    spacing?: KeySpacing,
  ): Promise<Array<Settled<Launched>>> {
    const first = requests[0]!;
    const { batches } = this.deps.store;
    const id = randomUUID();
    // a try that is over (cancelled, timed out) joins no batch: its retry may be under way; nor
    // does one withdrawn (its budget ran out between the gate and here)
    const over = requests.map((r) => endedOrWithdrawn(r));
    const outcomes = await Promise.all(
      requests.map((r, i) =>
        over[i]
          ? Promise.resolve(undefined)
          : batches.mark(
              r.model,
              r.machineId,
              { batchId: id, tokenSeed: r.tokenSeed },
              r.replaces !== undefined ? { replaces: r.replaces } : {},
            ),
      ),
    );
    // marking may take a while on a busy table: a try over by now is left out too (its
    // marker names a batch without it, which its retry settles and replaces). Not one merely
    // withdrawn (`withdrawBy`): it is a member now, and waits for the batch's answer as one
    const late = requests.map((r) => isOver(r));
    const marked = outcomes.map((o, i) => o?.marked === true && !late[i]);
    const members = requests.filter((_, i) => marked[i]);
    const results: Array<Settled<Launched>> = outcomes.map((o, i) => {
      if (!o || late[i]) {
        return { ok: false, error: new TryEnded() };
      }
      if (!o.marked && o.claimedBy !== undefined) {
        return { ok: false, error: new HeldByAnotherBatch(o.claimedBy) };
      }
      return { ok: false, error: failure(FAILURE.machineGone, 'the machine is gone or dead') };
    });
    if (members.length === 0) {
      // a try marked and over by then names this batch in its marker, and no commit will write
      // it: written abandoned now, so the attempt's next try (the retry of a cancelled or timed
      // out try) finds it settled at once, not after HELD_BATCH_WAIT_MS
      if (outcomes.some((o, i) => o?.marked === true && late[i])) {
        await batches.settle(first.model, id).catch(() => undefined);
      }
      return results;
    }
    const plan = first.plan;
    const call: LaunchBatchCall = {
      region: plan.region,
      zone: first.zone,
      imageId: plan.imageId,
      instanceType: plan.instanceType,
      ...(plan.subnetId ? { subnetId: plan.subnetId } : {}),
      ...(plan.placementGroup ? { placementGroup: plan.placementGroup } : {}),
      ...(plan.placementGroup && first.partition !== undefined
        ? { partition: first.partition }
        : {}),
      rootDiskGiB: rootDiskGiB(plan.hardware.rootDisk),
      ...(plan.instanceProfile ? { instanceProfile: plan.instanceProfile } : {}),
      tags: launchTags({
        model: first.model,
        deployment: this.deps.deployment,
        batchId: id,
        ...(plan.modelUid ? { modelUid: plan.modelUid } : {}),
      }),
      clientToken: clientToken(`batch/${id}`),
    };
    const ids = members.map((m) => m.machineId);
    if (!(await batches.commit(first.model, { id, members: ids, call }))) {
      // a member's retry gave up on this batch before it went out: each launches afresh
      const again = new BatchAbandoned(id);
      return requests.map((_, i) => (marked[i] ? { ok: false, error: again } : results[i]!));
    }
    let instances: Instance[];
    try {
      // the batch is fixed now: its shared turn is booked just before its call (a local token
      // was taken at the gate already)
      const turn: Turn | undefined =
        gated === 'local' ? { how: 'local', at: Date.now() } : undefined;
      instances = await this.runPaced(
        plan.region,
        runInput(call, members.length),
        turn,
        gated === 'predicted' ? booked : undefined,
        // the wait after the commit ends before the first member's try does
        Math.min(...members.map((m) => m.liveUntil ?? Infinity)) - SEND_MARGIN_MS,
        spacing,
      );
    } catch (err) {
      launchFailed(err, members.length);
      const classified = classifyLaunchError(err, call.zone);
      if (isZoneFailure(classified))
        this.memory.remember(call.region, call.instanceType, call.zone);
      return requests.map((r, i) => (marked[i] ? { ok: false, error: classified } : results[i]!));
    }
    const byIndex = byLaunchIndex(instances);
    launchSent(members.length, Math.min(byIndex.size, members.length));
    if (byIndex.size < members.length) {
      this.memory.remember(call.region, call.instanceType, call.zone);
    }
    const size = members.length;
    return requests.map((r, i) => {
      if (!marked[i]) return results[i]!;
      const instance = byIndex.get(ids.indexOf(r.machineId));
      if (!instance?.InstanceId)
        return { ok: false, error: unserved(call.zone, size, byIndex.size) };
      return { ok: true, value: { instance, call, batch: { id, size } } };
    });
  }
}

/**
 * The try's own batch made no call for it: withdrawn or left out (TryEnded),
 * its batch abandoned before it went out (BatchAbandoned), or the machine
 * held by another batch of its attempt (HeldByAnotherBatch: that batch, not
 * this try's, may have launched it, and the attempt's next try finds it:
 * `launchHeld`). Not a failure of a batch that went out.
 */
export function leftOutOfItsBatch(err: unknown): boolean {
  return (
    err instanceof TryEnded || err instanceof BatchAbandoned || err instanceof HeldByAnotherBatch
  );
}

/** The try is over: its activity was cancelled, or its start-to-close deadline (nearly) passed. */
function isOver(r: LaunchRequest): boolean {
  return r.signal?.aborted === true || (r.liveUntil !== undefined && r.liveUntil <= Date.now());
}

/** The try is over, or gives its batch up before it is dispatched (`withdrawBy`). */
function endedOrWithdrawn(r: LaunchRequest): boolean {
  return isOver(r) || r.withdrawBy?.aborted === true;
}

/**
 * What withdraws a try from its batch while the batch gathers or waits at
 * the gate: its end or its `withdrawBy`, whichever aborts first.
 */
function endOf(r: LaunchRequest): AbortSignal | undefined {
  if (!r.withdrawBy) return r.signal;
  return r.signal ? AbortSignal.any([r.signal, r.withdrawBy]) : r.withdrawBy;
}

function isZoneFailure(err: unknown): boolean {
  return (err as { type?: unknown } | undefined)?.type === FAILURE.zoneUnavailable;
}

/** A member EC2 left out of a partial batch: a capacity failure of the zone, so it fails over. */
function unserved(zone: string, asked: number, launched?: number) {
  return failure(
    FAILURE.zoneUnavailable,
    `InsufficientInstanceCapacity: EC2 launched ${launched ?? 'fewer'} of ${asked} instances asked for in ${zone}`,
    { zone, code: 'InsufficientInstanceCapacity' },
  );
}
