import { z } from 'zod';
import { actionOfKey, isActionKey, keyedRecord, parseAdminBody } from './admin-body';

/**
 * EC2's request rate limits as token buckets (AWS: "request token bucket" per
 * API action, e.g. RunInstances burst 5, refill 2/s). Off until
 * `PUT /_admin/limits` sets some.
 */

export interface BucketLimit {
  /** Bucket size: calls allowed at once from a full bucket. */
  readonly burst: number;
  /** Tokens added back per second (0: the bucket never refills). */
  readonly refillPerSecond: number;
}

/** Lower-camel EC2 action name (`runInstances`) → its bucket. */
export type LimitSet = Readonly<Record<string, BucketLimit>>;

/** Milliseconds from any fixed origin; injected so tests control time. */
export type Clock = () => number;

export const systemClock: Clock = () => performance.now();

/**
 * The key of EC2's resource token bucket for RunInstances, counted per
 * instance launched rather than per call.
 */
export const LAUNCHED_INSTANCES = 'launchedInstances';

export function actionFromLimitKey(key: string): string {
  return actionOfKey(key);
}

/** The bucket an issue is about: `[bucket]` for the bucket itself, `[bucket, field]` for a field. */
function bucketOf(iss: { path?: PropertyKey[] | undefined }, depth: 1 | 2): string {
  return String(iss.path?.at(-depth) ?? '');
}

const bucketLimit = z
  .strictObject(
    { burst: z.unknown().optional(), refillPerSecond: z.unknown().optional() },
    {
      error: (iss) =>
        iss.code === 'unrecognized_keys'
          ? `unknown field "${bucketOf(iss, 1)}.${String(iss.keys[0])}" (expected "burst", "refillPerSecond")`
          : `"${bucketOf(iss, 1)}" must be an object { "burst", "refillPerSecond" }`,
    },
  )
  .pipe(
    z.object({
      burst: z
        .number({ error: (iss) => `"${bucketOf(iss, 2)}.burst" must be an integer of at least 1` })
        .refine((n) => Number.isInteger(n) && n >= 1, {
          error: (iss) => `"${bucketOf(iss, 2)}.burst" must be an integer of at least 1`,
        }),
      refillPerSecond: z
        .number({
          error: (iss) => `"${bucketOf(iss, 2)}.refillPerSecond" must be a number of at least 0`,
        })
        .min(0, {
          error: (iss) => `"${bucketOf(iss, 2)}.refillPerSecond" must be a number of at least 0`,
        }),
    }),
  );

/**
 * Validates a `PUT /_admin/limits` body. `isKnownAction` says whether an
 * upper-camel name is a real EC2 action, so a typo is refused rather than
 * silently limiting nothing.
 */
export function parseLimitSet(body: unknown, isKnownAction: (action: string) => boolean): LimitSet {
  const schema = keyedRecord(
    z.string().refine((key) => key === LAUNCHED_INSTANCES || isActionKey(key, isKnownAction)),
    bucketLimit,
    {
      badKey: (key) =>
        `unknown field "${key}" (expected lower-camel EC2 action names such as "runInstances")`,
      notObject: 'the body must be a JSON object',
    },
  );
  return parseAdminBody(schema, body);
}

/**
 * EC2's side of a token bucket: a call that finds it empty is refused
 * (RequestLimitExceeded), never queued, and the launched-instances bucket
 * takes and gives back several tokens at once. ec2/token-bucket.ts's
 * TokenBucket is the caller's side, which waits its turn instead; the two
 * share the refill arithmetic only, so each keeps its own class and name.
 */
export class ThrottleBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly limit: BucketLimit,
    private readonly clock: Clock,
  ) {
    this.tokens = limit.burst;
    this.last = clock();
  }

  /** Takes one token; false when the bucket is empty. */
  take(): boolean {
    return this.takeUpTo(1, 1) === 1;
  }

  /** Takes between `min` and `max` whole tokens, as many as there are; 0 (nothing taken) when fewer than `min`. */
  takeUpTo(min: number, max: number): number {
    this.refill();
    const whole = Math.floor(this.tokens);
    if (whole < min || whole < 1) return 0;
    const taken = Math.min(whole, max);
    this.tokens -= taken;
    return taken;
  }

  /** Gives back tokens taken for work that did not happen. */
  giveBack(count: number): void {
    this.refill();
    this.tokens = Math.min(this.limit.burst, this.tokens + count);
  }

  private refill(): void {
    const now = this.clock();
    const elapsedSeconds = Math.max(0, now - this.last) / 1000;
    this.last = now;
    this.tokens = Math.min(
      this.limit.burst,
      this.tokens + elapsedSeconds * this.limit.refillPerSecond,
    );
  }
}

/**
 * The limits in force. As in EC2, where throttling is per account and Region,
 * each Region gets its own bucket per limited action, created full on first
 * use; setting limits again refills them all.
 */
export class RequestLimiter {
  private limits: LimitSet = {};
  private byAction = new Map<string, BucketLimit>();
  private buckets = new Map<string, ThrottleBucket>();

  constructor(private readonly clock: Clock = systemClock) {}

  set(limits: LimitSet): void {
    this.limits = limits;
    this.byAction = new Map(
      Object.entries(limits)
        .filter(([key]) => key !== LAUNCHED_INSTANCES)
        .map(([key, limit]) => [actionFromLimitKey(key), limit]),
    );
    this.buckets = new Map();
  }

  clear(): void {
    this.set({});
  }

  current(): LimitSet {
    return this.limits;
  }

  /** True when a call to `action` (upper-camel, as in `Action=`) in `region` may go ahead. */
  allow(action: string, region: string): boolean {
    const limit = this.byAction.get(action);
    return limit ? this.bucket(region, action, limit).take() : true;
  }

  /**
   * How many instances a RunInstances asking for `min`..`max` may launch in
   * `region` (the resource bucket's tokens, taken now): `max` when that bucket
   * is off, 0 when fewer than `min` are left (RequestLimitExceeded).
   */
  launchable(region: string, min: number, max: number): number {
    const limit = this.limits[LAUNCHED_INSTANCES];
    if (!limit) return max;
    return this.bucket(region, LAUNCHED_INSTANCES, limit).takeUpTo(min, max);
  }

  /** Returns resource tokens for instances that were not launched after all. */
  unlaunched(region: string, count: number): void {
    const limit = this.limits[LAUNCHED_INSTANCES];
    if (limit && count > 0) this.bucket(region, LAUNCHED_INSTANCES, limit).giveBack(count);
  }

  private bucket(region: string, name: string, limit: BucketLimit): ThrottleBucket {
    const key = JSON.stringify([region, name]);
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = new ThrottleBucket(limit, this.clock);
      this.buckets.set(key, bucket);
    }
    return bucket;
  }
}
