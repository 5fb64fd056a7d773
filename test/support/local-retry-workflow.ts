import { proxyLocalActivities } from '@temporalio/workflow';
import { endedByLastTry, failureMessage } from '../../workflows/proxies';

/**
 * One local activity retried once, 2 s apart, its tries 4 s at most: the
 * record step's policy scaled down (test/integration/local-retry.test.ts).
 * `bounded`: the options endedByLastTry makes, with BOUNDED_TRY_MS for the
 * tries (try 1's stray timer then fires 5 s after try 2's end, not 1 s: a
 * busy machine); otherwise the plain ones the record step had (4 s a try, so
 * 4 s start-to-close).
 */
export const SCALED = {
  tryMs: 4_000,
  initialIntervalMs: 2_000,
  backoffCoefficient: 1,
  maximumIntervalMs: 2_000,
  maximumAttempts: 2,
  nonRetryableErrorTypes: [],
} as const;

/** The tries' span the bounded case gives endedByLastTry: 10 s start-to-close. */
export const BOUNDED_TRY_MS = 8_000;

/**
 * The launch step in the workflow task (workflows/proxies.ts
 * LOCAL_LAUNCH_OPTIONS) scaled down: its retry policy's waits (1 s, then 2 s),
 * 3 tries instead of 8, 4 s a try instead of a launch try's 120 s.
 * `bounded`: endedByLastTry with LAUNCH_BOUNDED_TRY_MS for the tries (13 s
 * start-to-close and schedule-to-close, as LOCAL_LAUNCH_OPTIONS is 211 s);
 * otherwise what the launch step had: a try's time as its start-to-close,
 * no schedule-to-close.
 */
export const SCALED_LAUNCH = {
  tryMs: 4_000,
  initialIntervalMs: 1_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 30_000,
  maximumAttempts: 3,
  nonRetryableErrorTypes: [],
} as const;

/** The tries' span the bounded launch gives endedByLastTry: 3 s of waits + 10 s = 13 s. */
export const LAUNCH_BOUNDED_TRY_MS = 10_000;

/** How long each try of the scaled launch waits (for its batch, in line) before it is refused. */
export const LAUNCH_TRY_WAITS_MS = [2_500, 0, 3_000] as const;

export interface RefusingActivities {
  /** Refuses every try; try 2 refuses only after `secondTryMs`. */
  refuseTwice(input: { secondTryMs: number }): Promise<void>;
  /**
   * Refuses every try, each after waiting as LAUNCH_TRY_WAITS_MS says (a
   * launch waiting for its batch and EC2's bucket, then throttled); a try
   * cancelled while it waits is refused at once and says so.
   */
  refuseLikeALaunch(): Promise<void>;
}

export async function localRetryWorkflow(input: {
  bounded: boolean;
  secondTryMs: number;
}): Promise<string> {
  const bounded = endedByLastTry({ ...SCALED, tryMs: BOUNDED_TRY_MS });
  const { refuseTwice } = proxyLocalActivities<RefusingActivities>(
    input.bounded ? bounded : { startToCloseTimeout: SCALED.tryMs, retry: bounded.retry },
  );
  try {
    await refuseTwice({ secondTryMs: input.secondTryMs });
    return 'answered';
  } catch (err) {
    return failureMessage(err);
  }
}

export async function localLaunchRetryWorkflow(input: { bounded: boolean }): Promise<string> {
  const bounded = endedByLastTry({ ...SCALED_LAUNCH, tryMs: LAUNCH_BOUNDED_TRY_MS });
  const { refuseLikeALaunch } = proxyLocalActivities<RefusingActivities>(
    input.bounded ? bounded : { startToCloseTimeout: SCALED_LAUNCH.tryMs, retry: bounded.retry },
  );
  try {
    await refuseLikeALaunch();
    return 'answered';
  } catch (err) {
    return failureMessage(err);
  }
}
