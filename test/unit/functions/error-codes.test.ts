import {
  BaseMismatchError,
  ConstraintsError,
  InvalidBaseError,
  NoMatchingInstanceTypeError,
  NoSuitableZoneError,
  PlacementError,
} from '../../../core';
import {
  DOMAIN_ERROR_CODES,
  ERROR_CODES,
  ERROR_STATUS,
  UNLISTED_ERROR_STATUS,
  domainErrorStatus,
  errorStatus,
  isRefusalCode,
} from '../../../core/error-codes';
import type { ApiError } from '../../../functions/errors';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  MethodNotAllowedError,
  NotFoundError,
  NotImplementedError,
  UnauthorizedError,
} from '../../../functions/errors';
import { parseBody, toErrorResponse } from '../../../functions/http';
import { commonErrors, OPERATIONS, type OperationSpec } from '../../../functions/operations';
import { ROUTES, routeKey } from '../../../functions/routes';
import { CreateModel } from '../../../functions/schemas';
import { openApiDocument } from '../../../functions/openapi-document';
import {
  DependencyUnavailableError,
  InvalidRequestError,
  isRefusal,
} from '../../../service/errors';
import { InvalidCursorError } from '../../../state/audit';
import {
  ContendedError,
  EntityConflictError,
  EntityNotFoundError,
  TransactionTooLargeError,
} from '../../../state/errors';

/** Every error class below the HTTP layer that carries a `code` for the API (grep `readonly code =`). */
const DOMAIN_ERRORS: Array<Error & { code: string }> = [
  new ConstraintsError('x'),
  new PlacementError('x'),
  new InvalidBaseError('x'),
  new BaseMismatchError('x'),
  new EntityNotFoundError('x'),
  new EntityConflictError('x'),
  new TransactionTooLargeError('x'),
  new ContendedError('x'),
  new InvalidCursorError('x'),
  new InvalidRequestError('x'),
  new DependencyUnavailableError('x'),
];

/** The HTTP layer's own errors, each with its status. */
const API_ERRORS: ApiError[] = [
  new BadRequestError('x'),
  new UnauthorizedError(),
  new ForbiddenError(),
  new NotFoundError('x'),
  new MethodNotAllowedError('PUT', '/v1/models', ['GET']),
  new ConflictError('x'),
];

function openApiErrorEnum(): string[] {
  const doc = openApiDocument() as unknown as {
    components: {
      schemas: Record<
        string,
        { properties: { error: { properties: { code: { enum: string[] } } } } }
      >;
    };
  };
  return doc.components.schemas.Error!.properties.error.properties.code.enum;
}

describe('the error table (core/error-codes.ts)', () => {
  it('gives every code a status, and the OpenAPI error enum is exactly its codes', () => {
    expect(Object.keys(ERROR_STATUS).sort()).toEqual([...ERROR_CODES].sort());
    expect(openApiErrorEnum()).toEqual([...ERROR_CODES]);
  });

  it.each(DOMAIN_ERRORS.map((e) => [e.constructor.name, e] as const))(
    '%s: its code has a status, is in the OpenAPI enum, and the API answers with both',
    (_name, err) => {
      expect(DOMAIN_ERROR_CODES).toContain(err.code);
      const status = ERROR_STATUS[err.code as keyof typeof ERROR_STATUS];
      expect(status).toBeGreaterThanOrEqual(400);
      expect(openApiErrorEnum()).toContain(err.code);
      const response = toErrorResponse(err);
      expect(response.statusCode).toBe(status);
      expect(JSON.parse(response.body!)).toEqual({ error: { code: err.code, message: 'x' } });
      expect(isRefusal(err)).toBe(status < 500);
    },
  );

  it.each(API_ERRORS.map((e) => [e.constructor.name, e] as const))(
    "%s: its own status is the table's for its code",
    (_name, err) => {
      expect(ERROR_STATUS[err.code as keyof typeof ERROR_STATUS]).toBe(err.status);
      expect(toErrorResponse(err).statusCode).toBe(err.status);
    },
  );

  it('answers the status of each domain code, and refuses on 4xx only', () => {
    expect(DOMAIN_ERROR_CODES.map((c) => [c, domainErrorStatus(c)])).toEqual([
      ['invalid-constraints', 400],
      ['invalid-placement', 400],
      ['base-mismatch', 400],
      ['bad-request', 400],
      ['not-found', 404],
      ['conflict', 409],
      ['unavailable', 503],
    ]);
    expect(DOMAIN_ERROR_CODES.filter(isRefusalCode)).toEqual([
      'invalid-constraints',
      'invalid-placement',
      'base-mismatch',
      'bad-request',
      'not-found',
      'conflict',
    ]);
    // the HTTP layer's own codes are not a domain error's to carry
    for (const code of ['unauthorized', 'forbidden', 'internal', 'ECONNRESET', undefined, 7]) {
      expect(domainErrorStatus(code)).toBeUndefined();
      expect(isRefusalCode(code)).toBe(false);
    }
  });

  it('answers a worker-side core error that reaches the API as a 500 that names nothing of it', () => {
    // the launch raises these (the machine's status shows them); they are no API code
    for (const err of [new NoMatchingInstanceTypeError('x'), new NoSuitableZoneError('x')]) {
      expect(domainErrorStatus(err.code)).toBeUndefined();
      const response = toErrorResponse(err);
      expect(response.statusCode).toBe(500);
      expect(JSON.parse(response.body!)).toEqual({
        error: { code: 'internal', message: 'internal error' },
      });
    }
  });
});

describe('statuses come from the table, not from literals beside it', () => {
  it('the unlisted 501 is answered with its own code and kept out of the contract', () => {
    const err = new NotImplementedError('GET /v1/x is not implemented yet');
    expect(err.status).toBe(UNLISTED_ERROR_STATUS['not-implemented']);
    expect(err.status).toBe(501);
    const response = toErrorResponse(err);
    expect(response.statusCode).toBe(501);
    expect(JSON.parse(response.body!)).toEqual({
      error: { code: 'not-implemented', message: 'GET /v1/x is not implemented yet' },
    });
    expect(openApiErrorEnum()).not.toContain('not-implemented');
    expect(errorStatus('conflict')).toBe(409);
    expect(errorStatus('not-implemented')).toBe(501);
  });

  it("a body refused by a domain rule is answered with its code's status", () => {
    let thrown: unknown;
    try {
      parseBody(CreateModel, { name: 'm', region: 'us-east-1', constraints: 'mem=2G mem=4G' });
    } catch (err) {
      thrown = err;
    }
    const response = toErrorResponse(thrown);
    const body = JSON.parse(response.body!);
    expect(body.error.code).toBe('invalid-constraints');
    expect(response.statusCode).toBe(ERROR_STATUS['invalid-constraints']);
    expect(body.error.message).toBe('bad "mem" constraint: already set');
  });

  const routes = ROUTES.map((r) => [routeKey(r), r] as const);

  it.each(routes)("%s: each documented error's status is the table's for its code", (key, r) => {
    const spec = (OPERATIONS as Record<string, OperationSpec>)[key];
    expect(spec).toBeDefined();
    const documented = [
      ...Object.entries(spec!.errors),
      ...Object.entries(commonErrors(r.method, r.access)),
    ];
    expect(documented.length).toBeGreaterThan(0);
    for (const [status, codes] of documented) {
      for (const code of codes ?? []) {
        expect([key, code, ERROR_STATUS[code]]).toEqual([key, code, Number(status)]);
      }
    }
  });
});
