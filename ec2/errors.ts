import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../temporal/failures';

/**
 * How an EC2 error is handled. Zone-specific errors move the machine to its
 * next zone without spending an attempt (Karpenter's InsufficientCapacityError,
 * the inverse of Juju's ErrAvailabilityZoneIndependent); throttling is retried
 * in place with backoff; anything else spends an attempt.
 */
export const ZONE_UNAVAILABLE = FAILURE.zoneUnavailable;
export const START_FAILED = FAILURE.startFailed;
export const EC2_REFUSED = FAILURE.ec2Refused;

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
 * EC2 errors no retry can fix: credentials, permissions, an account not
 * opted in, an image that does not exist, a request EC2 calls malformed.
 * Only a person can change these, so the machine goes to `error` at once
 * (or teardown says what blocks it) instead of an activity retrying.
 */
const PERMANENT_CODES = new Set([
  'UnauthorizedOperation',
  'AuthFailure',
  'OptInRequired',
  'Blocked',
  'SignatureDoesNotMatch',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'AccessDenied',
  'AccessDeniedException',
  'InvalidParameterValue',
  'InvalidParameterCombination',
  'InvalidParameter',
  'MissingParameter',
  'UnknownParameter',
  'InvalidAction',
  'OperationNotPermitted',
  'UnsupportedOperation',
]);

/** Code families that name a resource that is not there or not valid (`InvalidAMIID.NotFound`). */
const PERMANENT_PREFIXES = [
  'InvalidAMIID.',
  'InvalidSubnetID.',
  'InvalidGroup.',
  'InvalidKeyPair.',
  'InvalidInstanceType',
];

/**
 * The SDK's word for a region it has no endpoint for. A DNS failure
 * (`ENOTFOUND`) is not here: the SDK itself retries it as a network error,
 * and a DNS blip during a DynamoDB write must not give up a launched
 * instance; a region EC2 does not offer is refused when the model is created,
 * and a step that never reaches its endpoint ends at its deadline.
 */
const PERMANENT_TRANSPORT_CODES = new Set(['UnknownEndpoint']);

/**
 * Refusals with a permanent-looking code that clear by themselves: an
 * instance profile just created (IAM is eventually consistent), an image
 * still being made available, an account still being verified.
 */
function clearsByItself(code: string, message: string): boolean {
  return (
    code === 'PendingVerification' ||
    code === 'InvalidAMIID.Unavailable' ||
    (code === 'InvalidParameterValue' && /iam instance profile/i.test(message))
  );
}

/** The SDK corrected its clock after this answer (`AuthFailure` for skew): the retry is signed right. */
function clockSkewCorrected(err: unknown): boolean {
  const meta = (err as { $metadata?: { clockSkewCorrected?: boolean } } | null)?.$metadata;
  return meta?.clockSkewCorrected === true;
}

/** How a failure is handled, decided here and nowhere else. */
export type ErrorClass =
  /** Another zone may work: fail over without spending an attempt. */
  | 'zone'
  /** EC2 asks us to slow down: retry in place with backoff. */
  | 'throttling'
  /** No retry can fix it: stop and say so, with EC2's code. */
  | 'permanent'
  /** EC2 having a moment, a refusal a later attempt may not meet, a transport fault: retry. */
  | 'transient';

/** The node error code of a transport failure (`ENOTFOUND`), if it has one. */
function transportCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Classifies an error from an EC2 call (or the transport under it). */
export function classifyError(err: unknown): ErrorClass {
  const code = ec2ErrorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  if (isThrottling(code)) return 'throttling';
  if (isZoneSpecific(code, message)) return 'zone';
  const transport = transportCode(err);
  if (transport && PERMANENT_TRANSPORT_CODES.has(transport)) return 'permanent';
  if (code && PERMANENT_TRANSPORT_CODES.has(code)) return 'permanent';
  // a placement group's partition or state refused: the next attempt claims afresh
  if (PLACEMENT_REFUSAL_CODES.has(code ?? '') && /placement group|partition/i.test(message)) {
    return 'transient';
  }
  if (code && (clearsByItself(code, message) || clockSkewCorrected(err))) return 'transient';
  if (code && (PERMANENT_CODES.has(code) || PERMANENT_PREFIXES.some((p) => code.startsWith(p)))) {
    return 'permanent';
  }
  return 'transient';
}

/** What the machine's status says of a permanent EC2 error: EC2's code first. */
export function permanentMessage(err: unknown): string {
  const code = ec2ErrorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  return code && !message.startsWith(`${code}:`) ? `${code}: ${message}` : message;
}

/**
 * The one place activities turn an error no retry can fix into a
 * non-retryable `Ec2Refused` failure (the workflow records it); every other
 * error is returned as it is, for the caller's own handling or the activity
 * retry policy.
 */
export function refusedOr(err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  if (classifyError(err) !== 'permanent') return err;
  const code = ec2ErrorCode(err) ?? transportCode(err);
  return ApplicationFailure.create({
    type: EC2_REFUSED,
    message: permanentMessage(err),
    nonRetryable: true,
    ...(code ? { details: [{ code }] } : {}),
  });
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
  const kind = classifyError(err);
  if (kind === 'throttling') return err;
  if (kind === 'permanent') {
    return ApplicationFailure.create({
      type: EC2_REFUSED,
      message: permanentMessage(err),
      nonRetryable: true,
      details: [{ zone, code }],
    });
  }
  if (kind === 'zone') {
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
