import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../workflows/failures';

/**
 * How an EC2 error is handled. Zone-specific errors move the machine to its
 * next zone without spending an attempt (Karpenter's InsufficientCapacityError,
 * the inverse of Juju's ErrAvailabilityZoneIndependent); throttling is retried
 * in place with backoff; anything else spends an attempt.
 */
export const ZONE_UNAVAILABLE = FAILURE.zoneUnavailable;
export const START_FAILED = FAILURE.startFailed;

const ZONE_SPECIFIC_CODES = new Set([
  'InsufficientInstanceCapacity',
  'InsufficientHostCapacity',
  'InsufficientReservedInstanceCapacity',
  'InsufficientCapacity',
  'InsufficientFreeAddressesInSubnet',
  'InsufficientAddressCapacity',
]);

const THROTTLING_CODES = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'RequestThrottled',
]);

/** The EC2 error code of an SDK error (`InsufficientInstanceCapacity`), if it has one. */
export function ec2ErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { name?: unknown; Code?: unknown; code?: unknown };
  for (const v of [e.Code, e.code, e.name]) if (typeof v === 'string' && v !== 'Error') return v;
  return undefined;
}

/** Codes EC2 refuses a placement group's launch with when the group cannot take that type or zone. */
const PLACEMENT_REFUSAL_CODES = new Set([
  'Unsupported',
  'InvalidParameterCombination',
  'InvalidParameterValue',
]);

export function isZoneSpecific(code: string | undefined, message: string): boolean {
  if (!code) return false;
  if (ZONE_SPECIFIC_CODES.has(code)) return true;
  // a partition placement group that cannot take the instance type or zone: another zone may
  if (
    PLACEMENT_REFUSAL_CODES.has(code) &&
    /placement group/i.test(message) &&
    /instance type|availability zone/i.test(message) &&
    !/partition number/i.test(message)
  ) {
    return true;
  }
  // `Unsupported` is zone-specific only when it names an Availability Zone (e.g. the type is not offered there).
  return (
    (code === 'Unsupported' || code === 'InvalidParameterValue') &&
    /availability zone/i.test(message)
  );
}

export function isThrottling(code: string | undefined): boolean {
  return code !== undefined && THROTTLING_CODES.has(code);
}

/**
 * Maps an EC2 error from a launch to what the workflow branches on: an
 * ApplicationFailure of a known type (non-retryable, the workflow decides), or
 * the original error for throttling and transport faults, which the activity
 * retry policy repeats with backoff.
 */
export function classifyLaunchError(err: unknown, zone: string): unknown {
  const code = ec2ErrorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  if (isThrottling(code)) return err;
  if (isZoneSpecific(code, message)) {
    return ApplicationFailure.create({
      type: ZONE_UNAVAILABLE,
      message: `${code}: ${message}`,
      nonRetryable: true,
      details: [{ zone, code }],
    });
  }
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  // A 4xx is EC2 refusing this request (bad image, bad type, limits): spend an attempt.
  // A 5xx that is not a capacity error is EC2 having a moment: retry in place.
  if (code && status !== undefined && status >= 400 && status < 500) {
    return ApplicationFailure.create({
      type: START_FAILED,
      message: `${code}: ${message}`,
      nonRetryable: true,
      details: [{ zone, code }],
    });
  }
  return err;
}
