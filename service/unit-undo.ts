import { EntityNotFoundError, retryOnConcurrentChange } from '../state/errors';
import { setMachinePrincipals } from '../state/machine-writes';
import { deleteUnitWithSubordinates } from '../state/unit-writes';
import type { Life } from '../state/types';
import type { ServiceContext } from './context';

/** A unit an add-unit request recorded, and the machines it made for it (a host, a container). */
export interface RecordedUnit {
  name: string;
  machine: string;
  created: string[];
}

const orUndefined = (err: unknown): undefined => {
  if (err instanceof EntityNotFoundError) return undefined;
  throw err;
};

/**
 * Takes back the units a refused add-unit recorded before its refusal, so
 * the request writes all or nothing (issue 23 item 7c): each unit goes with
 * its subordinates; a machine made for it goes Dead (a new host still
 * listing its container goes Dying, and Dead with the container's removal)
 * and its workflow is told; a machine it was placed on keeps its life.
 */
export async function undoUnits(
  ctx: ServiceContext,
  model: string,
  recorded: readonly RecordedUnit[],
): Promise<void> {
  const dead: string[] = [];
  for (const r of [...recorded].reverse()) {
    await retryOnConcurrentChange(async () => {
      const unit = await ctx.repo.getUnit(model, r.name).catch(orUndefined);
      const tx = ctx.repo.transaction();
      if (unit) {
        deleteUnitWithSubordinates(tx, unit);
      }
      const going: string[] = [];
      for (const id of new Set([r.machine, ...r.created])) {
        const m = await ctx.repo.getMachine(model, id).catch(orUndefined);
        if (!m) continue;
        const principals = m.principals.filter((p) => p !== r.name);
        let life: Life = m.life;
        if (r.created.includes(id) && principals.length === 0 && m.life === 'alive') {
          life = m.containers.length > 0 ? 'dying' : 'dead';
        }
        setMachinePrincipals(tx, m, principals, life);
        if (life === 'dead' && m.life !== 'dead') going.push(id);
      }
      await ctx.repo.commit(tx);
      dead.push(...going);
    });
  }
  // best effort, as every removal's: the model's sweep tells a Dead machine again
  const told = await Promise.allSettled(
    dead.map((id) => ctx.workflows.signal(model, id, 'destroy')),
  );
  const failed = told.filter((t) => t.status === 'rejected').length;
  if (failed > 0) ctx.log.warn('could not tell some Dead machines', { model, failed });
}
