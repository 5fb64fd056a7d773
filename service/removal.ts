import { EntityConflictError, retryOnConcurrentChange } from '../state/errors';
import { machineKey, unitKey, type Transaction } from '../state/repository';
import type { MachineRecord, UnitRecord } from '../state/types';
import type { ServiceContext } from './context';
import { updateMachineMembership } from './units';

/** The application of a unit name (`wordpress/3` → `wordpress`). */
export const applicationOf = (unit: string): string => unit.slice(0, unit.lastIndexOf('/'));

/**
 * What becomes of a machine that loses principals or containers: with none
 * left it goes Dead (a provisioned machine is then torn down by its workflow;
 * a container or manual machine has nothing to tear down and is removed).
 */
export interface Retirement {
  /** Provisioned machines that went Dead: signal their workflows. */
  dead: string[];
}

function emptied(m: Pick<MachineRecord, 'principals' | 'containers'>): boolean {
  return m.principals.length === 0 && m.containers.length === 0;
}

/**
 * Writes a machine's new membership into `tx`; when it is left empty it goes
 * Dead, or (container, manual) is deleted and its host updated. Returns
 * the provisioned machines that went Dead.
 */
async function writeMachineChange(
  ctx: ServiceContext,
  tx: Transaction,
  machine: MachineRecord,
  next: Pick<MachineRecord, 'principals' | 'applications' | 'containers'>,
): Promise<string[]> {
  if (!emptied(next)) {
    updateMachineMembership(tx, machine, next);
    return [];
  }
  if (machine.id.includes('/')) {
    tx.delete(machineKey(machine.model, machine.id), 'version = :v', {
      ':v': machine.version ?? 0,
    });
    const hostId = machine.id.slice(0, machine.id.indexOf('/'));
    const host = await ctx.repo.getMachine(machine.model, hostId);
    return writeMachineChange(ctx, tx, host, {
      principals: host.principals,
      applications: host.applications,
      containers: host.containers.filter((c) => c !== machine.id),
    });
  }
  if (machine.manual) {
    tx.delete(machineKey(machine.model, machine.id), 'version = :v', {
      ':v': machine.version ?? 0,
    });
    return [];
  }
  updateMachineMembership(tx, machine, { ...next, life: 'dead' });
  return [machine.id];
}

function removeUnitItems(tx: Transaction, unit: UnitRecord): void {
  tx.delete(unitKey(unit.model, unit.name));
  for (const sub of unit.subordinates) tx.delete(unitKey(unit.model, sub));
}

/** Removes one principal unit with its subordinates; its machine goes Dead if left empty. */
export async function removePrincipalUnit(
  ctx: ServiceContext,
  model: string,
  unitName: string,
): Promise<string[]> {
  return retryOnConcurrentChange(async () => {
    const unit = await ctx.repo.getUnit(model, unitName);
    const machine = await ctx.repo.getMachine(model, unit.machine);
    const tx = ctx.repo.transaction();
    removeUnitItems(tx, unit);
    const principals = machine.principals.filter((p) => p !== unitName);
    const dead = await writeMachineChange(ctx, tx, machine, {
      principals,
      applications: [...new Set(principals.map(applicationOf))].sort(),
      containers: machine.containers,
    });
    await ctx.repo.commit(tx);
    return dead;
  });
}

/** Removes one subordinate unit and its name from its principal. */
export async function removeSubordinateUnit(
  ctx: ServiceContext,
  model: string,
  unitName: string,
): Promise<void> {
  await retryOnConcurrentChange(async () => {
    const unit = await ctx.repo.getUnit(model, unitName);
    const tx = ctx.repo.transaction();
    tx.delete(unitKey(model, unitName));
    if (unit.principal !== undefined) {
      const principal = await ctx.repo.getUnit(model, unit.principal).catch(() => undefined);
      if (principal) {
        tx.update(unitKey(model, principal.name), 'SET subordinates = :s, version = :next', {
          condition: 'version = :v',
          values: {
            ':s': principal.subordinates.filter((s) => s !== unitName),
            ':v': principal.version,
            ':next': principal.version + 1,
          },
        });
      }
    }
    await ctx.repo.commit(tx);
  });
}

/** Signals the workflows of machines that went Dead (best effort: the sweep reconciles the rest). */
export async function signalDead(
  ctx: ServiceContext,
  model: string,
  machineIds: readonly string[],
): Promise<void> {
  const results = await Promise.allSettled(
    machineIds.map((id) => ctx.workflows.signal(model, id, 'destroy')),
  );
  results.forEach((r, i) => {
    if (r.status === 'rejected')
      ctx.log.warn('could not signal machine workflow', {
        model,
        machineId: machineIds[i],
        error: String(r.reason),
      });
  });
}

/**
 * destroy-machine: refused while it hosts units or containers unless
 * `force`, which removes them first (Juju's texts). A machine already Dead
 * is accepted again (the request is idempotent).
 */
export async function destroyMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
  force: boolean,
): Promise<void> {
  await ctx.repo.getModel(model);
  const machine = await ctx.repo.getMachine(model, id);
  if (machine.life === 'dead') return;
  if (!force) {
    const unit = machine.principals[0];
    if (unit !== undefined)
      throw new EntityConflictError(`machine ${id} has unit "${unit}" assigned`);
    if (machine.containers.length > 0) {
      throw new EntityConflictError(
        `machine ${id} is hosting containers "${machine.containers.join(', ')}"`,
      );
    }
  }
  const dead: string[] = [];
  for (const container of machine.containers) {
    const c = await ctx.repo.getMachine(model, container).catch(() => undefined);
    for (const unit of c?.principals ?? [])
      dead.push(...(await removePrincipalUnit(ctx, model, unit)));
    // an empty container that survived (never had units) goes now
    if (c && (await ctx.repo.getMachine(model, container).catch(() => undefined))) {
      dead.push(...(await retireMachine(ctx, model, container)));
    }
  }
  for (const unit of machine.principals)
    dead.push(...(await removePrincipalUnit(ctx, model, unit)));
  if (await ctx.repo.getMachine(model, id).catch(() => undefined))
    dead.push(...(await retireMachine(ctx, model, id)));
  await signalDead(ctx, model, [...new Set(dead)]);
}

/** Takes an empty machine out of service: Dead, or removed when there is nothing to tear down. */
export async function retireMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
): Promise<string[]> {
  return retryOnConcurrentChange(async () => {
    const machine = await ctx.repo.getMachine(model, id);
    if (machine.life === 'dead') return [];
    const tx = ctx.repo.transaction();
    const dead = await writeMachineChange(ctx, tx, machine, {
      principals: [],
      applications: [],
      containers: [],
    });
    await ctx.repo.commit(tx);
    return dead;
  });
}
