import { ApplicationFailure } from '@temporalio/common';
import { FAILURE, notRetriedByPolicy } from '../../../temporal/failures';
import {
  LAUNCH_OPTIONS,
  LOCAL_LAUNCH_OPTIONS,
  LOCAL_PREPARE_OPTIONS,
} from '../../../workflows/proxies';

/**
 * A launch in a machine's first read answers as data the failures its
 * launch step's retry policy would not retry (activities/launch.ts
 * notRetried), by notRetriedByPolicy. That rule and the policies the launch
 * runs under must not drift apart: for each, every failure the policy gives
 * up at once is one notRetriedByPolicy names, and no other.
 */

const POLICIES = [
  ['the launch step (LAUNCH_OPTIONS)', LAUNCH_OPTIONS.retry],
  ['the launch step in the workflow task (LOCAL_LAUNCH_OPTIONS)', LOCAL_LAUNCH_OPTIONS.retry],
  ['the first read that launches (LOCAL_PREPARE_OPTIONS)', LOCAL_PREPARE_OPTIONS.retry],
] as const;

/** What the SDK does with an ApplicationFailure under `policy`: give up at once, or retry. */
function policyGivesUp(
  policy: { readonly nonRetryableErrorTypes?: readonly string[] },
  failure: ApplicationFailure,
): boolean {
  return (
    failure.nonRetryable ||
    (failure.type !== undefined &&
      failure.type !== null &&
      (policy.nonRetryableErrorTypes ?? []).includes(failure.type))
  );
}

/** Every type any of the policies lists or the workflow branches on, and one neither does. */
const TYPES = [
  ...new Set([
    ...Object.values(FAILURE),
    ...POLICIES.flatMap(([, policy]) => policy.nonRetryableErrorTypes),
    'Throttled',
  ]),
];
const FAILURES = TYPES.flatMap((type) => [
  ApplicationFailure.create({ type, message: `${type}, retryable` }),
  ApplicationFailure.create({ type, message: `${type}, marked non-retryable`, nonRetryable: true }),
]);

describe('what the first read answers as not retried, against the retry policies', () => {
  it.each(POLICIES)('%s gives up at once on just the failures it names', (_what, policy) => {
    const disagreements = FAILURES.filter(
      (f) => policyGivesUp(policy, f) !== notRetriedByPolicy(f),
    ).map((f) => f.message);
    expect(disagreements).toEqual([]);
  });

  it('names each type the workflow branches on, retryable or not', () => {
    for (const type of Object.values(FAILURE)) {
      expect(notRetriedByPolicy(ApplicationFailure.create({ type, message: type }))).toBe(true);
    }
  });

  it('leaves to the retries a failure of another type, a plain error, and an EC2 SDK error', () => {
    expect(
      notRetriedByPolicy(ApplicationFailure.create({ type: 'Throttled', message: 'slow down' })),
    ).toBe(false);
    expect(notRetriedByPolicy(new Error('socket hang up'))).toBe(false);
    const capacity = Object.assign(new Error('We currently do not have sufficient capacity'), {
      name: 'InsufficientInstanceCapacity',
    });
    expect(notRetriedByPolicy(capacity)).toBe(false);
  });

  it('names a failure marked non-retryable whatever its type', () => {
    expect(
      notRetriedByPolicy(
        ApplicationFailure.create({ type: 'Throttled', message: 'no', nonRetryable: true }),
      ),
    ).toBe(true);
    expect(
      notRetriedByPolicy(ApplicationFailure.create({ message: 'no', nonRetryable: true })),
    ).toBe(true);
  });
});
