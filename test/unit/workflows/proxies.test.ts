import { msToNumber } from '@temporalio/common/lib/time';
import { ActivityCancellationType } from '@temporalio/workflow';
import { LAUNCH_TRY_MS } from '../../../temporal/launch-try';
import { NON_RETRYABLE_FAILURES } from '../../../temporal/failures';
import {
  endedByLastTry,
  lastTryWithin,
  LAUNCH_OPTIONS,
  LOCAL_LAUNCH_OPTIONS,
  LOCAL_PLANNING_OPTIONS,
  LOCAL_PREPARE_OPTIONS,
  LOCAL_RECORDING_OPTIONS,
  LOCAL_RECORDS_OPTIONS,
  STEP_DEADLINE,
} from '../../../workflows/proxies';

/** RETRY (workflows/proxies.ts): waits 1, 2, 4, 8, 16 s, then 30 s each. */
const RETRY_POLICY = {
  initialInterval: 1_000,
  backoffCoefficient: 2,
  maximumInterval: 30_000,
  nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
};
const RETRY_MS = {
  initialIntervalMs: 1_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 30_000,
  nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
};
const STEP_DEADLINE_MS = 600_000;

describe('endedByLastTry (workflows/proxies.ts)', () => {
  it("the local steps' deadline is the steps' STEP_DEADLINE", () => {
    expect(msToNumber(STEP_DEADLINE)).toBe(STEP_DEADLINE_MS);
  });

  it('spans every wait the core computes between tries, plus the tries', () => {
    // waits 1, 2, 4, 8, 16, then 30 (the ceiling) twice: 91 s
    expect(
      endedByLastTry({
        tryMs: 30_000,
        initialIntervalMs: 1_000,
        backoffCoefficient: 2,
        maximumIntervalMs: 30_000,
        maximumAttempts: 8,
        nonRetryableErrorTypes: [],
      }).startToCloseTimeout,
    ).toBe(121_000);
    // one try: no wait
    expect(
      endedByLastTry({
        tryMs: 5_000,
        initialIntervalMs: 1_000,
        backoffCoefficient: 2,
        maximumIntervalMs: 30_000,
        maximumAttempts: 1,
        nonRetryableErrorTypes: [],
      }).startToCloseTimeout,
    ).toBe(5_000);
  });

  it('the record step in the workflow task: 8 tries of RETRY, ended by the last', () => {
    const { retry } = LOCAL_RECORDING_OPTIONS;
    expect(retry).toEqual({ ...RETRY_POLICY, maximumAttempts: 8 });
    expect(LOCAL_RECORDING_OPTIONS).toEqual(
      endedByLastTry({
        tryMs: 30_000,
        initialIntervalMs: retry.initialInterval,
        backoffCoefficient: retry.backoffCoefficient,
        maximumIntervalMs: retry.maximumInterval,
        maximumAttempts: retry.maximumAttempts,
        nonRetryableErrorTypes: retry.nonRetryableErrorTypes,
      }),
    );
  });

  it("the launch step in the workflow task: the launch step's 8 tries, 91 s of waits and a launch try's 120 s (211 s)", () => {
    expect(LOCAL_LAUNCH_OPTIONS.retry).toEqual(LAUNCH_OPTIONS.retry);
    expect(LAUNCH_TRY_MS).toBe(120_000);
    // a launch try's time is the launch step's (as an activity) start-to-close
    expect(msToNumber(LAUNCH_OPTIONS.startToCloseTimeout)).toBe(LAUNCH_TRY_MS);
    expect(LOCAL_LAUNCH_OPTIONS).toEqual(
      endedByLastTry({ ...RETRY_MS, tryMs: LAUNCH_TRY_MS, maximumAttempts: 8 }),
    );
    expect(LOCAL_LAUNCH_OPTIONS.startToCloseTimeout).toBe(211_000);
    expect(LOCAL_LAUNCH_OPTIONS.scheduleToCloseTimeout).toBe(211_000);
  });
});

describe('lastTryWithin: the local steps that had STEP_DEADLINE keep it, ended by the last try', () => {
  it('fits as many tries as leave the least try time, and gives the tries the rest', () => {
    // 30 s: waits 1+2+4+8+16 = 31, then 17 × 30 = 541 s in 23 tries; one more would leave 29 s
    expect(lastTryWithin({ ...RETRY_MS, deadlineMs: STEP_DEADLINE_MS, minTryMs: 30_000 })).toEqual(
      endedByLastTry({ ...RETRY_MS, tryMs: 59_000, maximumAttempts: 23 }),
    );
    // 2 minutes: 31 + 14 × 30 = 451 s in 20 tries, 149 s for the tries
    expect(
      lastTryWithin({ ...RETRY_MS, deadlineMs: STEP_DEADLINE_MS, minTryMs: 120_000 }),
    ).toMatchObject({
      startToCloseTimeout: STEP_DEADLINE_MS,
      scheduleToCloseTimeout: STEP_DEADLINE_MS,
      retry: { maximumAttempts: 20 },
    });
    // a deadline shorter than the least try time: one try, given the deadline
    expect(
      lastTryWithin({ ...RETRY_MS, deadlineMs: 10_000, minTryMs: 30_000 }).retry.maximumAttempts,
    ).toBe(1);
    // no wait between tries cannot fill a deadline: one try (no endless loop)
    expect(
      lastTryWithin({
        ...RETRY_MS,
        initialIntervalMs: 0,
        deadlineMs: 10_000,
        minTryMs: 1_000,
      }).retry.maximumAttempts,
    ).toBe(1);
  });

  it('DynamoDB reads and writes: 23 tries of RETRY in 10 minutes (541 s of waits, 59 s for the tries)', () => {
    expect(LOCAL_RECORDS_OPTIONS).toEqual(
      lastTryWithin({ ...RETRY_MS, deadlineMs: STEP_DEADLINE_MS, minTryMs: 30_000 }),
    );
    expect(LOCAL_RECORDS_OPTIONS.retry).toEqual({ ...RETRY_POLICY, maximumAttempts: 23 });
  });

  it('planning and the first read: 20 tries of RETRY in 10 minutes (451 s of waits, 149 s for the tries), their cancellation kept', () => {
    const budget = lastTryWithin({
      ...RETRY_MS,
      deadlineMs: STEP_DEADLINE_MS,
      minTryMs: LAUNCH_TRY_MS,
    });
    expect(LOCAL_PLANNING_OPTIONS).toEqual({
      ...budget,
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    });
    expect(LOCAL_PREPARE_OPTIONS).toEqual({
      ...budget,
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    expect(LOCAL_PREPARE_OPTIONS.retry).toEqual({ ...RETRY_POLICY, maximumAttempts: 20 });
  });
});
