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
}

export const NO_FAULTS: FaultSet = { zones: {}, zoneStates: {} };

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

/** Validates a `PUT /_admin/faults` body (already JSON-decoded); both fields are optional. */
export function parseFaultSet(body: unknown): FaultSet {
  if (!isPlainObject(body)) throw new AdminBadRequestError('the body must be a JSON object');
  for (const key of Object.keys(body)) {
    if (key !== 'zones' && key !== 'zoneStates') {
      throw new AdminBadRequestError(`unknown field "${key}" (expected "zones", "zoneStates")`);
    }
  }
  return {
    zones: body.zones === undefined ? {} : parseZoneCodes(body.zones),
    zoneStates: body.zoneStates === undefined ? {} : parseZoneStates(body.zoneStates),
  };
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
