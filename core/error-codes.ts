/**
 * The one table of the API's error codes and their HTTP statuses (API.md §1).
 * The OpenAPI error enum (functions/schemas.ts ERROR_CODES), the statuses
 * functions/http.ts answers domain errors with, and which errors refuse a
 * request (service/errors.ts isRefusal) are all read from here.
 */

/** Every `code` the API answers with, in the OpenAPI enum's order. */
export const ERROR_CODES = [
  'bad-request',
  'invalid-constraints',
  'invalid-placement',
  'base-mismatch',
  'unauthorized',
  'forbidden',
  'not-found',
  'method-not-allowed',
  'conflict',
  'idempotency-key-reused',
  'unavailable',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Each code's HTTP status: a code without one does not compile. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  'bad-request': 400,
  'invalid-constraints': 400,
  'invalid-placement': 400,
  'base-mismatch': 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  'method-not-allowed': 405,
  conflict: 409,
  'idempotency-key-reused': 422,
  unavailable: 503,
  internal: 500,
};

/**
 * Codes the Lambda may answer that the contract does not list (so they are
 * not in the OpenAPI enum): `not-implemented` is a route API Gateway has and
 * the Lambda has no operation for, a deployment mistake no client should see.
 */
export const UNLISTED_ERROR_STATUS = { 'not-implemented': 501 } as const;
export type UnlistedErrorCode = keyof typeof UNLISTED_ERROR_STATUS;

/** The status of any code the HTTP layer answers with, listed or not. */
export function errorStatus(code: ErrorCode | UnlistedErrorCode): number {
  return code in UNLISTED_ERROR_STATUS
    ? UNLISTED_ERROR_STATUS[code as UnlistedErrorCode]
    : ERROR_STATUS[code as ErrorCode];
}

/**
 * The codes a domain error (core/, state/, service/: no HTTP status of its
 * own) may carry for the API to answer with its status. The rest are the
 * HTTP layer's own (authentication, routing, idempotency, the 500).
 */
export const DOMAIN_ERROR_CODES = [
  'invalid-constraints',
  'invalid-placement',
  'base-mismatch',
  'bad-request',
  'not-found',
  'conflict',
  'unavailable',
] as const satisfies readonly ErrorCode[];
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

const DOMAIN_CODES: ReadonlySet<string> = new Set(DOMAIN_ERROR_CODES);

/** The status a domain error's `code` is answered with; undefined: not a domain code (a 500). */
export function domainErrorStatus(code: unknown): number | undefined {
  return typeof code === 'string' && DOMAIN_CODES.has(code)
    ? ERROR_STATUS[code as DomainErrorCode]
    : undefined;
}

/**
 * Whether a domain error's `code` refuses the request (a 4xx: the request was
 * wrong, not the service); `unavailable`, another code or none is a failure
 * on our side.
 */
export function isRefusalCode(code: unknown): boolean {
  const status = domainErrorStatus(code);
  return status !== undefined && status < 500;
}
