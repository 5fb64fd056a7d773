import {
  checkContainerHost,
  checkUnitMachineAssignment,
  checkZoneInRegion,
  PlacementError,
} from '../core';
import type { Placement } from '../core';
import { EntityConflictError } from '../state/errors';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import type { ServiceContext } from './context';
import { checkOffered } from './offerings';
import { checkContainerBase, parseUnitPlacements } from './placement';

/**
 * Parses and checks `to` directives for units of `app` before anything is
 * written or any number spent, so deploy can refuse bad placement before it
 * records the application: zone in the region, target machines exist, are
 * alive and of the unit's base, containers only on top-level machines.
 */
export async function checkUnitPlacements(
  ctx: ServiceContext,
  model: ModelRecord,
  app: Pick<ApplicationRecord, 'name' | 'base'>,
  count: number,
  directives: readonly string[],
): Promise<Placement[]> {
  if (model.availabilitySets && directives.length > 0) {
    // every instance exists for one application's units (Juju's Azure availability sets)
    throw new PlacementError('unit placement is not supported with availability-sets-enabled');
  }
  const placements = parseUnitPlacements(directives).slice(0, count);
  for (const p of placements) if (p.kind === 'zone') checkZoneInRegion(p.zone, model.region);
  await checkOffered(ctx, model.region, {
    zones: placements.flatMap((p) => (p.kind === 'zone' ? [p.zone] : [])),
  });
  for (const p of placements) {
    if (p.kind === 'machine') {
      const target = await ctx.repo.getMachine(model.name, p.machineId);
      checkUnitMachineAssignment({
        subordinate: false,
        unitBase: app.base,
        machineBase: target.base,
      });
      if (target.life !== 'alive')
        throw new EntityConflictError(`machine ${target.id} is being destroyed`);
    } else if (p.kind === 'container' && p.machineId !== undefined) {
      checkContainerHost(p.machineId);
      const host = await ctx.repo.getMachine(model.name, p.machineId);
      if (host.life !== 'alive')
        throw new EntityConflictError(`machine ${host.id} is being destroyed`);
      checkContainerBase(app.base, host.base);
    } else if (p.kind === 'container') {
      checkContainerBase(app.base);
    }
  }
  return placements;
}
