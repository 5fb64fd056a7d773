import { EntityConflictError } from '../state/errors';
import type { ServiceContext } from './context';
import { removePrincipalUnit, signalDead } from './removal';

/**
 * remove-unit: the unit and its subordinates go at once (no agent here has
 * anything to clean up), and a machine left with no principal units goes
 * Dead and is torn down. A subordinate unit goes with its principal or its
 * relation, never alone (Juju refuses it too).
 */
export async function removeUnit(
  ctx: ServiceContext,
  model: string,
  unitName: string,
): Promise<void> {
  await ctx.repo.getModel(model);
  const unit = await ctx.repo.getUnit(model, unitName);
  if (unit.principal !== undefined) {
    throw new EntityConflictError(
      `unit "${unitName}" is a subordinate: remove its principal or the relation`,
    );
  }
  const dead = await removePrincipalUnit(ctx, model, unitName);
  await signalDead(ctx, model, dead);
}
