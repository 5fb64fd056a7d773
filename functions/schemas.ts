/**
 * The API's shapes as zod schemas: what the handlers validate requests with,
 * what their responses are typed against (`z.infer`), and what
 * `GET /v1/openapi.json` is generated from (functions/openapi-document.ts).
 * Request bodies are strict (an unknown field is `400 bad-request`); response
 * objects render with `additionalProperties: false`, so a field the contract
 * does not name fails the integration tests' response check.
 *
 * The answers the services build are defined in service/views.ts (re-exported
 * here), so service/ imports nothing from functions/.
 */
import { z } from 'zod';
import { DryRunFlag } from './plan-schemas';
import {
  CONTROLLER_LEVELS,
  CoreError,
  KNOWN_OS,
  MODEL_LEVELS,
  RISKS,
  parseConstraints,
  parseRequestBase,
} from '../core';
import { NAME_PATTERN, REGION_PATTERN } from '../service/names';
import {
  Application,
  HarvestModeSchema,
  ModelListEntry,
  PlacedUnit,
  Timestamp,
} from '../service/views';
export {
  ModelListEntry,
  ModelSummary,
  type ModelListEntryView,
  type ModelSummaryView,
} from '../service/views';
import { ERROR_CODES, type ErrorCode } from '../core/error-codes';
import { LIMITS } from './limits';
import { constraintsPattern, placementPattern } from './grammar';

// ---------------------------------------------------------------- values

/** A string of at most `max` characters; over it, the 400 names the limit. */
function text(max: number) {
  return z.string().max(max, { error: `must be at most ${max} characters` });
}

/** An array of at most `max` items. */
function list<T extends z.ZodType>(item: T, max: number) {
  return z.array(item).max(max, { error: `must have at most ${max} items` });
}

/**
 * A rule the server holds a body field to, stated twice in one schema: first
 * as the check whose refusal is the answer (the domain's own text, Juju's
 * where it has one, and its code: `params.whole`, see parseBody), then as a
 * `pattern` the OpenAPI document carries, so a client or fuzzer sees the
 * rule the server applies. The pattern is the rule or narrower, never wider:
 * what the document calls valid the server accepts.
 */
export interface WholeIssueParams {
  whole: true;
  code: ErrorCode;
}

function refusedBy(check: (value: string) => string | undefined, code: ErrorCode = 'bad-request') {
  return (value: string, ctx: z.core.$RefinementCtx<string>) => {
    const message = check(value);
    if (message !== undefined) {
      ctx.addIssue({ code: 'custom', message, params: { whole: true, code } });
    }
  };
}

/** What a domain parser throws, as a refusal message (its CoreError's text), or undefined. */
function coreRefusal(parse: (value: string) => unknown): (value: string) => string | undefined {
  return (value) => {
    try {
      parse(value);
      return undefined;
    } catch (err) {
      if (err instanceof CoreError) return err.message;
      throw err;
    }
  };
}

/** Model, application and user names (API.md): the pattern, with the service's own refusal text. */
function nameText(what: string) {
  return text(LIMITS.name)
    .superRefine(
      refusedBy((v) => (NAME_PATTERN.test(v) ? undefined : `invalid ${what} name "${v}"`)),
    )
    .regex(NAME_PATTERN);
}

/** No control characters (C0, DEL): nothing a request records is meant to hold them. */
// eslint-disable-next-line no-control-regex -- the rule is exactly "no control characters"
const PRINTABLE = /^[^\x00-\x1f\x7f]*$/;

const PlacementText = text(LIMITS.placement).regex(PRINTABLE, {
  error: 'must not contain control characters',
});

/** A unit's placement (deploy and add-unit `to`): the grammar as the document's pattern. */
const UnitPlacementText = PlacementText.meta({
  pattern: placementPattern('unit'),
  description:
    'An existing machine or container (`3`, `0/lxd/1`; one that does not exist is a 404), a new ' +
    'container (`lxd`, `lxd:3`), a zone (`zone=us-east-1a`: one of the model’s region) or a subnet. ' +
    'A unit goes onto a machine of its own base (400 base-mismatch otherwise).',
});

/**
 * Juju constraints. The server parses them (Juju's grammar, core
 * parseConstraints) and checks them against EC2's validator and the model's
 * region; the document's `pattern` (functions/grammar.ts) states the grammar
 * (keys in any order), and the description says what it cannot (each key once).
 */
function constraintText(options: { container?: boolean } = {}) {
  return text(LIMITS.constraints)
    .superRefine(refusedBy(coreRefusal(parseConstraints), 'invalid-constraints'))
    .regex(PRINTABLE, { error: 'must not contain control characters' })
    .meta({
      pattern: constraintsPattern(options),
      description:
        'Juju constraints, e.g. `mem=2G cores=2`; answered in canonical form (sizes in MiB), which ' +
        'may be sent back as it is. Space-separated `key=value` items in any order. Each key at ' +
        'most once (`cpu-cores` is `cores`), which the pattern does not state: a repeated key is ' +
        '400 `bad "mem" constraint: already set`. Checked at the request against the model’s region: every `zones` ' +
        'entry must be one of its availability zones (400 `availability zone "…" not valid`) and ' +
        '`instance-type` one it offers (400 `invalid constraint value: instance-type=…`).' +
        (options.container === false ? ' No `container` key when adding a machine.' : ''),
    });
}

const ConstraintText = constraintText();

/**
 * A base as a request may give it (core parseRequestBase): the document's
 * pattern is the OS names Juju knows (in any case: Juju lowers it), a track of
 * `[A-Za-z0-9._-]` and one of Juju's risks.
 */
const anyCase = (word: string) =>
  [...word].map((c) => `[${c.toLowerCase()}${c.toUpperCase()}]`).join('');
const BASE_PATTERN = new RegExp(
  `^(?:${KNOWN_OS.map(anyCase).join('|')})@[A-Za-z0-9._-]+(?:/(?:${RISKS.join('|')}))?$`,
);
const BaseText = text(LIMITS.base)
  .superRefine(refusedBy(coreRefusal(parseRequestBase)))
  .regex(BASE_PATTERN);

/** `app` or `app:endpoint`. */
const ENDPOINT_PATTERN = new RegExp(
  `${NAME_PATTERN.source.slice(0, -1)}(?::[\x21-\x7e]{1,${LIMITS.endpoint - 64}})?$`,
);
const EndpointText = text(LIMITS.endpoint)
  .superRefine(
    refusedBy((v) => {
      const name = v.split(':')[0] ?? v;
      return NAME_PATTERN.test(name)
        ? undefined
        : `invalid application name "${name.slice(0, 100)}"`;
    }),
  )
  .regex(ENDPOINT_PATTERN);

// ---------------------------------------------------------------- path, query and header parameters

export const ModelName = z.string().regex(NAME_PATTERN).meta({ description: 'A model name.' });
export const ApplicationName = z
  .string()
  .regex(NAME_PATTERN)
  .meta({ description: 'An application name.' });
export const MachineId = z
  .string()
  .regex(/^(?:0|[1-9][0-9]{0,8})(?:\/lxd\/(?:0|[1-9][0-9]{0,8}))?$/)
  .meta({ description: 'A machine id, `N` or `N/lxd/M` (slashes URL-encoded in the path).' });
export const UnitNumber = z
  .string()
  .regex(/^(?:0|[1-9][0-9]{0,8})$/)
  .meta({ description: "The unit's number: `N` of `app/N`." });

export const UserName = z
  .string()
  .regex(NAME_PATTERN)
  .meta({ description: 'A user name (as model names).' });

/** Each path parameter of the route table, with the words a 400 uses for it. */
export const PATH_PARAMETERS = {
  model: { schema: ModelName, what: 'model name' },
  name: { schema: UserName, what: 'user name' },
  user: { schema: UserName, what: 'user name' },
  app: { schema: ApplicationName, what: 'application name' },
  id: { schema: MachineId, what: 'machine id' },
  n: { schema: UnitNumber, what: 'unit number' },
} as const;
export type PathParameterName = keyof typeof PATH_PARAMETERS;

export const IdempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/)
  .meta({
    description:
      'Makes a retry safe: the same key with the same method, path and body within 24 hours answers the first answer again and does nothing more.',
  });

export const ForceQuery = z.object({
  force: z
    .enum(['true', 'false', ''])
    .optional()
    .meta({ description: 'Also remove the machine’s units and containers; empty means true.' }),
});

/** A pattern for the whole numbers 1 to `max`, a three-digit bound (the audit page's). */
function upTo(max: number): string {
  if (!Number.isInteger(max) || max < 100 || max > 999) throw new Error(`upTo(${max})`);
  const [h, t, u] = [...String(max)].map(Number) as [number, number, number];
  const hundreds = [h > 1 ? `[1-${h - 1}][0-9]{2}` : '', t > 0 ? `${h}[0-${t - 1}][0-9]` : '']
    .concat(`${h}${t}[0-${u}]`)
    .filter(Boolean);
  return `^(?:[1-9][0-9]?|${hundreds.join('|')})$`;
}

/** A page size, 1 to LIMITS.auditPage (the audit's and the models list's). */
function pageLimit(description: string) {
  return z
    .string()
    .regex(/^[1-9][0-9]{0,2}$/, {
      error: `must be a whole number from 1 to ${LIMITS.auditPage}`,
    })
    .refine((v) => Number(v) <= LIMITS.auditPage, {
      error: `must be a whole number from 1 to ${LIMITS.auditPage}`,
    })
    .optional()
    .meta({
      description,
      // the regex and the bound above as one pattern (the document's, for 1 to 500)
      pattern: upTo(LIMITS.auditPage),
    });
}

const AuditLimit = pageLimit(`Entries per page, 1 to ${LIMITS.auditPage} (default 100).`);

export const AuditQuery = z.strictObject({
  since: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'Only entries at or after this time (RFC 3339).' }),
  limit: AuditLimit,
  cursor: text(LIMITS.cursor).optional().meta({
    pattern: '^[A-Za-z0-9_-]+$',
    description:
      'The `cursor` of the previous page: an opaque token only the server makes; any other is `400 invalid cursor`.',
  }),
});

export const AllAuditQuery = AuditQuery.extend({
  user: UserName.optional().meta({ description: 'Only this user’s entries.' }),
});

// ---------------------------------------------------------------- request bodies

export const AddUser = z
  .strictObject({
    name: nameText('user'),
    // Cognito's own field format: 6 characters at least (its weakest policy), and
    // no whitespace at either end (its pattern `[\S]+.*[\S]+`)
    password: text(LIMITS.password)
      .min(6, { error: 'must be at least 6 characters' })
      .refine((p) => p.trim() === p, { error: 'must not begin or end with whitespace' })
      .meta({
        pattern: '^\\S(?:[\\s\\S]*\\S)?$',
        description:
          'Set as the user’s permanent password in the pool; never stored or logged. The pool’s own password policy applies too (400 with its reason).',
      }),
  })
  .meta({ id: 'AddUserRequest' });

export const SetControllerAccess = z
  .strictObject({ access: z.enum(CONTROLLER_LEVELS) })
  .meta({ id: 'SetControllerAccessRequest' });

export const SetModelAccess = z
  .strictObject({ access: z.enum(MODEL_LEVELS) })
  .meta({ id: 'SetModelAccessRequest' });

export const CreateModel = z
  .strictObject({
    name: nameText('model'),
    region: text(LIMITS.region)
      .superRefine(refusedBy((v) => (REGION_PATTERN.test(v) ? undefined : `invalid region "${v}"`)))
      .regex(REGION_PATTERN)
      .optional()
      .meta({ description: 'An EC2 region, e.g. `us-east-1`; one EC2 does not offer is a 400.' }),
    constraints: ConstraintText.optional(),
    harvestMode: HarvestModeSchema.optional(),
    availabilitySets: z.boolean().optional(),
    reprovisionLost: z.boolean().optional(),
  })
  .meta({ id: 'CreateModelRequest' });

export const UpdateModel = z
  .strictObject({
    harvestMode: HarvestModeSchema.optional(),
    reprovisionLost: z.boolean().optional(),
    availabilitySets: z.boolean().optional().meta({
      description: 'Fixed at creation: only the current value is accepted (409 otherwise).',
    }),
  })
  .meta({ id: 'UpdateModelRequest' });

export const SetConstraints = z
  .strictObject({ constraints: ConstraintText })
  .meta({ id: 'SetConstraintsRequest' });

export const Deploy = z
  .strictObject({
    name: nameText('application'),
    base: BaseText.meta({ description: 'e.g. `ubuntu@22.04`' }),
    charm: text(LIMITS.charm)
      .optional()
      .meta({ description: "Defaults to the application's name." }),
    constraints: ConstraintText.optional(),
    numUnits: z.number().int().min(0).max(LIMITS.count).optional(),
    to: list(UnitPlacementText, LIMITS.count).optional(),
    subordinate: z.boolean().optional().meta({
      description:
        'A subordinate is deployed with no units, no `to` and no constraints (400 or 409 otherwise).',
    }),
    dryRun: DryRunFlag.optional(),
  })
  .meta({ id: 'DeployRequest' });

export const Relate = z
  .strictObject({
    endpoints: z
      .array(EndpointText)
      .superRefine((list, ctx) => {
        if (list.length !== LIMITS.endpoints)
          ctx.addIssue({
            code: 'custom',
            message: `a relation needs exactly two endpoints, got ${list.length}`,
            params: { whole: true, code: 'bad-request' },
          });
      })
      .min(LIMITS.endpoints)
      .max(LIMITS.endpoints)
      .meta({
        uniqueItems: true,
        description:
          'Two endpoints, `app` or `app:endpoint`, of two different applications (relating an ' +
          'application to itself is a 400: a rule across the two items the schema states only for ' +
          'identical ones).',
      }),
  })
  .meta({ id: 'RelateRequest' });

export const AddUnits = z
  .strictObject({
    count: z.number().int().min(1).max(LIMITS.count).optional(),
    to: list(UnitPlacementText, LIMITS.count).optional(),
    dryRun: DryRunFlag.optional(),
  })
  .meta({ id: 'AddUnitsRequest' });

export const AddMachines = z
  .strictObject({
    count: z.number().int().min(1).max(LIMITS.count).optional(),
    base: BaseText.optional().meta({ description: 'Defaults to `ubuntu@24.04`.' }),
    constraints: constraintText({ container: false }).optional(),
    placement: PlacementText.optional().meta({
      pattern: `^$|${placementPattern('machine')}`,
      description:
        '`lxd:N`, `lxd`, `zone=…` (one of the model’s region), `subnet=…`, `ssh:[user@]host`. ' +
        'With a directive other than `lxd`, `count` must be 1 (400 `cannot use -n when ' +
        'specifying a placement directive`): a rule across two fields the schema does not state.',
    }),
    dryRun: DryRunFlag.optional(),
  })
  .meta({ id: 'AddMachinesRequest' });

export const Retry = z
  .strictObject({ constraints: ConstraintText.optional() })
  .meta({ id: 'RetryRequest' });

// ---------------------------------------------------------------- responses

// The answers the services build are defined beside them (service/views.ts): named here too.
export {
  Application,
  ConstraintsAnswer,
  Machine,
  MACHINE_STATUSES,
  Model,
  PlacedUnit,
  Status,
  type ApplicationView,
  type ConstraintsView,
  type MachineView,
  type ModelView,
  type PlacedUnitView,
  type StatusView,
} from '../service/views';

export const ModelList = z
  .object({
    models: z.array(ModelListEntry),
    cursor: z.string().optional().meta({
      description:
        'Present when more models follow (a page was asked for: `summary`, `limit` or `cursor`).',
    }),
  })
  .meta({ id: 'ModelList' });

/** Unknown query parameters are ignored, as before `summary` existed (a cache-buster must not break the list). */
export const ModelsQuery = z.object({
  summary: z
    .enum(['true', 'false', ''])
    .optional()
    .meta({
      description:
        "Also each model's machine and unit counts, last change and the caller's access; empty means " +
        'true. A summary is paged (100 models by default, by name): follow `cursor`.',
    }),
  limit: pageLimit(
    'Models per page, 1 to 500; with it (or `cursor`, or `summary`) the list is paged by name ' +
      '(default 100), else every model is answered at once.',
  ),
  cursor: text(LIMITS.cursor).optional().meta({
    pattern: '^[A-Za-z0-9_-]+$',
    description:
      'The `cursor` of the previous page: an opaque token only the server makes; any other is `400 invalid cursor`.',
  }),
});

export const DeployAnswer = z
  .object({ application: Application, units: z.array(PlacedUnit) })
  .meta({ id: 'DeployAnswer' });

export const UnitsAnswer = z.object({ units: z.array(PlacedUnit) }).meta({ id: 'UnitsAnswer' });

export const Relation = z
  .object({ endpoints: z.tuple([z.string(), z.string()]).meta({ description: 'Sorted.' }) })
  .meta({ id: 'Relation' });

export const MachinesAnswer = z
  .object({ machines: z.array(z.object({ id: z.string() })) })
  .meta({ id: 'MachinesAnswer' });

export const AuthInfo = z
  .object({
    region: z.string(),
    userPoolId: z.string(),
    clientId: z.string(),
    endpoint: z
      .string()
      .optional()
      .meta({ description: 'Where the pool answers, when not AWS’s regional endpoint.' }),
  })
  .meta({ id: 'AuthInfo' });

export const WhoAmI = z
  .object({ user: z.string(), access: z.enum(CONTROLLER_LEVELS) })
  .meta({ id: 'WhoAmI' });

export const User = z
  .object({ name: z.string(), access: z.enum(CONTROLLER_LEVELS) })
  .meta({ id: 'User' });
export type UserView = z.infer<typeof User>;

export const UserList = z.object({ users: z.array(User) }).meta({ id: 'UserList' });

export const ControllerGrant = z
  .object({ user: z.string(), access: z.enum(CONTROLLER_LEVELS) })
  .meta({ id: 'ControllerGrant' });

export const ModelGrant = z
  .object({ user: z.string(), access: z.enum(MODEL_LEVELS) })
  .meta({ id: 'ModelGrant' });

export const ModelGrantList = z
  .object({ users: z.array(ModelGrant) })
  .meta({ id: 'ModelGrantList' });

export const AuditEntry = z
  .object({
    time: Timestamp,
    user: z.string(),
    method: z.string(),
    path: z.string(),
    model: z.string().optional(),
    status: z.number().int(),
    requestId: z.string(),
    idempotencyKey: z.string().optional(),
  })
  .meta({ id: 'AuditEntry' });

export const AuditPage = z
  .object({
    entries: z.array(AuditEntry),
    cursor: z.string().optional().meta({ description: 'Present when more entries follow.' }),
  })
  .meta({ id: 'AuditPage' });

/** The document itself: any JSON object (it describes itself no further). */
export const OpenApiDocument = z
  .looseObject({ openapi: z.string() })
  .meta({ id: 'OpenApiDocument' });

// ---------------------------------------------------------------- errors

// Every `code` the API answers with (API.md §1 and docs/api.md), each with its status: one
// table, core/error-codes.ts.
export { ERROR_CODES, type ErrorCode } from '../core/error-codes';

/** The contract's error body, whatever the route: `{ "error": { "code", "message" } }`. */
export const ErrorBody = z
  .object({ error: z.object({ code: z.enum(ERROR_CODES), message: z.string() }) })
  .meta({ id: 'Error' });

/** The error body as one route answers it with one status: only the codes it can answer. */
export function errorBodyWith(codes: readonly [ErrorCode, ...ErrorCode[]]) {
  return z.object({ error: z.object({ code: z.enum(codes), message: z.string() }) });
}
