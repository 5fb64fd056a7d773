import { isRefusalCode } from '../core/error-codes';

/**
 * Errors the services raise for what the caller asked, beside the
 * repository's (state/errors.ts) and the domain's (core/). Each carries the
 * `code` the API answers with (core/error-codes.ts); the HTTP status is
 * chosen in functions/http.ts only, so services know nothing of HTTP.
 */

/** The request itself is wrong (a bad name, region or combination of fields). */
export class InvalidRequestError extends Error {
  override readonly name = 'InvalidRequestError';
  readonly code = 'bad-request';
}

/** A service the request needs (EC2, to check a region) could not be asked; trying again may work. */
export class DependencyUnavailableError extends Error {
  override readonly name = 'DependencyUnavailableError';
  readonly code = 'unavailable';
}

/**
 * Whether a domain error refuses the request (functions/http.ts answers it
 * with a 4xx): the request was wrong, not the service. Anything else
 * (`unavailable`, a socket error's code, no code) is a failure on our side.
 * The statuses are core/error-codes.ts's.
 */
export function isRefusal(err: unknown): boolean {
  return isRefusalCode((err as { code?: unknown } | undefined)?.code);
}
