/**
 * Typed errors raised by core/. Callers branch on the class (or on `code`),
 * never on the message; messages are Juju's wording where Juju has one.
 */

/** Base class of every error core/ throws. */
export abstract class CoreError extends Error {
  abstract readonly code: string;
}

/** A constraints string that does not parse, or a value a validator refuses. */
export class ConstraintsError extends CoreError {
  override readonly name = 'ConstraintsError';
  readonly code = 'invalid-constraints';
}

/** A placement directive that does not parse, or is not allowed where it was given. */
export class PlacementError extends CoreError {
  override readonly name = 'PlacementError';
  readonly code = 'invalid-placement';
}

/** A base string (`ubuntu@22.04`) that does not parse. */
export class InvalidBaseError extends CoreError {
  override readonly name = 'InvalidBaseError';
  readonly code = 'bad-request';
}

/** A unit placed on a machine of another base. */
export class BaseMismatchError extends CoreError {
  override readonly name = 'BaseMismatchError';
  readonly code = 'base-mismatch';
}

/** No instance type in the catalogue satisfies the constraints (a provisioning error). */
export class NoMatchingInstanceTypeError extends CoreError {
  override readonly name = 'NoMatchingInstanceTypeError';
  readonly code = 'no-matching-instance-type';
}

/** No availability zone is left to try for a machine (a provisioning error). */
export class NoSuitableZoneError extends CoreError {
  override readonly name = 'NoSuitableZoneError';
  readonly code = 'no-suitable-zone';
}
