import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import { commonErrors, isMutating, OPERATIONS, type OperationSpec } from './operations';
import type { RouteAccess } from '../core/access';
import { ROUTES, keyOf } from './routes';
import {
  ErrorBody,
  IdempotencyKey,
  PATH_PARAMETERS,
  errorBodyWith,
  type ErrorCode,
  type PathParameterName,
} from './schemas';

export type OpenApiDocument = ReturnType<typeof createDocument>;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Missing or wrong bearer token',
  403: 'The caller’s access is too low for this route',
  404: 'Not found',
  409: 'Conflict',
  422: 'Idempotency-Key reused with another request',
  500: 'Internal error',
  503: 'A service the request needs could not be asked; try again',
};

function pathParameters(path: string) {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
  if (names.length === 0) return undefined;
  const shape: Record<string, z.ZodType> = {};
  for (const name of names) {
    const rule = PATH_PARAMETERS[name as PathParameterName] as
      (typeof PATH_PARAMETERS)[PathParameterName] | undefined;
    if (!rule) throw new Error(`path ${path}: no schema for parameter {${name}}`);
    shape[name] = rule.schema;
  }
  return z.object(shape);
}

/** Route-specific codes merged over the common ones, per status, each code once. */
function errorCodes(
  method: string,
  access: RouteAccess,
  spec: OperationSpec,
): Map<number, ErrorCode[]> {
  const merged = new Map<number, ErrorCode[]>();
  const add = (table: Partial<Record<number, readonly ErrorCode[]>>) => {
    for (const [status, codes] of Object.entries(table)) {
      const list = merged.get(Number(status)) ?? [];
      for (const code of codes ?? []) if (!list.includes(code)) list.push(code);
      merged.set(Number(status), list);
    }
  };
  add(commonErrors(method, access));
  add(spec.errors);
  return new Map([...merged].sort(([a], [b]) => a - b));
}

function operation(
  method: string,
  path: string,
  group: string,
  access: RouteAccess,
  spec: OperationSpec,
) {
  const op: Omit<ZodOpenApiOperationObject, 'responses'> = {
    operationId: `${method.toLowerCase()}${path
      .replace(/^\/v1/, '')
      .split(/[/{}.]+/)
      .filter(Boolean)
      .map((s) => s.charAt(0).toUpperCase() + s.slice(1))
      .join('')}`,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [group],
  };
  const params = pathParameters(path);
  const header = isMutating(method)
    ? z.object({ 'Idempotency-Key': IdempotencyKey.optional() })
    : undefined;
  if (params || spec.query || header) {
    op.requestParams = {
      ...(params ? { path: params } : {}),
      ...(spec.query ? { query: spec.query } : {}),
      ...(header ? { header } : {}),
    };
  }
  if (spec.body) {
    op.requestBody = { required: true, content: { 'application/json': { schema: spec.body } } };
  }
  const responses: Record<`${2 | 4 | 5}${string}`, ZodOpenApiResponseObject> = {};
  const { success } = spec;
  responses[`${success.status}`] =
    'schema' in success
      ? {
          description: success.description,
          content: { 'application/json': { schema: success.schema } },
        }
      : { description: success.description };
  if (spec.plan) {
    responses[`${spec.plan.status}`] = {
      description: spec.plan.description,
      content: { 'application/json': { schema: spec.plan.schema } },
    };
  }
  for (const [status, codes] of errorCodes(method, access, spec)) {
    const [first, ...rest] = codes;
    if (first === undefined) continue;
    responses[`${status}` as `${4 | 5}${string}`] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: ${codes.map((c) => `\`${c}\``).join(', ')}`,
      content: { 'application/json': { schema: errorBodyWith([first, ...rest]) } },
    };
  }
  return { ...op, responses };
}

/**
 * The OpenAPI 3.1 document of the route table, built from the operations'
 * zod schemas (never kept by hand). Every route answers bearer-authenticated.
 */
export function buildOpenApiDocument(version: string): OpenApiDocument {
  const paths: NonNullable<ZodOpenApiObject['paths']> = {};
  for (const route of ROUTES) {
    const spec: OperationSpec = OPERATIONS[keyOf(route)];
    const item = (paths[route.path] ??= {});
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    item[method] = operation(route.method, route.path, route.group, route.access, spec);
    if (route.access.kind === 'none') item[method].security = [];
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Machine provisioner API',
      version,
      description:
        'Juju\'s provisioning model over EC2. JSON in and out; every request carries `Authorization: Bearer <token>`. Errors always answer `{ "error": { "code", "message" } }`. A path below asked with a method it does not list answers `405` `method-not-allowed` with an `Allow` header naming the methods it has; a path not below answers `404`.',
    },
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: ErrorBody },
    },
  });
}

/** The version of the `/v1` API this document describes. */
export const API_VERSION = '1.0.0';

let cached: OpenApiDocument | undefined;

/** The document, built once per process (it depends on nothing but the code). */
export function openApiDocument(): OpenApiDocument {
  cached ??= buildOpenApiDocument(API_VERSION);
  return cached;
}
