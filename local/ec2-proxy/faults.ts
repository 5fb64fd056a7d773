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
const ACTION_KEY = /^[a-z][A-Za-z0-9]*$/;

/** A request body the admin API refuses (answered 400 `bad-request`). */
export class AdminBadRequestError extends Error {
  override readonly name = 'AdminBadRequestError';
}

// us-east-1a, eu-central-1c, and Local Zones such as us-east-1-bos-1a.
const ZONE_NAME = /^[a-z]{2}(-[a-z0-9]+)+[a-z]$/;
// EC2 error codes: InsufficientInstanceCapacity, InvalidSubnetID.NotFound, …
const ERROR_CODE = /^[A-Z][A-Za-z0-9]*(\.[A-Za-z0-9]+)*$/;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isZoneState(value: string): value is ZoneState {
  return (ZONE_STATES as readonly string[]).includes(value);
}

function checkZoneName(field: string, zone: string): void {
  if (!ZONE_NAME.test(zone)) {
    throw new AdminBadRequestError(`"${field}": "${zone}" is not an availability zone name`);
  }
}

function parseZoneCodes(value: unknown): Record<string, string> {
  if (!isPlainObject(value)) throw new AdminBadRequestError('"zones" must be an object');
  const zones: Record<string, string> = {};
  for (const [zone, code] of Object.entries(value)) {
    checkZoneName('zones', zone);
    if (typeof code !== 'string') {
      throw new AdminBadRequestError(`"zones.${zone}" must be a string (an EC2 error code)`);
    }
    if (!ERROR_CODE.test(code)) {
      throw new AdminBadRequestError(`"zones.${zone}": "${code}" is not an EC2 error code`);
    }
    zones[zone] = code;
  }
  return zones;
}

function parseZoneStates(value: unknown): Record<string, ZoneState> {
  if (!isPlainObject(value)) throw new AdminBadRequestError('"zoneStates" must be an object');
  const states: Record<string, ZoneState> = {};
  for (const [zone, state] of Object.entries(value)) {
    checkZoneName('zoneStates', zone);
    if (typeof state !== 'string') {
      throw new AdminBadRequestError(`"zoneStates.${zone}" must be a string`);
    }
    if (!isZoneState(state)) {
      throw new AdminBadRequestError(
        `"zoneStates.${zone}": unknown zone state "${state}" (one of ${ZONE_STATES.join(', ')})`,
      );
    }
    states[zone] = state;
  }
  return states;
}

function parseLoseResponses(
  value: unknown,
  isKnownAction: (action: string) => boolean,
): Record<string, number> {
  if (!isPlainObject(value)) throw new AdminBadRequestError('"loseResponses" must be an object');
  const out: Record<string, number> = {};
  for (const [key, count] of Object.entries(value)) {
    const action = key.charAt(0).toUpperCase() + key.slice(1);
    if (!ACTION_KEY.test(key) || !isKnownAction(action)) {
      throw new AdminBadRequestError(
        `"loseResponses": unknown field "${key}" (expected lower-camel EC2 action names such as "runInstances")`,
      );
    }
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
      throw new AdminBadRequestError(`"loseResponses.${key}" must be an integer of at least 0`);
    }
    if (count > 0) out[key] = count;
  }
  return out;
}

function parseActionErrors(
  value: unknown,
  isKnownAction: (action: string) => boolean,
): Record<string, string> {
  if (!isPlainObject(value)) throw new AdminBadRequestError('"errors" must be an object');
  const out: Record<string, string> = {};
  for (const [key, code] of Object.entries(value)) {
    const action = key.charAt(0).toUpperCase() + key.slice(1);
    if (!ACTION_KEY.test(key) || !isKnownAction(action)) {
      throw new AdminBadRequestError(
        `"errors": unknown field "${key}" (expected lower-camel EC2 action names such as "terminateInstances")`,
      );
    }
    if (typeof code !== 'string' || !ERROR_CODE.test(code)) {
      throw new AdminBadRequestError(`"errors.${key}" must be an EC2 error code`);
    }
    out[key] = code;
  }
  return out;
}

function parseUnlisted(value: unknown): string[] {
  if (!Array.isArray(value))
    throw new AdminBadRequestError('"unlisted" must be an array of instance ids');
  if (value.length > MAX_UNLISTED) {
    throw new AdminBadRequestError(`"unlisted" holds at most ${MAX_UNLISTED} instance ids`);
  }
  for (const id of value) {
    if (typeof id !== 'string' || !INSTANCE_ID.test(id)) {
      throw new AdminBadRequestError(
        `"unlisted": ${JSON.stringify(id)} is not an instance id (i- and 8 or 17 hex digits)`,
      );
    }
  }
  return [...new Set(value as string[])];
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
  if (!isPlainObject(body)) throw new AdminBadRequestError('the body must be a JSON object');
  for (const key of Object.keys(body)) {
    if (!FAULT_FIELDS.includes(key)) {
      throw new AdminBadRequestError(
        `unknown field "${key}" (expected ${FAULT_FIELDS.map((f) => `"${f}"`).join(', ')})`,
      );
    }
  }
  if (body.unavailable !== undefined && typeof body.unavailable !== 'boolean') {
    throw new AdminBadRequestError('"unavailable" must be true or false');
  }
  const errors = body.errors === undefined ? {} : parseActionErrors(body.errors, isKnownAction);
  const unlisted = body.unlisted === undefined ? [] : parseUnlisted(body.unlisted);
  return {
    zones: body.zones === undefined ? {} : parseZoneCodes(body.zones),
    zoneStates: body.zoneStates === undefined ? {} : parseZoneStates(body.zoneStates),
    unavailable: body.unavailable === true,
    loseResponses:
      body.loseResponses === undefined ? {} : parseLoseResponses(body.loseResponses, isKnownAction),
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
