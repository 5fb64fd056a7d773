import { z } from 'zod';
import {
  AdminBadRequestError,
  inputText,
  isActionKey,
  issueKey,
  keyedRecord,
  onlyFields,
  parseAdminBody,
} from './admin-body';

/**
 * The fault set of `PUT /_admin/faults` (API.md, section 2): an EC2 error code per
 * zone for RunInstances, and a reported state per zone for DescribeAvailabilityZones.
 */

/** States DescribeAvailabilityZones can report (EC2's `AvailabilityZoneState`). */
export const ZONE_STATES = [
  'available',
  'information',
  'impaired',
  'unavailable',
  'constrained',
] as const;
export type ZoneState = (typeof ZONE_STATES)[number];

export interface FaultSet {
  /** Zone name → the EC2 error code RunInstances in that zone fails with. */
  readonly zones: Readonly<Record<string, string>>;
  /** Zone name → the state DescribeAvailabilityZones reports for it. */
  readonly zoneStates: Readonly<Record<string, ZoneState>>;
  /** Every EC2 call answers HTTP 503 `Unavailable` while true. */
  readonly unavailable: boolean;
  /**
   * Lower-camel action name → how many more calls of it are carried out and
   * then left unanswered (the connection closed); counts down as they happen.
   */
  readonly loseResponses: Readonly<Record<string, number>>;
  /**
   * Lower-camel action name → the EC2 error code every call of it answers
   * (`{ "terminateInstances": "OperationNotPermitted" }`), for errors no
   * retry can fix: permissions, termination protection, an account not opted in.
   */
  readonly errors?: Readonly<Record<string, string>>;
  /**
   * Instance ids DescribeInstances and DescribeInstanceStatus leave out of
   * their answers, as EC2's eventually consistent listing does for moments
   * after a launch; asked for by id, they answer `InvalidInstanceID.NotFound`
   * as EC2 does then. Everything else about the instances goes on as usual.
   */
  readonly unlisted?: readonly string[];
}

export const NO_FAULTS: FaultSet = {
  zones: {},
  zoneStates: {},
  unavailable: false,
  loseResponses: {},
};

const FAULT_FIELDS = ['zones', 'zoneStates', 'unavailable', 'loseResponses', 'errors', 'unlisted'];
const INSTANCE_ID = /^i-([0-9a-f]{8}|[0-9a-f]{17})$/;
/** At most this many ids in `unlisted` (a test hides a few). */
const MAX_UNLISTED = 1000;

export { AdminBadRequestError };

// us-east-1a, eu-central-1c, and Local Zones such as us-east-1-bos-1a.
const ZONE_NAME = /^[a-z]{2}(-[a-z0-9]+)+[a-z]$/;
// EC2 error codes: InsufficientInstanceCapacity, InvalidSubnetID.NotFound, …
const ERROR_CODE = /^[A-Z][A-Za-z0-9]*(\.[A-Za-z0-9]+)*$/;

/** Zone name → value; `field` names the object in the messages. */
function byZone<V extends z.ZodType>(field: string, value: V) {
  return keyedRecord(z.string().regex(ZONE_NAME), value, {
    badKey: (key) => `"${field}": "${key}" is not an availability zone name`,
    notObject: `"${field}" must be an object`,
  });
}

/** Lower-camel action name → value; `example` is the action the message suggests. */
function byAction<V extends z.ZodType>(
  field: string,
  example: string,
  isKnownAction: (action: string) => boolean,
  value: V,
) {
  return keyedRecord(
    z.string().refine((key) => isActionKey(key, isKnownAction)),
    value,
    {
      badKey: (key) =>
        `"${field}": unknown field "${key}" (expected lower-camel EC2 action names such as "${example}")`,
      notObject: `"${field}" must be an object`,
    },
  );
}

const zoneCodes = byZone(
  'zones',
  z
    .string({ error: (iss) => `"zones.${issueKey(iss)}" must be a string (an EC2 error code)` })
    .regex(ERROR_CODE, {
      error: (iss) =>
        `"zones.${issueKey(iss)}": "${inputText(iss.input)}" is not an EC2 error code`,
    }),
);

const zoneStates = byZone(
  'zoneStates',
  z.string({ error: (iss) => `"zoneStates.${issueKey(iss)}" must be a string` }).pipe(
    z.enum(ZONE_STATES, {
      error: (iss) =>
        `"zoneStates.${issueKey(iss)}": unknown zone state "${inputText(iss.input)}" (one of ${ZONE_STATES.join(', ')})`,
    }),
  ),
);

const notAnInstanceId = (iss: { input?: unknown }) =>
  `"unlisted": ${JSON.stringify(iss.input)} is not an instance id (i- and 8 or 17 hex digits)`;

const unlistedIds = z
  .array(z.string({ error: notAnInstanceId }).regex(INSTANCE_ID, { error: notAnInstanceId }), {
    error: '"unlisted" must be an array of instance ids',
  })
  .max(MAX_UNLISTED, { error: `"unlisted" holds at most ${MAX_UNLISTED} instance ids` });

function faultSetSchema(isKnownAction: (action: string) => boolean) {
  const loseResponses = byAction(
    'loseResponses',
    'runInstances',
    isKnownAction,
    z
      .number({
        error: (iss) => `"loseResponses.${issueKey(iss)}" must be an integer of at least 0`,
      })
      .refine((n) => Number.isInteger(n) && n >= 0, {
        error: (iss) => `"loseResponses.${issueKey(iss)}" must be an integer of at least 0`,
      }),
  );
  const errors = byAction(
    'errors',
    'terminateInstances',
    isKnownAction,
    z
      .string({ error: (iss) => `"errors.${issueKey(iss)}" must be an EC2 error code` })
      .regex(ERROR_CODE, { error: (iss) => `"errors.${issueKey(iss)}" must be an EC2 error code` }),
  );
  return onlyFields(FAULT_FIELDS, {
    notObject: 'the body must be a JSON object',
    unknown: (key) =>
      `unknown field "${key}" (expected ${FAULT_FIELDS.map((f) => `"${f}"`).join(', ')})`,
  }).pipe(
    // in the order the fields were always checked, so a body with two faults names the same one
    z.object({
      unavailable: z.boolean({ error: '"unavailable" must be true or false' }).optional(),
      errors: errors.optional(),
      unlisted: unlistedIds.optional(),
      zones: zoneCodes.optional(),
      zoneStates: zoneStates.optional(),
      loseResponses: loseResponses.optional(),
    }),
  );
}

/** The EC2 error code `action` (upper-camel) is set to answer with, if any. */
export function actionError(faults: FaultSet, action: string): string | undefined {
  const key = action.charAt(0).toLowerCase() + action.slice(1);
  const errors = faults.errors ?? {};
  return Object.hasOwn(errors, key) ? errors[key] : undefined;
}

/** Validates a `PUT /_admin/faults` body (already JSON-decoded); every field is optional. */
export function parseFaultSet(
  body: unknown,
  isKnownAction: (action: string) => boolean = () => true,
): FaultSet {
  const parsed = parseAdminBody(faultSetSchema(isKnownAction), body);
  const errors = parsed.errors ?? {};
  const unlisted = [...new Set(parsed.unlisted ?? [])];
  return {
    zones: parsed.zones ?? {},
    zoneStates: parsed.zoneStates ?? {},
    unavailable: parsed.unavailable === true,
    loseResponses: Object.fromEntries(
      Object.entries(parsed.loseResponses ?? {}).filter(([, count]) => count > 0),
    ),
    // shown only when set, so the answers of the earlier fields read as they did
    ...(Object.keys(errors).length > 0 ? { errors } : {}),
    ...(unlisted.length > 0 ? { unlisted } : {}),
  };
}

/**
 * Takes one lost response for `action` (upper-camel) if any are left: the fault
 * set with that count lowered, or undefined when this call is answered normally.
 */
export function takeLostResponse(faults: FaultSet, action: string): FaultSet | undefined {
  const key = action.charAt(0).toLowerCase() + action.slice(1);
  const left = Object.hasOwn(faults.loseResponses, key) ? (faults.loseResponses[key] ?? 0) : 0;
  if (left <= 0) return undefined;
  const loseResponses: Record<string, number> = { ...faults.loseResponses };
  if (left === 1) delete loseResponses[key];
  else loseResponses[key] = left - 1;
  return { ...faults, loseResponses };
}

/** Zones a faulted launch's message suggests instead: known, not faulted, reported available. */
export function alternativeZones(
  allZones: readonly string[],
  target: string,
  faults: FaultSet,
): string[] {
  return allZones
    .filter((z) => z !== target && faults.zones[z] === undefined)
    .filter((z) => (faults.zoneStates[z] ?? 'available') === 'available')
    .sort();
}
