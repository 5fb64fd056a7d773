import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { groupOperations } from '../../../functions/http';
import { buildOpenApiDocument, openApiDocument } from '../../../functions/openapi-document';
import { OPERATIONS } from '../../../functions/operations';
import { ROUTES, keyOf, routeKey } from '../../../functions/routes';
import { modelView } from '../../../service/models';
import { PLAN_READS_DEADLINE_MS, PlanReadsDeadlineError } from '../../../service/plans';
import { constraintsView } from '../../../service/constraints';
import { machineView } from '../../../service/status';
import type { MachineRecord, ModelRecord } from '../../../state/types';
import { responseValidator, type OpenApiDocumentLike } from '../../support/openapi-responses';

const PROJECT_ROOT = path.resolve(__dirname, '../../..');

/** The validator library is ESM only; it runs in its own Node process, the document on stdin. */
function validateOpenApi(document: unknown): { valid: boolean; errors: unknown; version: string } {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(text));
    process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors ?? null, version: validator.version }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: PROJECT_ROOT,
    input: JSON.stringify(document),
    encoding: 'utf8',
  });
  return JSON.parse(out) as { valid: boolean; errors: unknown; version: string };
}

type Doc = OpenApiDocumentLike & {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: Array<{ in: string; name: string }>;
        requestBody?: { content: Record<string, { schema: unknown }> };
        responses: Record<
          string,
          {
            content?: Record<
              string,
              {
                schema: {
                  properties?: { error?: { properties?: { code?: { enum?: string[] } } } };
                };
              }
            >;
          }
        >;
      }
    >
  >;
};

const document = buildOpenApiDocument('test') as unknown as Doc;
const check = responseValidator(document);

const model: ModelRecord = {
  name: 'demo',
  uid: 'u-1',
  region: 'us-east-1',
  constraints: 'mem=2048M',
  harvestMode: 'destroyed',
  availabilitySets: true,
  reprovisionLost: false,
  life: 'alive',
  createdAt: '2025-01-02T03:04:05.678Z',
};

const machine: MachineRecord = {
  model: 'demo',
  id: '0',
  base: 'ubuntu@22.04',
  constraints: 'mem=2048M',
  applications: ['wordpress'],
  principals: ['wordpress/0'],
  containers: ['0/lxd/0'],
  life: 'alive',
  status: 'running',
  message: '',
  instanceId: 'i-0abc',
  imageId: 'ami-0abc',
  zone: 'us-east-1a',
  instanceType: 't3.small',
  hardware: { arch: 'amd64', cores: 2, mem: 2048, rootDisk: 8192 },
  instanceStatus: 'running',
  placementGroup: 'demo-wordpress',
  partition: 2,
  pricePerHour: 0.0208,
  createdAt: '2025-01-02T03:04:05.678Z',
  updatedAt: '2025-01-02T03:04:05.678Z',
};

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 by a validator library', () => {
    const result = validateOpenApi(openApiDocument());
    expect(result).toEqual({ valid: true, errors: null, version: '3.1' });
  });

  it('is refused by the same validator when broken (the check can fail)', () => {
    const broken = { ...openApiDocument(), info: undefined };
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  it('describes every route of the table, and nothing else, bearer-authenticated', () => {
    const described = Object.entries(document.paths).flatMap(([p, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(described.sort()).toEqual(ROUTES.map(routeKey).sort());
    expect(openApiDocument()).toMatchObject({
      openapi: '3.1.0',
      security: [{ bearer: [] }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    });
  });

  it.each(ROUTES.map((r) => [keyOf(r), r] as const))(
    '%s: its success, its own error codes and the common ones',
    (key, route) => {
      const spec = OPERATIONS[key];
      const op = document.paths[route.path]![route.method.toLowerCase()]!;
      expect(Object.keys(op.responses)).toContain(String(spec.success.status));
      const codes = (status: number) =>
        op.responses[String(status)]?.content?.['application/json']?.schema.properties?.error
          ?.properties?.code?.enum;
      expect(codes(401)).toEqual(route.access.kind === 'none' ? undefined : ['unauthorized']);
      expect(codes(500)).toEqual(['internal']);
      expect(codes(400)).toContain('bad-request');
      for (const [status, own] of Object.entries(spec.errors)) {
        expect(codes(Number(status))).toEqual(expect.arrayContaining([...own]));
      }
      const mutating = route.method !== 'GET';
      expect(codes(422)).toEqual(mutating ? ['idempotency-key-reused'] : undefined);
      expect(
        (op.parameters ?? []).some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
      ).toBe(mutating);
      const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      expect(pathParams).toEqual([...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]));
      expect(op.requestBody !== undefined).toBe('body' in spec);
    },
  );

  it('renders request bodies from the handlers’ strict schemas (unknown fields refused)', () => {
    const createModel = JSON.stringify(
      document.paths['/v1/models']!.post!.requestBody!.content['application/json']!.schema,
    );
    const component = (document.components?.schemas ?? {})['CreateModelRequest'];
    expect(createModel).toContain('#/components/schemas/CreateModelRequest');
    expect(component).toMatchObject({
      additionalProperties: false,
      required: ['name'],
      properties: { harvestMode: { enum: ['none', 'unknown', 'destroyed', 'all'] } },
    });
  });

  it('documents the limit of every string and array in a request body', () => {
    const schemas = document.components?.schemas ?? {};
    expect(schemas['DeployRequest']).toMatchObject({
      properties: {
        name: { maxLength: 63 },
        base: { maxLength: 64 },
        charm: { maxLength: 1024 },
        constraints: { maxLength: 4096 },
        numUnits: { maximum: 1000 },
        to: { maxItems: 1000, items: { maxLength: 256 } },
      },
    });
    expect(schemas['RelateRequest']).toMatchObject({
      properties: { endpoints: { maxItems: 2, items: { maxLength: 128 } } },
    });
    expect(schemas['AddMachinesRequest']).toMatchObject({
      properties: { placement: { maxLength: 256 }, base: { maxLength: 64 } },
    });
    // every string and array property of every request body carries one
    for (const [id, schema] of Object.entries(schemas)) {
      if (!id.endsWith('Request')) continue;
      const props = (schema as { properties?: Record<string, Record<string, unknown>> }).properties;
      for (const [name, prop] of Object.entries(props ?? {})) {
        if (prop.type === 'string' && prop.enum === undefined)
          expect([id, name, prop.maxLength]).toEqual([id, name, expect.any(Number)]);
        if (prop.type === 'array')
          expect([id, name, prop.maxItems]).toEqual([id, name, expect.any(Number)]);
      }
    }
  });
});

describe('handlers typed against the response schemas', () => {
  it('refuses, at type-check time, a handler whose answer is not its route’s schema', () => {
    const ops = groupOperations('status', {
      'GET /v1/models/{model}/status': () =>
        // @ts-expect-error a status without `applications` is not the Status schema
        Promise.resolve({
          status: 200,
          body: { model: { name: 'demo', region: 'us-east-1', constraints: '' }, machines: {} },
        }),
    });
    const units = groupOperations('units', {
      'POST /v1/models/{model}/applications/{app}/units': () =>
        // @ts-expect-error add-units answers 201, not 200
        Promise.resolve({ status: 200, body: { units: [] } }),
      'DELETE /v1/models/{model}/units/{app}/{n}': () => Promise.resolve({ status: 202 }),
    });
    expect(Object.keys(ops)).toEqual(['GET /v1/models/{model}/status']);
    expect(Object.keys(units)).toHaveLength(2);
  });
});

describe('response check (the integration tests’ hook)', () => {
  it('passes what the service views answer, with every optional field', () => {
    expect(
      check({ method: 'GET', path: '/v1/models/demo', status: 200, body: modelView(model) }),
    ).toEqual([]);
    expect(
      check({
        method: 'GET',
        path: '/v1/models/demo/machines/0',
        status: 200,
        body: machineView(machine),
      }),
    ).toEqual([]);
    expect(
      check({
        method: 'PUT',
        path: '/v1/models/demo/constraints',
        status: 200,
        body: constraintsView('mem=2G tags=a'),
      }),
    ).toEqual([]);
    expect(
      check({ method: 'DELETE', path: '/v1/models/demo?x=1', status: 202, body: undefined }),
    ).toEqual([]);
  });

  it.each([
    [
      'a field the schema does not have',
      { ...modelView(model), extra: 1 },
      /must NOT have additional properties \{"additionalProperty":"extra"\}/,
    ],
    [
      'a missing field',
      (({ reprovisionLost: _, ...rest }) => rest)(modelView(model)),
      /must have required property 'reprovisionLost'/,
    ],
    [
      'a value outside its enum',
      { ...modelView(model), harvestMode: 'sometimes' },
      /body\/harvestMode must be equal to one of the allowed values/,
    ],
    [
      'a wrong type',
      { ...modelView(model), availabilitySets: 'yes' },
      /body\/availabilitySets must be boolean/,
    ],
    [
      'a timestamp that is not one',
      { ...modelView(model), createdAt: 'yesterday' },
      /body\/createdAt must match format "date-time"/,
    ],
  ])('catches %s', (_what, body, problem) => {
    const problems = check({ method: 'GET', path: '/v1/models/demo', status: 200, body });
    expect(problems.join('\n')).toMatch(problem);
  });

  it('catches a wrong shape deep in status', () => {
    const status = {
      model: { name: 'demo', region: 'us-east-1', constraints: '' },
      machines: { '0': { ...machineView(machine), instanceStatus: 'asleep', partition: 0 } },
      applications: {},
    };
    const problems = check({
      method: 'GET',
      path: '/v1/models/demo/status',
      status: 200,
      body: status,
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/body\/machines\/0\/instanceStatus must be equal to one of/),
        expect.stringMatching(/body\/machines\/0\/partition must be >= 1/),
      ]),
    );
  });

  it('catches a status the route does not document, and an error code it cannot answer', () => {
    expect(
      check({ method: 'GET', path: '/v1/models/demo', status: 201, body: modelView(model) }),
    ).toEqual([
      expect.stringMatching(/status 201 is not documented for GET \/v1\/models\/\{model\}/),
    ]);
    expect(
      check({
        method: 'GET',
        path: '/v1/models/demo',
        status: 404,
        body: { error: { code: 'conflict', message: 'x' } },
      }),
    ).toEqual([
      expect.stringMatching(/body\/error\/code must be equal to one of the allowed values/),
    ]);
    expect(
      check({
        method: 'GET',
        path: '/v1/models/demo',
        status: 404,
        body: { message: 'Not Found' },
      }),
    ).toEqual(
      expect.arrayContaining([expect.stringMatching(/must have required property 'error'/)]),
    );
  });

  it('documents the 503 a plan answers when its EC2 reads do not answer in time, on every route that plans', () => {
    const planning = ROUTES.filter((r) => 'plan' in OPERATIONS[keyOf(r)]);
    expect(planning.map(keyOf).sort()).toEqual([
      'POST /v1/models/{model}/applications',
      'POST /v1/models/{model}/applications/{app}/units',
      'POST /v1/models/{model}/machines',
    ]);
    const refused = new PlanReadsDeadlineError(PLAN_READS_DEADLINE_MS, [
      'the zones offering t3a.small',
    ]);
    for (const route of planning) {
      const path = route.path.replace('{model}', 'demo').replace('{app}', 'web');
      expect(
        check({
          method: route.method,
          path,
          status: 503,
          body: { error: { code: refused.code, message: refused.message } },
        }),
      ).toEqual([]);
    }
  });

  it('catches a body where none is documented, and an unknown path answering success', () => {
    expect(
      check({ method: 'DELETE', path: '/v1/models/demo', status: 202, body: { ok: true } }),
    ).toEqual([expect.stringMatching(/documented without a body/)]);
    expect(check({ method: 'GET', path: '/v1/nothing', status: 200, body: {} })).toEqual([
      expect.stringMatching(/matches no route/),
    ]);
    expect(
      check({
        method: 'GET',
        path: '/v1/nothing',
        status: 404,
        body: { error: { code: 'not-found', message: 'no route for GET /v1/nothing' } },
      }),
    ).toEqual([]);
  });
});

describe('GET /v1/openapi.json', () => {
  const TOKEN = 'openapi-test-token';
  const event = (authorization?: string): APIGatewayProxyEventV2 => ({
    version: '2.0',
    routeKey: 'GET /v1/openapi.json',
    rawPath: '/v1/openapi.json',
    rawQueryString: '',
    headers: authorization ? { authorization } : {},
    requestContext: {
      http: { method: 'GET', path: '/v1/openapi.json' },
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
  });
  let handler: (e: APIGatewayProxyEventV2) => Promise<{ statusCode?: number; body?: string }>;

  beforeAll(async () => {
    process.env.PROVISIONER_API_TOKEN = TOKEN;
    ({ handler } = await import('../../../functions/models'));
  });
  afterAll(() => {
    delete process.env.PROVISIONER_API_TOKEN;
  });

  it('is served by the models Lambda, as built from the schemas', async () => {
    const res = await handler(event(`Bearer ${TOKEN}`));
    expect(res.statusCode).toBe(200);
    const served = JSON.parse(res.body ?? '') as unknown;
    expect(served).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    expect(check({ method: 'GET', path: '/v1/openapi.json', status: 200, body: served })).toEqual(
      [],
    );
  });

  it('is authenticated like every route', async () => {
    for (const authorization of [undefined, 'Bearer wrong']) {
      const res = await handler(event(authorization));
      expect(res.statusCode).toBe(401);
      expect(JSON.parse(res.body ?? '')).toEqual({
        error: { code: 'unauthorized', message: 'missing or invalid bearer token' },
      });
    }
  });
});
