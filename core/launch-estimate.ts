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

/** When the `n`-th token (1-based) of a full bucket is available, in seconds from now. */
export function tokenAvailableAt(bucket: Bucket, n: number): number {
  if (n <= bucket.burst) return 0;
  if (bucket.perSecond <= 0) return Number.POSITIVE_INFINITY;
  return (n - bucket.burst) / bucket.perSecond;
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
 * goes out in calls of at most `maxPerCall`). Both buckets are taken as full
 * (what else is launching at the same time is not known here).
 */
export function estimateLaunch(batches: readonly number[], budget: LaunchBudget): LaunchEstimate {
  const machines = batches.reduce((a, b) => a + b, 0);
  if (machines === 0) return { seconds: 0, calls: 0, notes: [] };
  const calls = batches.reduce((a, n) => a + Math.ceil(n / budget.maxPerCall), 0);
  const byRequests = tokenAvailableAt(budget.requests, calls);
  const byInstances = tokenAvailableAt(budget.instances, machines);
  const notes: string[] = [];
  if (machines > budget.instances.burst) {
    notes.push(
      `${count(machines)} machines over the next ${count(Math.ceil(byInstances))} s: ` +
        `${count(budget.instances.burst)} at once, then ${rate(budget.instances.perSecond)}`,
    );
  }
  if (calls > budget.requests.burst) {
    notes.push(
      `${count(calls)} RunInstances calls over the next ${count(Math.ceil(byRequests))} s: ` +
        `${count(budget.requests.burst)} at once, then ${rate(budget.requests.perSecond)}`,
    );
  }
  const seconds = Math.ceil(
    budget.batchWaitSeconds + Math.max(byRequests, byInstances) + budget.roundTripSeconds,
  );
  return { seconds, calls, notes };
}
