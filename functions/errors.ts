import { errorStatus, type ErrorCode, type UnlistedErrorCode } from '../core/error-codes';

/**
 * Errors of the HTTP layer (authentication, routing, parsing). Domain errors
 * from core/ carry their own `code`; these cover what is not domain logic.
 * Each status is its code's in core/error-codes.ts.
 */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode | UnlistedErrorCode,
    message: string,
  ) {
    super(message);
    this.status = errorStatus(code);
  }
}

export class BadRequestError extends ApiError {
  override readonly name = 'BadRequestError';
  constructor(message: string) {
    super('bad-request', message);
  }
}

export class UnauthorizedError extends ApiError {
  override readonly name = 'UnauthorizedError';
  constructor(message = 'missing or invalid bearer token') {
    super('unauthorized', message);
  }
}

export class NotFoundError extends ApiError {
  override readonly name = 'NotFoundError';
  constructor(message: string) {
    super('not-found', message);
  }
}

/**
 * A path the API has, with a method it does not: RFC 9110's 405, whose
 * `Allow` header lists the path's methods.
 */
export class MethodNotAllowedError extends ApiError {
  override readonly name = 'MethodNotAllowedError';
  constructor(
    method: string,
    path: string,
    readonly allow: readonly string[],
  ) {
    super(
      'method-not-allowed',
      `method ${method} not allowed for ${path} (allowed: ${allow.join(', ')})`,
    );
  }
}

export class NotImplementedError extends ApiError {
  override readonly name = 'NotImplementedError';
  constructor(message: string) {
    super('not-implemented', message);
  }
}

export class ConflictError extends ApiError {
  override readonly name = 'ConflictError';
  constructor(message: string) {
    super('conflict', message);
  }
}

/** The caller's access is too low for the route (Juju's ErrPerm text). */
export class ForbiddenError extends ApiError {
  override readonly name = 'ForbiddenError';
  constructor(message = 'permission denied') {
    super('forbidden', message);
  }
}
