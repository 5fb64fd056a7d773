import { NON_RETRYABLE_FAILURES } from '../../../temporal/failures';
import { endedByLastTry, LOCAL_RECORDING_OPTIONS } from '../../../workflows/proxies';

describe('endedByLastTry (workflows/proxies.ts)', () => {
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
    expect(retry).toEqual({
      initialInterval: 1_000,
      backoffCoefficient: 2,
      maximumInterval: 30_000,
      maximumAttempts: 8,
      nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
    });
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
});
