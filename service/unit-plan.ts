import type { Placement } from '../core';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import type { ServiceContext } from './context';
import { buildPlan, type PlanEntry } from './plans';
import { decideAddUnits } from './unit-decision';
import type { PlanView } from './views';

/**
 * The machines `count` units of an application get, one placement directive
 * each (the rest on new machines), as addUnits writes them: a new machine
 * per unit (zone=/subnet= kept), an existing machine (`N`), a container on
 * an existing host (`lxd:N`) or on a new bare host (`lxd`).
 */
export async function unitPlanEntries(
  ctx: ServiceContext,
  model: ModelRecord,
  app: Pick<ApplicationRecord, 'name' | 'base'>,
  args: {
    firstNumber: number;
    count: number;
    placements: readonly Placement[];
    constraints: string;
  },
): Promise<PlanEntry[]> {
  const entries: PlanEntry[] = [];
  const { constraints } = args;
  for (let i = 0; i < args.count; i++) {
    const p = args.placements[i];
    const units = [`${app.name}/${args.firstNumber + i}`];
    if (p?.kind === 'machine') {
      entries.push({
        kind: 'existing',
        machine: await ctx.repo.getMachine(model.name, p.machineId),
        units,
      });
    } else if (p?.kind === 'container' && p.machineId !== undefined) {
      const host = await ctx.repo.getMachine(model.name, p.machineId);
      entries.push({ kind: 'container', units, base: app.base, constraints, host });
    } else if (p?.kind === 'container') {
      // the new host carries no unit of its own: it counts with the bare machines
      entries.push({ kind: 'launch', units: [], base: app.base, constraints, applications: [] });
      entries.push({ kind: 'container', units, base: app.base, constraints });
    } else {
      entries.push({
        kind: 'launch',
        units,
        base: app.base,
        constraints,
        ...(p !== undefined ? { placement: p } : {}),
        applications: [app.name],
      });
    }
  }
  return entries;
}

/** add-unit with `"dryRun": true`: the same decision, returned as a plan; nothing written. */
export async function planAddUnits(
  ctx: ServiceContext,
  modelName: string,
  appName: string,
  count: number,
  directives: readonly string[] = [],
): Promise<PlanView> {
  const decided = await decideAddUnits(ctx, modelName, appName, count, directives);
  if (decided === undefined) return buildPlan(ctx, await ctx.repo.getLiveModel(modelName), []);
  const { model, app, placements, constraints } = decided;
  const firstNumber = await ctx.repo.nextUnitNumber(modelName, appName);
  return buildPlan(
    ctx,
    model,
    await unitPlanEntries(ctx, model, app, { firstNumber, count, placements, constraints }),
  );
}
