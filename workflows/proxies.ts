import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_FAILURES } from '../temporal/failures';

// Throttling and transport faults: back off and try again, never give up a machine for them.
// The failure types the workflow branches on are non-retryable: it decides. Code that must
// know what this policy gives up on asks temporal/failures.ts notRetriedByPolicy (a unit test
// holds the two together).
const RETRY_INITIAL_MS = 1_000;
const RETRY_MAXIMUM_MS = 30_000;
const RETRY = {
  initialInterval: RETRY_INITIAL_MS,
  backoffCoefficient: 2,
  maximumInterval: RETRY_MAXIMUM_MS,
  nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
} as const;

/**
 * How long a step that keeps failing for transient reasons (throttling,
 * EC2's 503s, a DynamoDB or network fault) is retried before the workflow
 * takes it as failed: long enough to ride out an outage of several minutes
 * (at the retry policy's 30 s ceiling, 20-odd tries), short enough that a
 * fault no one classified as permanent still ends, in a status that says so.
 * Errors known to be permanent never wait for it (activities/ec2-errors.ts).
 */
export const STEP_DEADLINE = '10 minutes';

/** DynamoDB reads and writes: milliseconds each; a zone claim may retry a few lost races inside. */
export const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: STEP_DEADLINE,
  retry: RETRY,
});

/**
 * Recording a launched instance: bounded, because an instance that cannot be
 * recorded must be terminated rather than left running unowned.
 */
export const recording = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { ...RETRY, maximumAttempts: 8 },
});

/**
 * Single EC2 calls (RunInstances answers in seconds). Short, so a worker that
 * dies mid-call is noticed soon and the retried call adopts what was launched.
 */
export const ec2 = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  scheduleToCloseTimeout: STEP_DEADLINE,
  retry: RETRY,
});

/**
 * Launches: a launch waits for its batch (up to PROVISIONER_LAUNCH_BATCH_MAX),
 * then for EC2's rate limits and the RunInstances answer. Bounded: after the
 * last attempt the workflow spends a provisioning attempt and its next
 * launch first looks for what this one may have launched. The heartbeat
 * timeout is 60 s, not 15: a launch queued behind the RunInstances bucket on
 * a busy worker was timed out at 15 s while still waiting, and retried
 * (activities/launch.ts LAUNCH_HEARTBEAT_EVERY_MS has the numbers); a dead
 * worker's launches are retried within a minute.
 */
export const LAUNCH_OPTIONS = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '60 seconds',
  retry: { ...RETRY, maximumAttempts: 8 },
} as const;
export const launching = proxyActivities<Activities>(LAUNCH_OPTIONS);
/**
 * The same launch as a local activity (patches.ts LAUNCH_IN_TASK): run by
 * the worker within the first workflow task, after the first read's claim.
 * Same attempts. A local activity cannot heartbeat: a dead worker's launch
 * is taken up when its workflow task times out
 * (MACHINE_WORKFLOW_TASK_TIMEOUT, 20 s, within the heartbeat timeout
 * above), and run again there with the same token seed (a zone claim
 * records the run and attempt that made it, and a step of that run run again
 * for the same attempt keeps the zone: activities/records.ts
 * `zoneHeldByThisRun`).
 *
 * Ended by its last try (endedByLastTry): RETRY's waits for 8 tries (91 s)
 * and a launch try's time (LAUNCH_TRY_MS, 120 s) for the tries together:
 * 211 s start-to-close and schedule-to-close. With 2 minutes a try, as it
 * had, a try that ended early left a timer that fired 2 minutes after it
 * began, and a later try running then (a launch waits for its batch and
 * EC2's bucket, seconds to tens of seconds) was cancelled in flight and
 * retried, or on the last try the step ended "Activity timed out". A hung
 * RunInstances now ends its try, and the step, 211 s after the step began
 * (was 120 s a try, up to 8 tries); a try that has not gone out by 7/8 of a
 * launch try's time leaves its batch as before (activities/launch.ts
 * thisTry). A literal, as LOCAL_RECORDING_OPTIONS.
 */
export const LOCAL_LAUNCH_OPTIONS = {
  startToCloseTimeout: 211_000,
  scheduleToCloseTimeout: 211_000,
  retry: { ...RETRY, maximumAttempts: 8 },
} as const;
export const localLaunching = proxyLocalActivities<Activities>(LOCAL_LAUNCH_OPTIONS);

/**
 * Listings that may be slow where EC2 holds many instances (the emulator
 * more than EC2): what teardown asks before and after terminating.
 */
export const describing = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: STEP_DEADLINE,
  retry: RETRY,
});

/**
 * Teardown's EC2 steps (issue 30): each machine's request waits for its
 * batch (other machines' terminations, one tag search per model, one
 * describe per batch of polls) and for the region's bucket before it goes
 * out. The activity heartbeats while it waits, so a long queue is not taken
 * for a hung call and retried while the first try is still in line, and a
 * worker that dies is noticed within the heartbeat timeout.
 */
export const tearing = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  scheduleToCloseTimeout: STEP_DEADLINE,
  retry: RETRY,
});

/**
 * A Dead machine's whole teardown in one activity (ONE_STEP_TEARDOWN), as
 * `tearing` waits and heartbeats; a few tries only, since the workflow then
 * goes on step by step (each step retried until done, saying what blocks it).
 */
export const tearingAtOnce = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { ...RETRY, maximumAttempts: 3 },
});

/**
 * Planning may page through a region's whole instance-type catalogue on a
 * cold cache. A destroy cancels it without waiting for the call under way
 * to notice (TRY_CANCEL): nothing it does needs undoing.
 */
export const planning = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  cancellationType: ActivityCancellationType.TRY_CANCEL,
  scheduleToCloseTimeout: STEP_DEADLINE,
  retry: RETRY,
});

/** The model sweep: a few EC2, DynamoDB and Temporal calls; the next scheduled run covers a failure. */
export const sweeping = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { ...RETRY, maximumAttempts: 3 },
});

/** The ApplicationFailure type behind an activity failure, if any. */
export function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/** The message of the failure behind an activity failure (the activity's own words). */
export function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof Error) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** Bulk workflow starts: bounded, since the model's sweep starts whatever is still missing. */
export const starting = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { ...RETRY, maximumAttempts: 5 },
});

/**
 * The same DynamoDB reads and writes and planning, as local activities: run
 * by the worker within the workflow task that asks for them, so a machine's
 * provisioning takes a few workflow tasks instead of one per step (each
 * workflow task is a round trip through Temporal's task queue).
 *
 * Each ends by its last try (endedByLastTry, lastTryWithin): the step's 10
 * minutes (STEP_DEADLINE) as before, in as many tries as RETRY's waits leave
 * a try's time beside. The reads and writes: 23 tries (541 s of waits, 59 s
 * for the tries together; they had 30 s a try); planning and the first read:
 * 20 tries (451 s of waits, 149 s for the tries; they had 2 minutes a try).
 * With a try's start-to-close, as they had, a try left a timer that could
 * end a later try (one more try), and the step out of its 10 minutes said
 * "Activity timed out" (a local activity's timeout carries no last failure)
 * where it now says its last try's failure. Literals, as
 * LOCAL_RECORDING_OPTIONS (test/unit/workflows/proxies.test.ts holds them to
 * lastTryWithin).
 */
export const LOCAL_RECORDS_OPTIONS = {
  startToCloseTimeout: 600_000,
  scheduleToCloseTimeout: 600_000,
  retry: { ...RETRY, maximumAttempts: 23 },
} as const;
export const localRecords = proxyLocalActivities<Activities>(LOCAL_RECORDS_OPTIONS);
/**
 * A local activity's options under which its retries end with its last
 * try's own failure, never with "Activity timed out" while no try ran long.
 *
 * The SDK's core (1.24, sdk-core `local_activities.rs` TimeoutBag) starts a
 * start-to-close timer for each try of a local activity and, when it starts
 * the next try's, drops the earlier timer's handle without stopping it: each
 * try's timer still fires its start-to-close after that try began, and if a
 * later try of the same activity is running then, that try is ended as timed
 * out (on the last attempt, the step's end). With a 30 s start-to-close and
 * 30 s between the last tries, try k's timer fires a few milliseconds before
 * try k+1 starts; a worker whose threads were not scheduled across those
 * milliseconds (a loaded machine) sees both at once, and the core's merged
 * queue takes the new try first half the time: failure-semantics' record
 * step then ended "Activity timed out" instead of with its refusal.
 *
 * So the start-to-close is the whole retry span (every wait between tries,
 * as the core computes them) plus `tryMs`: every timer fires after the last
 * try has ended as long as the tries together (with any wait for a local
 * activity slot) run less than `tryMs`. The schedule-to-close is the same
 * span, so a try that hangs ends the step at that bound (a timeout then is
 * the truth), not once per retry. An activity that names its own next retry
 * delay is outside this bound, and so are timers left by an earlier run of
 * the same step (a workflow task lost and run again).
 */
export function endedByLastTry(p: {
  /** What all the tries together may run (each is milliseconds when it works or is refused). */
  tryMs: number;
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  maximumAttempts: number;
  nonRetryableErrorTypes: readonly string[];
}) {
  let waits = 0;
  for (let attempt = 1; attempt < p.maximumAttempts; attempt++) {
    waits += Math.min(
      p.initialIntervalMs * p.backoffCoefficient ** (attempt - 1),
      p.maximumIntervalMs,
    );
  }
  return {
    startToCloseTimeout: waits + p.tryMs,
    // the same bound for the whole step: the core keeps one such timer a step (no stray), so a
    // try that hangs ends the step then, not after every retry's own start-to-close
    scheduleToCloseTimeout: waits + p.tryMs,
    retry: {
      initialInterval: p.initialIntervalMs,
      backoffCoefficient: p.backoffCoefficient,
      maximumInterval: p.maximumIntervalMs,
      maximumAttempts: p.maximumAttempts,
      nonRetryableErrorTypes: [...p.nonRetryableErrorTypes],
    },
  };
}

/**
 * endedByLastTry within a step's deadline: as many tries as the retry
 * policy's waits leave at least `minTryMs` beside, and the rest of the
 * deadline to the tries together. The local steps that had STEP_DEADLINE
 * keep it this way (LOCAL_RECORDS_OPTIONS).
 */
export function lastTryWithin(p: {
  deadlineMs: number;
  /** The least the tries together are given (what one try had). */
  minTryMs: number;
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  nonRetryableErrorTypes: readonly string[];
}) {
  let attempts = 1;
  let waits = 0;
  for (;;) {
    const next = Math.min(
      p.initialIntervalMs * p.backoffCoefficient ** (attempts - 1),
      p.maximumIntervalMs,
    );
    if (next <= 0 || waits + next + p.minTryMs > p.deadlineMs) break;
    waits += next;
    attempts += 1;
  }
  return endedByLastTry({
    tryMs: p.deadlineMs - waits,
    initialIntervalMs: p.initialIntervalMs,
    backoffCoefficient: p.backoffCoefficient,
    maximumIntervalMs: p.maximumIntervalMs,
    maximumAttempts: attempts,
    nonRetryableErrorTypes: p.nonRetryableErrorTypes,
  });
}

/**
 * Recording a launched instance in the workflow task: RETRY's waits, 8 tries
 * (91 s of waits), 30 s for the tries themselves: 121 s in all (a hung
 * write ends the step then; it was 30 s a try, 8 tries), what
 * endedByLastTry gives (a literal, as the preloaded bundle keeps no
 * module-level state: test/unit/workflows/proxies.test.ts holds the two
 * together). endedByLastTry says why it is not 30 s a try.
 */
export const LOCAL_RECORDING_OPTIONS = {
  startToCloseTimeout: 121_000,
  scheduleToCloseTimeout: 121_000,
  retry: { ...RETRY, maximumAttempts: 8 },
} as const;
export const localRecording = proxyLocalActivities<Activities>(LOCAL_RECORDING_OPTIONS);
/** Planning in the workflow task: its budget is LOCAL_RECORDS_OPTIONS's (20 tries in 10 minutes). */
export const LOCAL_PLANNING_OPTIONS = {
  startToCloseTimeout: 600_000,
  cancellationType: ActivityCancellationType.TRY_CANCEL,
  scheduleToCloseTimeout: 600_000,
  retry: { ...RETRY, maximumAttempts: 20 },
} as const;
export const localPlanning = proxyLocalActivities<Activities>(LOCAL_PLANNING_OPTIONS);
/**
 * A `machine` run's first read, which plans, claims and launches
 * (patches.ts LAUNCH_IN_READ): planning's budget (LOCAL_PLANNING_OPTIONS: 20
 * tries in 10 minutes, 149 s for the tries together, more than a launch
 * try's 120 s; a hung RunInstances ends the step at 10 minutes, after which
 * the pass plans, claims and launches on its own; a destroy waits for it up
 * to then too), the read's retries (the
 * step never fails once it launched: a launch's failure is in its answer,
 * or left to a launch step of its own). A destroy
 * cancels it and waits for its answer (WAIT_CANCELLATION_COMPLETED): the step
 * answers the cancellation at once while it plans or claims, but a launch
 * under way is not given up, and its instance is in the answer the workflow
 * waits for (workflows/machine.ts loadPrepared). Replaying a history recorded
 * with TRY_CANCEL (localPlanning) is the same: on the replay path the SDK's
 * core handles both kinds of cancellation alike (the marker decides).
 */
export const LOCAL_PREPARE_OPTIONS = {
  startToCloseTimeout: 600_000,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  scheduleToCloseTimeout: 600_000,
  retry: { ...RETRY, maximumAttempts: 20 },
} as const;
export const localPreparing = proxyLocalActivities<Activities>(LOCAL_PREPARE_OPTIONS);
