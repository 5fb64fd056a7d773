import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import type { z } from 'zod';
import { domainErrorStatus, ERROR_STATUS } from '../core/error-codes';
import { ADMIN_USER, controllerAtLeast, modelAtLeast, type ModelAccess } from '../core/access';
import { dynamoDbClient } from '../config/clients';
import { serviceEndpoints } from '../config/env';
import { logger } from '../config/logger';
import { IdempotencyStore } from '../state/idempotency';
import { observed, observedUser } from './observe';
import { OPERATIONS, type OperationSpec, type SuccessResponse } from './operations';
import {
  allowedMethods,
  documentedRoute,
  isGatewayRoute,
  routeAccess,
  type GroupRouteKey,
  type RouteGroup,
} from './routes';
import { gateFromEnv, reportAuditFailure, type Caller, type Gate } from './access';
import type { AuditEntry } from '../state/audit';
import { BODY_TOO_LARGE, LIMITS } from './limits';
import {
  IdempotencyKey,
  PATH_PARAMETERS,
  type PathParameterName,
  type WholeIssueParams,
} from './schemas';
import {
  ApiError,
  BadRequestError,
  ForbiddenError,
  MethodNotAllowedError,
  NotFoundError,
  NotImplementedError,
} from './errors';

export interface ApiRequest {
  routeKey: string;
  pathParameters: Record<string, string>;
  query: Record<string, string>;
  /** Parsed JSON body; undefined when the request had none. */
  body: unknown;
  /** Who is calling; absent only on routes that need no token (`GET /v1/auth`). */
  caller?: Caller;
  /** The caller's level on the route's `{model}`, on model routes. */
  modelAccess?: ModelAccess;
  /**
   * Runs one step of the operation at most once per Idempotency-Key: a retry
   * of a request that was cut off gets the first run's result (e.g. the
   * machine ids it reserved) instead of running the step again. Without a
   * key it just runs the step.
   */
  step: Step;
}

export type Step = <T>(name: string, run: () => Promise<T>) => Promise<T>;

const runStep: Step = (_name, run) => run();

export interface ApiResponse {
  status: number;
  body?: unknown;
}

export type Operation = (request: ApiRequest) => Promise<ApiResponse>;

/**
 * A group's operations, one per route of the group in functions/routes.ts,
 * each typed to answer its success status with a body of its response schema
 * (functions/operations.ts): a handler cannot drift from the OpenAPI document
 * without failing the type check.
 */
export function groupOperations<G extends RouteGroup>(
  _group: G,
  operations: {
    [K in GroupRouteKey<G>]: (request: ApiRequest) => Promise<SuccessResponse<K>>;
  },
): Record<string, Operation> {
  return operations;
}

/** Methods an Idempotency-Key applies to (API.md §1). */
const IDEMPOTENT_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

let idempotencyStore: IdempotencyStore | undefined;
function idempotencyFromEnv(): IdempotencyStore {
  if (!idempotencyStore) {
    const endpoints = serviceEndpoints();
    idempotencyStore = new IdempotencyStore(dynamoDbClient(endpoints), endpoints.tableName);
  }
  return idempotencyStore;
}

function errorResponse(
  status: number,
  code: string,
  message: string,
): APIGatewayProxyStructuredResultV2 {
  return json(status, { error: { code, message } });
}

function json(status: number, body: unknown): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? '' : JSON.stringify(body),
  };
}

export function toErrorResponse(err: unknown): APIGatewayProxyStructuredResultV2 {
  if (err instanceof MethodNotAllowedError) {
    const response = errorResponse(err.status, err.code, err.message);
    return { ...response, headers: { ...response.headers, allow: err.allow.join(', ') } };
  }
  if (err instanceof ApiError) return errorResponse(err.status, err.code, err.message);
  if (err instanceof Error) {
    // domain errors (core/, state/errors.ts, service/errors.ts) carry a `code`: its status is
    // core/error-codes.ts's
    const code = (err as { code?: unknown }).code;
    const status = domainErrorStatus(code);
    if (status !== undefined) return errorResponse(status, code as string, err.message);
  }
  logger.error('unhandled error', { error: err as Error });
  return errorResponse(ERROR_STATUS.internal, 'internal', 'internal error');
}

function parseJsonBody(event: APIGatewayProxyEventV2): unknown {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  const text = event.isBase64Encoded
    ? Buffer.from(event.body, 'base64').toString('utf8')
    : event.body;
  // API Gateway lets up to 10 MB through; nothing the API records needs more than this
  if (Buffer.byteLength(text, 'utf8') > LIMITS.bodyBytes) throw new BadRequestError(BODY_TOO_LARGE);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new BadRequestError('malformed JSON in request body');
  }
}

/** Whether the request asks a route that plans (OPERATIONS' `plan`) for its plan only. */
function isDryRun(event: APIGatewayProxyEventV2): boolean {
  const spec: OperationSpec | undefined = (OPERATIONS as Record<string, OperationSpec>)[
    event.routeKey
  ];
  if (spec?.plan === undefined) return false;
  try {
    const body = parseJsonBody(event);
    return (
      typeof body === 'object' && body !== null && (body as { dryRun?: unknown }).dryRun === true
    );
  } catch {
    return false;
  }
}

/**
 * A request that came in on a gateway route (functions/routes.ts
 * GATEWAY_ROUTES: a decoded container id such as `…/machines/0/lxd/1/retry`)
 * as the documented route it stands for, with its `{id}`; when it stands for
 * none (`POST …/machines/5`), as the `$default` route the gateway would have
 * used without it. Everything after this (access, the operation, logs,
 * metrics by route, the audit) sees only documented routes.
 */
export function asDocumentedRoute(event: APIGatewayProxyEventV2): APIGatewayProxyEventV2 {
  if (!isGatewayRoute(event.routeKey)) return event;
  const documented = documentedRoute(event.routeKey, event.pathParameters ?? {});
  if (!documented || !answersAsDocumented(event.rawPath, documented.pathParameters.id)) {
    const { pathParameters: _unused, ...rest } = event;
    return { ...rest, routeKey: '$default' };
  }
  return { ...event, ...documented };
}

/**
 * Whether a greedy-route request whose id the documented route would refuse
 * is still answered by that route (a 400 naming the id), as the path answered
 * before the greedy routes: only when the path is no other route's (a wrong
 * method on `…/machines/3/retry` is a 405 naming POST) and the id has a
 * container id's shape (`0/lxd/x`, `0/kvm/1`: an odd number of segments,
 * every second one a container type Juju names); any other path
 * (`…/machines/3/foo`, `…/machines/3/foo/bar`) is no route at all, a 404.
 */
function answersAsDocumented(rawPath: string, id: string | undefined): boolean {
  if (id === undefined) return false;
  if (PATH_PARAMETERS.id.schema.safeParse(id).success) return true;
  if (allowedMethods(rawPath).length > 0) return false;
  const segments = id.split('/');
  return (
    segments.length % 2 === 1 &&
    segments.every((s, i) => i % 2 === 0 || JUJU_CONTAINER_TYPES.has(s))
  );
}

/**
 * The container types Juju's machine ids name (`0/lxd/1`; `kvm` and the
 * retired `lxc` are still ids' shape although only `lxd` is provisioned here).
 */
const JUJU_CONTAINER_TYPES: ReadonlySet<string> = new Set(['lxd', 'kvm', 'lxc']);

/**
 * Builds a Lambda handler for one route group: who is calling and whether
 * the route's access (functions/routes.ts) allows it first, then JSON
 * parsing, then the operation for the event's route key; every error leaves
 * in the contract's `{ error: { code, message } }` shape. Once answered, a
 * state-changing request of a known user, and every 403, is audited.
 */
export function createHandler(
  operations: Record<string, Operation>,
  gate: () => Gate = gateFromEnv,
  idempotency: () => IdempotencyStore = idempotencyFromEnv,
): (
  event: APIGatewayProxyEventV2,
  context?: Context,
) => Promise<APIGatewayProxyStructuredResultV2> {
  const handle = observed(async (event) => {
    let caller: Caller | undefined;
    /** The caller has no access to the route's model: nothing of theirs goes in its audit. */
    let hiddenModel = false;
    let response: APIGatewayProxyStructuredResultV2;
    /** A plan (`"dryRun": true` on a route that takes it): it changes nothing, so it is not audited. */
    let dryRun = false;
    try {
      const need = routeAccess(event.routeKey);
      let modelAccess: ModelAccess | undefined;
      if (need.kind !== 'none') {
        caller = await gate().authenticate(header(event, 'authorization'));
        observedUser(caller.user);
        if (need.kind === 'controller' && !controllerAtLeast(caller.access, need.level)) {
          throw new ForbiddenError();
        }
        if (need.kind === 'model') {
          const model = decodeParams(event.pathParameters ?? {}).model ?? '';
          if (!PATH_PARAMETERS.model.schema.safeParse(model).success)
            throw new BadRequestError(`invalid model name "${model.slice(0, 100)}"`);
          modelAccess = await gate().modelAccess(caller, model);
          // no access at all: exactly as a model that does not exist
          if (modelAccess === undefined) {
            hiddenModel = true;
            throw new NotFoundError(`model "${model}" not found`);
          }
          if (!modelAtLeast(modelAccess, need.level)) throw new ForbiddenError();
        }
      }
      const operation = operations[event.routeKey];
      if (!operation) {
        if (event.routeKey !== '$default') {
          throw new NotImplementedError(`${event.routeKey} is not implemented yet`);
        }
        const method = event.requestContext?.http?.method ?? '';
        // a path the API has, asked with a method it lacks: 405 naming those it has
        const allow = allowedMethods(event.rawPath);
        throw allow.length > 0
          ? new MethodNotAllowedError(method, event.rawPath, allow)
          : new NotFoundError(`no route for ${method} ${event.rawPath}`);
      }
      const request = (step: Step): ApiRequest => ({
        routeKey: event.routeKey,
        pathParameters: decodeParams(event.pathParameters ?? {}),
        query: compact(event.queryStringParameters ?? {}),
        body: parseJsonBody(event),
        ...(caller ? { caller } : {}),
        ...(modelAccess ? { modelAccess } : {}),
        step,
      });
      const key = idempotencyKey(event);
      dryRun = isDryRun(event);
      // a plan is a read: nothing of it is kept for a retry (a replay would answer a stale plan)
      if (key === undefined || dryRun) {
        const result = await operation(request(runStep));
        response = json(result.status, result.body);
      } else {
        response = await runOnce(idempotency(), callersKey(key, caller), event, operation, request);
      }
    } catch (err) {
      response = toErrorResponse(err);
    }
    if (caller && !(dryRun && response.statusCode !== ERROR_STATUS.forbidden)) {
      await audit(gate(), caller, event, response, hiddenModel);
    }
    return response;
  });
  return (event, context?: Context) => handle(asDocumentedRoute(event), context);
}

/**
 * Records a state-changing request of a known user, or a 403, once answered
 * (API.md, "Audit"). A failed write never changes the answer: the request's
 * effect is done and stands; the failure is logged and counted
 * (reportAuditFailure).
 */
async function audit(
  gate: Gate,
  caller: Caller,
  event: APIGatewayProxyEventV2,
  response: APIGatewayProxyStructuredResultV2,
  hiddenModel: boolean,
): Promise<void> {
  const method = event.requestContext?.http?.method ?? event.routeKey.split(' ')[0] ?? '';
  const status = response.statusCode ?? 200;
  if (!IDEMPOTENT_METHODS.has(method) && status !== ERROR_STATUS.forbidden) return;
  const entry: AuditEntry = {
    time: new Date().toISOString(),
    user: caller.user,
    method,
    path: event.rawPath,
    status,
    requestId: event.requestContext?.requestId ?? '',
  };
  // a request refused with the hidden 404 goes to the controller's audit: a
  // caller who cannot see a model cannot write into its audit either
  const model = hiddenModel ? undefined : auditedModel(event, status, response);
  if (model !== undefined) entry.model = model;
  const key = header(event, 'idempotency-key');
  if (key !== undefined && IdempotencyKey.safeParse(key).success) entry.idempotencyKey = key;
  try {
    await gate.audit(entry);
  } catch (err) {
    reportAuditFailure(entry, err);
  }
}

/** The model a request was about: its `{model}`, or the model a `POST /v1/models` created. */
function auditedModel(
  event: APIGatewayProxyEventV2,
  status: number,
  response: APIGatewayProxyStructuredResultV2,
): string | undefined {
  const raw = event.pathParameters?.model;
  if (raw !== undefined) {
    try {
      const model = decodeURIComponent(raw);
      return PATH_PARAMETERS.model.schema.safeParse(model).success ? model : undefined;
    } catch {
      return undefined;
    }
  }
  if (event.routeKey === 'POST /v1/models' && status === 201) {
    try {
      const name = (JSON.parse(String(response.body)) as { name?: unknown }).name;
      return typeof name === 'string' ? name : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  for (const [k, v] of Object.entries(event.headers ?? {})) {
    if (k.toLowerCase() === name) return v;
  }
  return undefined;
}

/**
 * An Idempotency-Key is the caller's own: another user presenting it runs
 * their own request, never replays the first caller's answer. `admin`'s keys
 * stay as they were before users existed.
 */
export function callersKey(key: string, caller: Caller | undefined): string {
  return caller === undefined || caller.user === ADMIN_USER ? key : `${caller.user}\n${key}`;
}

/** Body fields that are secrets: never stored, not even hashed (a fingerprint outlives the request by a day). */
const SECRET_FIELDS = ['password'];

/**
 * The body a fingerprint is taken of: a JSON object's secret fields left out
 * (an unsalted hash of a password is a password for an offline guesser).
 * A replay with another password then answers the first answer.
 */
export function withoutSecrets(rawBody: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody);
  } catch {
    return rawBody;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return rawBody;
  if (!SECRET_FIELDS.some((f) => Object.hasOwn(parsed, f))) return rawBody;
  const rest = { ...(parsed as Record<string, unknown>) };
  for (const f of SECRET_FIELDS) delete rest[f];
  return JSON.stringify(rest);
}

/** The request's Idempotency-Key, when it carries one on a method it applies to. */
function idempotencyKey(event: APIGatewayProxyEventV2): string | undefined {
  const key = header(event, 'idempotency-key');
  const method = event.requestContext?.http?.method ?? event.routeKey.split(' ')[0] ?? '';
  if (key === undefined || !IDEMPOTENT_METHODS.has(method)) return undefined;
  if (!IdempotencyKey.safeParse(key).success) {
    throw new BadRequestError('header "Idempotency-Key" must be 1 to 255 visible ASCII characters');
  }
  return key;
}

/**
 * API.md §1 "Retried requests": the same key with the same method, path and
 * body answers the first answer again and does nothing more; another body is
 * 422; a first request still running is 409; a first request that was cut
 * off is completed by the retry, its steps never run twice.
 */
async function runOnce(
  store: IdempotencyStore,
  key: string,
  event: APIGatewayProxyEventV2,
  operation: Operation,
  request: (step: Step) => ApiRequest,
): Promise<APIGatewayProxyStructuredResultV2> {
  const method = event.requestContext?.http?.method ?? event.routeKey.split(' ')[0] ?? '';
  const rawBody =
    event.body && event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : (event.body ?? '');
  const claim = await store.claim(
    key,
    IdempotencyStore.fingerprint(method, event.rawPath, withoutSecrets(rawBody)),
  );
  switch (claim.kind) {
    case 'mismatch':
      return errorResponse(
        ERROR_STATUS['idempotency-key-reused'],
        'idempotency-key-reused',
        'this Idempotency-Key was used with another request (method, path or body)',
      );
    case 'in-flight':
      return errorResponse(
        ERROR_STATUS.conflict,
        'conflict',
        'a request with this Idempotency-Key is still running',
      );
    case 'replay':
      return json(claim.response.status, claim.response.body);
    case 'run':
      break;
  }
  const memo = claim.memo;
  const step: Step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    if (Object.hasOwn(memo, name)) return memo[name] as T;
    const value = await run();
    await store.remember(key, name, value);
    memo[name] = value;
    return value;
  };
  let response: APIGatewayProxyStructuredResultV2;
  let stored: { status: number; body?: unknown };
  try {
    const result = await operation(request(step));
    response = json(result.status, result.body);
    stored = { status: result.status, ...(result.body === undefined ? {} : { body: result.body }) };
  } catch (err) {
    response = toErrorResponse(err);
    stored = {
      status: response.statusCode ?? ERROR_STATUS.internal,
      body: JSON.parse(String(response.body)) as unknown,
    };
  }
  if (stored.status >= 500) {
    // ours, not the request's: a retry with the key completes what this one began
    await store.abandon(key).catch(() => undefined);
  } else {
    await store.complete(key, stored);
  }
  return response;
}

function compact(record: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record)) if (v !== undefined) out[k] = v;
  return out;
}

/** API Gateway may hand path parameters still encoded (`1%2Flxd%2F0`); ids never contain `%`. */
function decodeParams(params: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    try {
      out[k] = v.includes('%') ? decodeURIComponent(v) : v;
    } catch {
      throw new BadRequestError(`path parameter ${k}: malformed percent-encoding`);
    }
  }
  return out;
}

/** Validates a JSON body with a strict zod schema; the message names the field that was wrong. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown, what = 'field'): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new BadRequestError('invalid request body');
  // a domain rule's own refusal (functions/schemas.ts refusedBy): its text and code, as it is
  if (issue.code === 'custom' && (issue.params as Partial<WholeIssueParams> | undefined)?.whole) {
    const code = (issue.params as WholeIssueParams).code;
    throw new ApiError(code, issue.message);
  }
  if (issue.code === 'unrecognized_keys') {
    throw new BadRequestError(
      `unknown ${what}${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`,
    );
  }
  const where = issue.path.length ? `${what} "${issue.path.join('.')}"` : 'request body';
  throw new BadRequestError(`${where}: ${issue.message}`);
}

/** A path parameter, checked with its schema (functions/schemas.ts): a malformed one is a bad request, never a 500. */
export function param(request: ApiRequest, name: PathParameterName): string {
  const value = request.pathParameters[name];
  if (value === undefined) throw new BadRequestError(`missing path parameter ${name}`);
  const rule = PATH_PARAMETERS[name];
  if (!rule.schema.safeParse(value).success)
    throw new BadRequestError(`invalid ${rule.what} "${value.slice(0, 100)}"`);
  return value;
}
