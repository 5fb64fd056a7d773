/**
 * What each route of the table takes and answers: its request body, its
 * success status and schema, and the error codes it can answer. The OpenAPI
 * document is generated from this (functions/openapi-document.ts) and the
 * handlers are typed against it (`groupOperations` in functions/http.ts), so
 * the document cannot describe a response the handlers do not give.
 */
import type { z } from 'zod';
import type { RouteAccess } from '../core/access';
import type { RouteKey } from './routes';
import {
  AddMachines,
  AddUser,
  AllAuditQuery,
  AuditPage,
  AuditQuery,
  AuthInfo,
  ControllerGrant,
  ModelGrant,
  ModelGrantList,
  SetControllerAccess,
  SetModelAccess,
  User,
  UserList,
  WhoAmI,
  AddUnits,
  Application,
  ConstraintsAnswer,
  CreateModel,
  Deploy,
  DeployAnswer,
  ForceQuery,
  Machine,
  MachinesAnswer,
  Model,
  ModelList,
  ModelsQuery,
  OpenApiDocument,
  Relate,
  Relation,
  Retry,
  SetConstraints,
  Status,
  UnitsAnswer,
  UpdateModel,
  type ErrorCode,
} from './schemas';
import { PlanAnswer } from './plan-schemas';

type Codes = readonly [ErrorCode, ...ErrorCode[]];

/** Statuses a route may answer beyond those every route of its kind shares (see `commonErrors`). */
export type RouteErrorStatus = 400 | 404 | 409 | 503;

export interface OperationSpec {
  summary: string;
  description?: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  success:
    | { status: 200 | 201; description: string; schema: z.ZodType }
    | { status: 202 | 204; description: string };
  /** Codes this route answers beyond the common ones. */
  errors: Partial<Record<RouteErrorStatus, Codes>>;
  /** With `"dryRun": true` in the body: the plan's answer instead (API.md "Plans (dry run)"). */
  plan?: { status: 200; description: string; schema: z.ZodType };
}

/** The plan answer of deploy, add-unit and add-machine with `"dryRun": true`. */
const planned = {
  status: 200,
  description:
    'With `"dryRun": true`: what the request would launch (zones, instance types, prices) and ' +
    'when; nothing written.',
  schema: PlanAnswer,
} as const;

const accepted = (description: string) => ({ status: 202, description }) as const;

export const OPERATIONS = {
  'GET /v1/openapi.json': {
    summary: 'This document',
    description:
      'The OpenAPI 3.1 description of this API, generated from the schemas the handlers validate with.',
    success: { status: 200, description: 'The OpenAPI document.', schema: OpenApiDocument },
    errors: {},
  },

  'POST /v1/models': {
    summary: 'Create a model',
    body: CreateModel,
    success: { status: 201, description: 'The new model.', schema: Model },
    errors: {
      400: ['bad-request', 'invalid-constraints'],
      409: ['conflict'],
      503: ['unavailable'],
    },
  },
  'GET /v1/models': {
    summary: 'List models',
    query: ModelsQuery,
    success: { status: 200, description: 'Every model.', schema: ModelList },
    errors: {},
  },
  'GET /v1/models/{model}': {
    summary: 'Get a model',
    success: { status: 200, description: 'The model.', schema: Model },
    errors: { 404: ['not-found'] },
  },
  'PATCH /v1/models/{model}': {
    summary: 'Change a model’s settings',
    description: '`availabilitySets` is fixed at creation: changing it is `409 conflict`.',
    body: UpdateModel,
    success: { status: 200, description: 'The model as changed.', schema: Model },
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },
  'DELETE /v1/models/{model}': {
    summary: 'Destroy a model',
    description:
      'Every machine goes Dying and is torn down; the model disappears when it is empty.',
    success: accepted('Destruction began.'),
    errors: { 404: ['not-found'] },
  },
  'GET /v1/models/{model}/constraints': {
    summary: 'Get model constraints',
    success: { status: 200, description: 'The constraints.', schema: ConstraintsAnswer },
    errors: { 404: ['not-found'] },
  },
  'PUT /v1/models/{model}/constraints': {
    summary: 'Set model constraints',
    body: SetConstraints,
    success: { status: 200, description: 'The constraints as set.', schema: ConstraintsAnswer },
    errors: { 400: ['bad-request', 'invalid-constraints'], 404: ['not-found'] },
  },

  'POST /v1/models/{model}/applications': {
    summary: 'Deploy an application',
    description: "The application's constraints are set before its first unit is added.",
    body: Deploy,
    success: {
      status: 201,
      description: 'The application and its units.',
      schema: DeployAnswer,
    },
    plan: planned,
    errors: {
      400: ['bad-request', 'invalid-constraints', 'invalid-placement', 'base-mismatch'],
      404: ['not-found'],
      409: ['conflict'],
      // a plan whose EC2 reads did not answer in time (service/plans.ts PlanReadsDeadlineError)
      503: ['unavailable'],
    },
  },
  'GET /v1/models/{model}/applications/{app}': {
    summary: 'Get an application',
    success: { status: 200, description: 'The application.', schema: Application },
    errors: { 404: ['not-found'] },
  },
  'DELETE /v1/models/{model}/applications/{app}': {
    summary: 'Remove an application',
    description: 'Its units are removed; machines left with no units go Dying.',
    success: accepted('Removal began.'),
    errors: { 404: ['not-found'] },
  },
  'GET /v1/models/{model}/applications/{app}/constraints': {
    summary: 'Get application constraints',
    success: { status: 200, description: 'The constraints.', schema: ConstraintsAnswer },
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },
  'PUT /v1/models/{model}/applications/{app}/constraints': {
    summary: 'Set application constraints',
    body: SetConstraints,
    success: { status: 200, description: 'The constraints as set.', schema: ConstraintsAnswer },
    errors: {
      400: ['bad-request', 'invalid-constraints'],
      404: ['not-found'],
      409: ['conflict'],
    },
  },
  'POST /v1/models/{model}/relations': {
    summary: 'Relate two applications',
    description:
      "Relating a subordinate to a principal puts a subordinate unit on each principal unit's machine.",
    body: Relate,
    success: { status: 201, description: 'The relation.', schema: Relation },
    errors: { 400: ['bad-request', 'base-mismatch'], 404: ['not-found'], 409: ['conflict'] },
  },

  'POST /v1/models/{model}/applications/{app}/units': {
    summary: 'Add units',
    body: AddUnits,
    success: { status: 201, description: 'The new units.', schema: UnitsAnswer },
    plan: planned,
    errors: {
      400: ['bad-request', 'invalid-placement', 'base-mismatch'],
      404: ['not-found'],
      409: ['conflict'],
      // a plan whose EC2 reads did not answer in time (service/plans.ts PlanReadsDeadlineError)
      503: ['unavailable'],
    },
  },
  'DELETE /v1/models/{model}/units/{app}/{n}': {
    summary: 'Remove a unit',
    description: 'A machine left with no units goes Dying.',
    success: accepted('Removal began.'),
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },

  'POST /v1/models/{model}/machines': {
    summary: 'Add machines',
    body: AddMachines,
    success: { status: 201, description: 'The new machines.', schema: MachinesAnswer },
    plan: planned,
    errors: {
      400: ['bad-request', 'invalid-constraints', 'invalid-placement', 'base-mismatch'],
      404: ['not-found'],
      409: ['conflict'],
      // a plan whose EC2 reads did not answer in time (service/plans.ts PlanReadsDeadlineError)
      503: ['unavailable'],
    },
  },
  'GET /v1/models/{model}/machines/{id}': {
    summary: 'Get a machine',
    success: { status: 200, description: 'The machine, as in status.', schema: Machine },
    errors: { 404: ['not-found'] },
  },
  'DELETE /v1/models/{model}/machines/{id}': {
    summary: 'Destroy a machine',
    query: ForceQuery,
    success: accepted('Destruction began.'),
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },
  'POST /v1/models/{model}/machines/{id}/retry': {
    summary: 'Retry provisioning a machine in error',
    description: 'With constraints, they replace the machine’s own first.',
    body: Retry,
    success: accepted('Provisioning is tried again.'),
    errors: {
      400: ['bad-request', 'invalid-constraints'],
      404: ['not-found'],
      409: ['conflict'],
      503: ['unavailable'],
    },
  },

  'POST /v1/models/{model}/machines/{id}/reprovision': {
    summary: 'Give a machine whose instance is gone a new instance',
    description:
      'Juju’s reprovision-machine: only when EC2 confirms the instance is terminated or no longer listed; the same machine and units get a new instance. A live instance, one launched moments ago that EC2 does not list yet, or EC2 that cannot be asked, is a 409. The machine’s workflow forgets the instance and launches the new one: when it cannot be told (Temporal unreachable), 503 with the machine as it was, and the same request repeated later completes it.',
    success: accepted('The machine’s workflow was told; a new instance is being provisioned.'),
    errors: {
      404: ['not-found'],
      409: ['conflict'],
      503: ['unavailable'],
    },
  },

  'GET /v1/models/{model}/status': {
    summary: 'Model status',
    success: { status: 200, description: 'The model’s machines and applications.', schema: Status },
    errors: { 404: ['not-found'] },
  },

  'GET /v1/auth': {
    summary: 'How to log in',
    description:
      'The user pool to log in to (no token needed); `endpoint` only where the pool is not AWS’s regional one.',
    success: { status: 200, description: 'The pool and its app client.', schema: AuthInfo },
    errors: { 404: ['not-found'] },
  },
  'GET /v1/whoami': {
    summary: 'Who the token is',
    success: { status: 200, description: 'The user and their controller access.', schema: WhoAmI },
    errors: {},
  },
  'POST /v1/users': {
    summary: 'Add a user',
    description:
      'Creates the user in the pool with that permanent password (Juju’s add-user). A password the pool refuses is a 400 with the pool’s reason.',
    body: AddUser,
    success: { status: 201, description: 'The new user.', schema: User },
    errors: { 400: ['bad-request'], 409: ['conflict'], 503: ['unavailable'] },
  },
  'GET /v1/users': {
    summary: 'List users',
    success: {
      status: 200,
      description: 'Every user and their controller access.',
      schema: UserList,
    },
    errors: {},
  },
  'DELETE /v1/users/{name}': {
    summary: 'Remove a user',
    description:
      'The user leaves the pool, every grant of theirs goes, and their tokens stop working at once. `admin` cannot be removed (409).',
    success: { status: 204, description: 'Removed.' },
    errors: { 404: ['not-found'], 409: ['conflict'], 503: ['unavailable'] },
  },
  'PUT /v1/access/{user}': {
    summary: 'Set a user’s controller access',
    body: SetControllerAccess,
    success: { status: 200, description: 'The access as set.', schema: ControllerGrant },
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },
  'GET /v1/models/{model}/access': {
    summary: 'Who has access to a model',
    success: { status: 200, description: 'Users and their levels.', schema: ModelGrantList },
    errors: { 404: ['not-found'] },
  },
  'PUT /v1/models/{model}/access/{user}': {
    summary: 'Set a user’s access to a model',
    body: SetModelAccess,
    success: { status: 200, description: 'The access as set.', schema: ModelGrant },
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },
  'DELETE /v1/models/{model}/access/{user}': {
    summary: 'Revoke a user’s access to a model',
    description: 'Removing the model’s last admin is a 409.',
    success: { status: 204, description: 'The user has no access left.' },
    errors: { 404: ['not-found'], 409: ['conflict'] },
  },
  'GET /v1/models/{model}/audit': {
    summary: 'A model’s audit log',
    description: 'Newest first; entries outlive the model.',
    query: AuditQuery,
    success: { status: 200, description: 'A page of entries.', schema: AuditPage },
    errors: { 404: ['not-found'] },
  },
  'GET /v1/audit': {
    summary: 'The audit log of every model and the controller',
    description: 'Newest first.',
    query: AllAuditQuery,
    success: { status: 200, description: 'A page of entries.', schema: AuditPage },
    errors: {},
  },
} as const satisfies Record<RouteKey, OperationSpec>;

/** What a route's handler answers on success, typed by its schema. */
export type SuccessResponse<K extends RouteKey> =
  | ((typeof OPERATIONS)[K]['success'] extends infer S
      ? S extends { status: infer N; schema: infer Z extends z.ZodType }
        ? { status: N; body: z.input<Z> }
        : S extends { status: infer N }
          ? { status: N; body?: undefined }
          : never
      : never)
  | PlanResponse<K>;

/** A route's plan answer, when it takes `dryRun`. */
type PlanResponse<K extends RouteKey> = (typeof OPERATIONS)[K] extends {
  plan: { status: infer N extends number; schema: infer Z extends z.ZodType };
}
  ? { status: N; body: z.input<Z> }
  : never;

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The codes every route of a kind can answer, beside its own: any request can
 * be unauthenticated, malformed (JSON, path parameters, Idempotency-Key) or
 * meet a fault of ours; a request with an Idempotency-Key can find its key
 * still running (409) or used with another request (422). A body over the
 * limit (functions/limits.ts) is a 400.
 */
export function commonErrors(
  method: string,
  access: RouteAccess = { kind: 'controller', level: 'login' },
): Partial<Record<number, Codes>> {
  // a level that can be too low: above `login` on the controller, above `read` on a model
  // (no access to a model at all is its 404)
  const canBeTooLow =
    (access.kind === 'controller' && access.level !== 'login') ||
    (access.kind === 'model' && access.level !== 'read');
  return {
    400: ['bad-request'],
    ...(access.kind === 'none' ? {} : { 401: ['unauthorized'] }),
    ...(canBeTooLow ? { 403: ['forbidden'] } : {}),
    ...(access.kind === 'model' ? { 404: ['not-found'] } : {}),
    ...(MUTATING.has(method) ? { 409: ['conflict'], 422: ['idempotency-key-reused'] } : {}),
    500: ['internal'],
  } satisfies Partial<Record<number, Codes>>;
}

export function isMutating(method: string): boolean {
  return MUTATING.has(method);
}
