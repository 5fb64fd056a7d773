/**
 * Availability-zone choice, after Juju's provisioner
 * (`machineAvailabilityZoneDistribution`), made deterministic: ties go to
 * the zone whose name sorts first rather than to a random one.
 */
import { NoSuitableZoneError, PlacementError } from './errors';
import { compareStrings, goQuote } from './text';

/** An availability zone as DescribeAvailabilityZones reports it. */
export interface AvailabilityZone {
  readonly name: string;
  /** `available`, `information`, `impaired`, `unavailable`, `constrained`. */
  readonly state: string;
}

export interface ZoneChoice {
  /** The machine the zones are for (it appears in the error). */
  readonly machineId: string;
  /** The region's zones, with their current state. */
  readonly zones: readonly AvailabilityZone[];
  /**
   * How many machines of this machine's distribution group are in (or
   * claimed for) each zone; zones not listed have none.
   */
  readonly population: ReadonlyMap<string, number> | Readonly<Record<string, number>>;
  /** Zones this machine already failed in (zone-specific errors). */
  readonly failedZones?: readonly string[];
  /** The machine's `zones` constraint; empty or absent allows every zone. */
  readonly zonesConstraint?: readonly string[];
  /** The zone of a `zone=` placement, which allows only that zone. */
  readonly placementZone?: string;
}

function isMap(population: ZoneChoice['population']): population is ReadonlyMap<string, number> {
  return population instanceof Map;
}

function countIn(population: ZoneChoice['population'], zone: string): number {
  if (isMap(population)) return population.get(zone) ?? 0;
  return Object.hasOwn(population, zone) ? (population[zone] ?? 0) : 0;
}

/**
 * The zones to try for a machine, in order: only `available` zones, only
 * those the `zones` constraint and a `zone=` placement allow, none it already
 * failed in; least populous (within its distribution group) first, ties by
 * zone name. Throws `NoSuitableZoneError`
 * (`suitable availability zone for machine 3 not found`) when none is left.
 */
export function orderZones(choice: ZoneChoice): string[] {
  const failed = new Set(choice.failedZones ?? []);
  const allowed =
    choice.zonesConstraint !== undefined && choice.zonesConstraint.length > 0
      ? new Set(choice.zonesConstraint)
      : undefined;
  const names = new Set<string>();
  for (const zone of choice.zones) {
    if (zone.state !== 'available') continue;
    if (failed.has(zone.name)) continue;
    if (allowed !== undefined && !allowed.has(zone.name)) continue;
    if (choice.placementZone !== undefined && zone.name !== choice.placementZone) continue;
    names.add(zone.name);
  }
  if (names.size === 0) {
    throw new NoSuitableZoneError(
      `suitable availability zone for machine ${choice.machineId} not found`,
    );
  }
  return [...names].sort(
    (a, b) => countIn(choice.population, a) - countIn(choice.population, b) || compareStrings(a, b),
  );
}

/**
 * The EC2 provider's check of a `zone=` placement against the region's
 * zones: `invalid availability zone "x"` when unknown,
 * `availability zone "x" is "impaired"` when not available.
 */
export function checkPlacementZone(zone: string, zones: readonly AvailabilityZone[]): void {
  const found = zones.find((z) => z.name === zone);
  if (found === undefined) throw new PlacementError(`invalid availability zone ${goQuote(zone)}`);
  if (found.state !== 'available') {
    throw new PlacementError(`availability zone ${goQuote(zone)} is ${goQuote(found.state)}`);
  }
}
