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

export interface RefusingActivities {
  /** Refuses every try; try 2 refuses only after `secondTryMs`. */
  refuseTwice(input: { secondTryMs: number }): Promise<void>;
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
