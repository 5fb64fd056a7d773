import { ApplicationFailure } from '@temporalio/common';

/**
 * ApplicationFailure types the activities raise and the workflows branch on.
 * Each is non-retryable: the workflow decides what happens next (fail over,
 * spend an attempt, record an error), never the activity retry policy.
 */
export const FAILURE = {
  /** A zone-specific launch error: try the next zone without spending an attempt. */
  zoneUnavailable: 'ZoneUnavailable',
  /** A zone-independent launch error: spend an attempt. */
  startFailed: 'StartInstanceFailed',
  /** No zone is left to try (none healthy, allowed, offering the type, or not yet failed). */
  noSuitableZone: 'NoSuitableZone',
  /** The machine cannot be planned (bad constraints, no instance type, no image): error at once. */
  planFailed: 'LaunchPlanFailed',
  /** The machine's record is gone: nothing left to provision or tear down. */
  machineGone: 'MachineGone',
  /**
   * EC2 refused in a way no retry can fix (permissions, credentials, opt-in,
   * a missing image, an endpoint that does not exist): the machine goes to
   * `error` with EC2's code, or teardown says what blocks it.
   */
  ec2Refused: 'Ec2Refused',
  /** A container cannot be created at all (no image for its base, no SSM client): error at once. */
  containerFailed: 'ContainerFailed',
} as const;

export type FailureType = (typeof FAILURE)[keyof typeof FAILURE];

export const NON_RETRYABLE_FAILURES: string[] = Object.values(FAILURE);

/**
 * Whether the activity retry policy (workflows/proxies.ts RETRY, whose
 * `nonRetryableErrorTypes` is NON_RETRYABLE_FAILURES) gives `err` up at once
 * instead of retrying it, as the SDK decides for an ApplicationFailure:
 * marked non-retryable, or of a type the policy lists. The one place this
 * rule is written for code that must answer what the policy would do (a
 * launch in the first read answers such a failure as data).
 */
export function notRetriedByPolicy(err: unknown): boolean {
  if (!(err instanceof ApplicationFailure)) return false;
  return (
    err.nonRetryable || (typeof err.type === 'string' && NON_RETRYABLE_FAILURES.includes(err.type))
  );
}
