import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { z } from 'zod';
import { ConstraintsError, PlacementError } from '../../../core';
import { ConflictError } from '../../../functions/errors';
import { adminTokenGate } from '../../../functions/access';
import { createHandler, param, parseBody } from '../../../functions/http';
import { LIMITS } from '../../../functions/limits';
import { GATEWAY_ROUTES, ROUTES, routeKey } from '../../../functions/routes';
import { sourcesDispatch } from '../../../local/api-server';
import { templateRouter } from '../../../local/shipped-api';
import {
  AddMachines,
  AddUnits,
  CreateModel,
  Deploy,
  Relate,
  SetConstraints,
} from '../../../functions/schemas';
import { DependencyUnavailableError, InvalidRequestError } from '../../../service/errors';
import { EntityNotFoundError, TransactionTooLargeError } from '../../../state/errors';

const TOKEN = 'secret-token';

function event(overrides: Partial<APIGatewayProxyEventV2> = {}): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'POST /v1/models',
    rawPath: '/v1/models',
    rawQueryString: '',
    headers: { authorization: `Bearer ${TOKEN}` },
    requestContext: {
      http: { method: 'POST', path: '/v1/models' },
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
    ...overrides,
  };
}

const echo = createHandler(
  {
    'POST /v1/models': (req) =>
      Promise.resolve({ status: 201, body: { got: req.body, params: req.pathParameters } }),
    'GET /v1/models/{model}': (req) => {
      const kind = req.pathParameters.model;
      if (kind === 'constraints') throw new ConstraintsError('malformed constraint "x"');
      if (kind === 'placement') throw new PlacementError('placement scope missing');
      if (kind === 'missing') throw new EntityNotFoundError('model "missing" not found');
      if (kind === 'taken') throw new ConflictError('taken');
      if (kind === 'invalid') throw new InvalidRequestError('invalid model name "X"');
      if (kind === 'ec2down') throw new DependencyUnavailableError('EC2 could not be asked');
      if (kind === 'huge') throw new TransactionTooLargeError('needs 101 writes');
      throw new Error('boom with secret details');
    },
  },
  () => adminTokenGate(() => Promise.resolve(TOKEN)),
);

const body = (res: { body?: string }) => JSON.parse(res.body ?? '{}');

describe('createHandler', () => {
  it.each([
    [{}, 'no header'],
    [{ authorization: 'Bearer wrong' }, 'wrong token'],
    [{ authorization: `Basic ${TOKEN}` }, 'wrong scheme'],
    [{ authorization: `Bearer ${TOKEN}x` }, 'longer token'],
  ])('answers 401 for %j (%s)', async (headers, _why) => {
    const res = await echo(event({ headers }));
    expect(res.statusCode).toBe(401);
    expect(body(res)).toEqual({
      error: { code: 'unauthorized', message: 'missing or invalid bearer token' },
    });
  });

  it('passes parsed JSON and decoded path parameters to the operation', async () => {
    const res = await echo(
      event({ body: '{"name":"demo"}', pathParameters: { id: '1%2Flxd%2F0' } }),
    );
    expect(res.statusCode).toBe(201);
    expect(body(res)).toEqual({ got: { name: 'demo' }, params: { id: '1/lxd/0' } });
  });

  it('decodes a base64 body', async () => {
    const res = await echo(
      event({ body: Buffer.from('{"a":1}').toString('base64'), isBase64Encoded: true }),
    );
    expect(body(res).got).toEqual({ a: 1 });
  });

  it('answers malformed JSON with 400 bad-request', async () => {
    const res = await echo(event({ body: '{' }));
    expect(res.statusCode).toBe(400);
    expect(body(res)).toEqual({
      error: { code: 'bad-request', message: 'malformed JSON in request body' },
    });
  });

  it.each([
    ['constraints', 400, 'invalid-constraints', 'malformed constraint "x"'],
    ['placement', 400, 'invalid-placement', 'placement scope missing'],
    ['missing', 404, 'not-found', 'model "missing" not found'],
    ['taken', 409, 'conflict', 'taken'],
    ['invalid', 400, 'bad-request', 'invalid model name "X"'],
    ['ec2down', 503, 'unavailable', 'EC2 could not be asked'],
    ['huge', 409, 'conflict', 'needs 101 writes'],
    ['other', 500, 'internal', 'internal error'],
  ])('maps a %s error to %i %s without leaking internals', async (model, status, code, message) => {
    const res = await echo(
      event({ routeKey: 'GET /v1/models/{model}', pathParameters: { model } }),
    );
    expect(res.statusCode).toBe(status);
    expect(body(res)).toEqual({ error: { code, message } });
  });

  it('refuses a body over the limit with 400 naming it, before parsing it', async () => {
    const big = `{"name":"${'x'.repeat(LIMITS.bodyBytes)}"}`;
    for (const res of [
      await echo(event({ body: big })),
      await echo(event({ body: Buffer.from(big).toString('base64'), isBase64Encoded: true })),
    ]) {
      expect(res.statusCode).toBe(400);
      expect(body(res)).toEqual({
        error: { code: 'bad-request', message: 'request body must be at most 524288 bytes' },
      });
    }
    // multi-byte characters count as bytes, not characters
    const wide = await echo(event({ body: JSON.stringify({ name: 'é'.repeat(300_000) }) }));
    expect(body(wide).error.message).toBe('request body must be at most 524288 bytes');
    const fits = await echo(event({ body: JSON.stringify({ name: 'x'.repeat(500_000) }) }));
    expect(fits.statusCode).toBe(201);
  });

  it('answers the $default route with an authenticated 404', async () => {
    const res = await echo(
      event({
        routeKey: '$default',
        rawPath: '/v2/x',
        requestContext: { http: { method: 'GET' } } as never,
      }),
    );
    expect(res.statusCode).toBe(404);
    expect(body(res)).toEqual({ error: { code: 'not-found', message: 'no route for GET /v2/x' } });
  });

  it.each([
    ['PUT', '/v1/models', 'GET, POST'],
    ['POST', '/v1/models/demo', 'GET, PATCH, DELETE'],
    ['PATCH', '/v1/models/demo/machines/1%2Flxd%2F0', 'GET, DELETE'],
    ['GET', '/v1/models/demo/machines/3/retry/', 'POST'],
  ])('answers %s %s, a path the table has, with 405 and Allow: %s', async (method, path, allow) => {
    const res = await echo(
      event({ routeKey: '$default', rawPath: path, requestContext: { http: { method } } as never }),
    );
    expect(res.statusCode).toBe(405);
    expect(res.headers).toEqual({ 'content-type': 'application/json', allow });
    expect(body(res)).toEqual({
      error: {
        code: 'method-not-allowed',
        message: `method ${method} not allowed for ${path} (allowed: ${allow})`,
      },
    });
  });

  it('answers 405 only after the token: without one it is 401, as every route', async () => {
    const res = await echo(
      event({
        routeKey: '$default',
        rawPath: '/v1/models',
        headers: {},
        requestContext: { http: { method: 'PUT' } } as never,
      }),
    );
    expect(res.statusCode).toBe(401);
    expect(res.headers).toEqual({ 'content-type': 'application/json' });
  });
});

describe('parseBody', () => {
  const Schema = z.strictObject({ name: z.string(), count: z.number().optional() });

  it('accepts a valid body and an absent one as {}', () => {
    expect(parseBody(Schema, { name: 'a', count: 2 })).toEqual({ name: 'a', count: 2 });
    expect(() => parseBody(Schema, undefined)).toThrow('field "name"');
  });

  it('names unknown fields and the field that was wrong', () => {
    expect(() => parseBody(Schema, { name: 'a', colour: 1, size: 2 })).toThrow(
      'unknown fields "colour", "size"',
    );
    expect(() => parseBody(Schema, { name: 1 })).toThrow(/^field "name": /);
    expect(() => parseBody(Schema, [])).toThrow(/^request body: /);
  });
});

describe('request body limits', () => {
  const long = (n: number) => 'x'.repeat(n);
  it.each([
    [
      'create-model name',
      CreateModel,
      { name: long(64) },
      'field "name": must be at most 63 characters',
    ],
    [
      'region',
      CreateModel,
      { name: 'm', region: long(33) },
      'field "region": must be at most 32 characters',
    ],
    [
      'model constraints',
      CreateModel,
      { name: 'm', constraints: long(450_000) },
      'field "constraints": must be at most 4096 characters',
    ],
    [
      'set constraints',
      SetConstraints,
      { constraints: long(4097) },
      'field "constraints": must be at most 4096 characters',
    ],
    [
      'charm',
      Deploy,
      { name: 'a', base: 'ubuntu@22.04', charm: long(500_000) },
      'field "charm": must be at most 1024 characters',
    ],
    ['base', Deploy, { name: 'a', base: long(65) }, 'field "base": must be at most 64 characters'],
    [
      'a to entry',
      Deploy,
      { name: 'a', base: 'ubuntu@22.04', to: ['lxd', long(257)] },
      'field "to.1": must be at most 256 characters',
    ],
    [
      'the to list',
      AddUnits,
      { to: Array.from({ length: 1001 }, () => 'lxd') },
      'field "to": must have at most 1000 items',
    ],
    ['count', AddUnits, { count: 1001 }, 'field "count": Too big: expected number to be <=1000'],
    [
      'placement',
      AddMachines,
      { placement: long(257) },
      'field "placement": must be at most 256 characters',
    ],
    [
      'an endpoint',
      Relate,
      { endpoints: ['a', long(129)] },
      'field "endpoints.1": must be at most 128 characters',
    ],
    [
      'the endpoints',
      Relate,
      { endpoints: ['a', 'b', 'c'] },
      'a relation needs exactly two endpoints, got 3',
    ],
  ])('refuses %s over its limit, naming field and limit', (_what, schema, input, message) => {
    expect(() => parseBody(schema as z.ZodType<unknown>, input)).toThrow(message);
  });

  it('accepts every field at its limit', () => {
    expect(() =>
      parseBody(Deploy, {
        name: long(LIMITS.name),
        // a base and constraints that parse (the document states their rules too)
        base: `ubuntu@${long(LIMITS.base - 'ubuntu@'.length)}`,
        charm: long(LIMITS.charm),
        constraints: `tags=${long(LIMITS.constraints - 'tags='.length)}`,
        to: Array.from({ length: LIMITS.count }, () => long(LIMITS.placement)),
      }),
    ).not.toThrow();
    // the longest deploy body still fits the body limit
    const longest = JSON.stringify({
      name: long(LIMITS.name),
      base: long(LIMITS.base),
      charm: long(LIMITS.charm),
      constraints: long(LIMITS.constraints),
      numUnits: LIMITS.count,
      to: Array.from({ length: LIMITS.count }, () => long(LIMITS.placement)),
      subordinate: false,
    });
    expect(Buffer.byteLength(longest)).toBeLessThan(LIMITS.bodyBytes);
  });
});

describe('machine sub-paths through the router (the template’s routes, and the local server’s)', () => {
  // what the template has: every documented route, the greedy gateway routes, and $default
  const shipped = templateRouter([
    ...[...ROUTES, ...GATEWAY_ROUTES].map((r) => ({
      routeKey: routeKey(r),
      functionLogicalId: r.group,
    })),
    { routeKey: '$default', functionLogicalId: 'models' },
  ]);
  const sources = sourcesDispatch({} as never).route;
  const machines = createHandler(
    Object.fromEntries(
      [
        'GET /v1/models/{model}/machines/{id}',
        'DELETE /v1/models/{model}/machines/{id}',
        'POST /v1/models/{model}/machines/{id}/retry',
        'POST /v1/models/{model}/machines/{id}/reprovision',
      ].map((key) => [
        key,
        // the id checked as the machine operations check it
        (req: Parameters<typeof param>[0]) =>
          Promise.resolve({ status: 200, body: { route: req.routeKey, id: param(req, 'id') } }),
      ]),
    ),
    () => adminTokenGate(() => Promise.resolve(TOKEN)),
  );
  const routers = [
    ['the template (shipped)', shipped],
    ['the local server (sources)', sources],
  ] as const;

  async function send(router: (typeof routers)[number][1], method: string, path: string) {
    const routed = router(method, path);
    return machines(
      event({
        routeKey: routed.routeKey,
        rawPath: routed.rawPath ?? path,
        ...(routed.pathParameters ? { pathParameters: routed.pathParameters } : {}),
        requestContext: { http: { method, path } } as never,
      }),
    );
  }

  describe.each(routers)('through %s', (_name, router) => {
    it.each([
      ['GET', '/v1/models/demo/machines/3/retry'],
      ['DELETE', '/v1/models/demo/machines/3/retry'],
      ['GET', '/v1/models/demo/machines/3/reprovision'],
      ['DELETE', '/v1/models/demo/machines/3/reprovision'],
      ['GET', '/v1/models/demo/machines/0/lxd/1/retry'],
      ['DELETE', '/v1/models/demo/machines/0%2Flxd%2F1/reprovision'],
    ])('answers %s %s, a path only POST has, with 405 and Allow: POST', async (method, path) => {
      const res = await send(router, method, path);
      expect([res.statusCode, res.headers?.allow, body(res).error?.code]).toEqual([
        405,
        'POST',
        'method-not-allowed',
      ]);
    });

    it.each([
      ['GET', '/v1/models/demo/machines/3/foo'],
      ['DELETE', '/v1/models/demo/machines/3/foo'],
      ['POST', '/v1/models/demo/machines/3/foo'],
      ['POST', '/v1/models/demo/machines/3/foo/retry'],
      ['GET', '/v1/models/demo/machines/0/lxd/1/foo'],
      // three segments, but not a container id's shape (no container type)
      ['GET', '/v1/models/demo/machines/3/foo/bar'],
      ['DELETE', '/v1/models/demo/machines/3/foo/bar'],
      ['POST', '/v1/models/demo/machines/3/foo/bar'],
      ['GET', '/v1/models/demo/machines/0/lxd/1/foo/bar'],
    ])('answers %s %s, a path no route has, with 404 no route', async (method, path) => {
      const res = await send(router, method, path);
      expect([res.statusCode, body(res)]).toEqual([
        404,
        { error: { code: 'not-found', message: expect.stringMatching(/^no route for /) } },
      ]);
    });

    it.each([
      ['GET', '/v1/models/demo/machines/0%2Flxd%2Fx', '0/lxd/x'],
      ['DELETE', '/v1/models/demo/machines/0%2Fkvm%2F1', '0/kvm/1'],
      ['POST', '/v1/models/demo/machines/0%2Flxd%2Fx/retry', '0/lxd/x'],
    ])('answers %s %s, a malformed container id, with 400 naming it', async (method, path, id) => {
      const res = await send(router, method, path);
      expect([res.statusCode, body(res)]).toEqual([
        400,
        { error: { code: 'bad-request', message: `invalid machine id "${id}"` } },
      ]);
    });

    it.each([
      ['GET', '/v1/models/demo/machines/0%2Flxd%2F1', 'GET /v1/models/{model}/machines/{id}'],
      ['DELETE', '/v1/models/demo/machines/0%2Flxd%2F1', 'DELETE /v1/models/{model}/machines/{id}'],
      [
        'POST',
        '/v1/models/demo/machines/0%2Flxd%2F1/retry',
        'POST /v1/models/{model}/machines/{id}/retry',
      ],
      [
        'POST',
        '/v1/models/demo/machines/0%2Flxd%2F1/reprovision',
        'POST /v1/models/{model}/machines/{id}/reprovision',
      ],
    ])('answers %s %s on the documented route', async (method, path, route) => {
      const res = await send(router, method, path);
      expect([res.statusCode, body(res)]).toEqual([200, { route, id: '0/lxd/1' }]);
    });
  });
});
