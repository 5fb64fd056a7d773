/**
 * Where a unit may go, decided on the directive alone (no reads): the zone is
 * the model region's, containers sit on top-level machines, and which
 * directives need a new host of their own.
 */
import { PlacementError } from './errors';
import type { Placement } from './placement';

/** A zone directive must name a zone of the model's region (`us-east-1a` in `us-east-1`). */
export function checkZoneInRegion(zone: string, region: string): void {
  if (!new RegExp(`^${region.replace(/-/g, '\\-')}[a-z]$`).test(zone)) {
    throw new PlacementError(`zone "${zone}" is not an availability zone of region ${region}`);
  }
}

/** Containers go on top-level machines only (`lxd:0`, not `lxd:0/lxd/1`). */
export function checkContainerHost(hostId: string): void {
  if (hostId.includes('/')) {
    throw new PlacementError(`cannot place a container on container "${hostId}"`);
  }
}

/** A new top-level machine is needed for this placement (none, zone=, subnet=, or `lxd` alone). */
export function needsNewHost(p: Placement | undefined): boolean {
  return (
    p === undefined ||
    p.kind === 'zone' ||
    p.kind === 'subnet' ||
    (p.kind === 'container' && p.machineId === undefined)
  );
}
