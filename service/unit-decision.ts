import { checkUnitOnMachineBase, type Placement } from '../core';
import { EntityConflictError } from '../state/errors';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import { collapseConstraints } from './constraints';
import type { ServiceContext } from './context';
import { InvalidRequestError } from './errors';
import { relatedSubordinates } from './subordinates';
import { checkUnitPlacements } from './unit-placement';

const MAX_UNITS = 1000;

/** Refuses units for an application being destroyed. */
export function checkApplicationAlive(app: ApplicationRecord): void {
  if (app.life !== 'alive')
    throw new EntityConflictError(`application "${app.name}" is being destroyed`);
}

/** What add-unit decided before it writes anything (the same for its plan). */
export interface AddUnitsDecision {
  model: ModelRecord;
  app: ApplicationRecord;
  count: number;
  placements: Placement[];
  /** The units' constraints: the application's over the model's. */
  constraints: string;
}

/**
 * add-unit's decision: every check a real request makes before it writes
 * (count, model and application alive, not subordinate, placement, the
 * related subordinates' bases) and the collapsed constraints. Undefined when
 * there is nothing to add (count 0).
 */
export async function decideAddUnits(
  ctx: ServiceContext,
  modelName: string,
  appName: string,
  count: number,
  directives: readonly string[] = [],
): Promise<AddUnitsDecision | undefined> {
  if (!Number.isInteger(count) || count < 0 || count > MAX_UNITS) {
    throw new InvalidRequestError(
      `count must be an integer from 0 to ${MAX_UNITS}, got ${String(count)}`,
    );
  }
  const model = await ctx.repo.getLiveModel(modelName);
  const app = await ctx.repo.getApplication(modelName, appName);
  checkApplicationAlive(app);
  if (app.subordinate)
    throw new EntityConflictError(`cannot add units to subordinate application "${appName}"`);
  if (count === 0) return undefined;
  const placements = await checkUnitPlacements(ctx, model, app, count, directives);
  for (const sub of await relatedSubordinates(ctx, modelName, appName))
    checkUnitOnMachineBase(sub.base, app.base);
  const constraints = collapseConstraints(model.constraints, app.constraints);
  return { model, app, count, placements, constraints };
}
