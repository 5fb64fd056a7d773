/**
 * Errors the API maps to HTTP statuses by type. Domain errors from core/
 * carry their own `code`; these cover what is not domain logic.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class BadRequestError extends ApiError {
  override readonly name = 'BadRequestError';
  constructor(message: string) {
    super(400, 'bad-request', message);
  }
}

export class UnauthorizedError extends ApiError {
  override readonly name = 'UnauthorizedError';
  constructor(message = 'missing or invalid bearer token') {
    super(401, 'unauthorized', message);
  }
}

export class NotFoundError extends ApiError {
  override readonly name = 'NotFoundError';
  constructor(message: string) {
    super(404, 'not-found', message);
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
      405,
      'method-not-allowed',
      `method ${method} not allowed for ${path} (allowed: ${allow.join(', ')})`,
    );
  }
}

export class NotImplementedError extends ApiError {
  override readonly name = 'NotImplementedError';
  constructor(message: string) {
    super(501, 'not-implemented', message);
  }
}

export class ConflictError extends ApiError {
  override readonly name = 'ConflictError';
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}

/** The caller's access is too low for the route (Juju's ErrPerm text). */
export class ForbiddenError extends ApiError {
  override readonly name = 'ForbiddenError';
  constructor(message = 'permission denied') {
    super(403, 'forbidden', message);
  }
}
