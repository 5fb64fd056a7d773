import { EntityConflictError, EntityNotFoundError, retryOnConcurrentChange } from '../state/errors';
import type { Transaction } from '../state/repository';
import { deleteMachine } from '../state/machine-writes';
import {
  deleteSubordinateUnit,
  deleteUnitWithSubordinates,
  setUnitSubordinates,
} from '../state/unit-writes';
import type { MachineRecord, UnitRecord } from '../state/types';
import type { ServiceContext } from './context';
import { updateMachineMembership } from '../state/writes';

/** The application of a unit name (`wordpress/3` → `wordpress`). */
export const applicationOf = (unit: string): string => unit.slice(0, unit.lastIndexOf('/'));

function emptied(m: Pick<MachineRecord, 'principals' | 'containers'>): boolean {
  return m.principals.length === 0 && m.containers.length === 0;
}

/**
 * Writes a machine's new membership into `tx`; when it is left empty it goes
 * Dead (a container too: its workflow deletes it on its host, then removes
 * it from there and from its host's list; the host stays, even with no
 * containers left), or (manual) is deleted. A machine being destroyed that
 * still hosts containers goes Dying instead: the last container's removal
 * makes it Dead (a host is never Dead while it has containers). Returns the
 * machines that went Dead.
 */
export function writeMachineChange(
  tx: Transaction,
  machine: MachineRecord,
  next: Pick<MachineRecord, 'principals' | 'applications' | 'containers'>,
  /** The machine itself is being destroyed (not just losing its last unit). */
  retiring = false,
): string[] {
  if (!emptied(next)) {
    updateMachineMembership(tx, machine, next);
    return [];
  }
  if (retiring && machine.containers.length > 0) {
    updateMachineMembership(tx, machine, {
      ...next,
      containers: machine.containers,
      life: 'dying',
    });
    return [];
  }
  if (machine.id.includes('/')) {
    updateMachineMembership(tx, machine, { ...next, life: 'dead' });
    return [machine.id];
  }
  if (machine.manual && !retiring) {
    // a manual machine was not created for its units: it stays until destroyed itself (as in Juju)
    updateMachineMembership(tx, machine, next);
    return [];
  }
  if (machine.manual) {
    deleteMachine(tx, machine);
    return [];
  }
  updateMachineMembership(tx, machine, { ...next, life: 'dead' });
  return [machine.id];
}

/** A unit's item under its version, with its subordinates' (state/unit-writes.ts). */
export const removeUnitItems: (tx: Transaction, unit: UnitRecord) => void =
  deleteUnitWithSubordinates;

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
    const dead = writeMachineChange(tx, machine, {
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
    deleteSubordinateUnit(tx, model, unitName);
    if (unit.principal !== undefined) {
      const principal = await ctx.repo.getUnit(model, unit.principal).catch(() => undefined);
      if (principal) {
        setUnitSubordinates(
          tx,
          principal,
          principal.subordinates.filter((s) => s !== unitName),
        );
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

/** Juju's refusal to destroy a machine that still hosts something (but the containers being destroyed). */
function checkEmpty(machine: MachineRecord, leaving: ReadonlySet<string>): void {
  const unit = machine.principals[0];
  if (unit !== undefined)
    throw new EntityConflictError(`machine ${machine.id} has unit "${unit}" assigned`);
  if (machine.containers.some((c) => !leaving.has(c))) {
    throw new EntityConflictError(
      `machine ${machine.id} is hosting containers "${machine.containers.join(', ')}"`,
    );
  }
}

const ignoreNotFound = (err: unknown): undefined => {
  if (err instanceof EntityNotFoundError) return undefined;
  throw err;
};

/**
 * destroy-machine: refused while it hosts units or containers unless
 * `force`, which removes them first (Juju's texts). The emptiness check is
 * made on the same read the write is conditional on, so a unit placed
 * meanwhile is never wiped. A machine already Dead is accepted again.
 */
export async function destroyMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
  force: boolean,
): Promise<void> {
  await ctx.repo.getModel(model);
  const dead: string[] = [];
  const destroyed = new Set<string>();
  for (let round = 0; ; round++) {
    const machine = await ctx.repo
      .getMachine(model, id)
      .catch(round === 0 ? undefined : ignoreNotFound);
    if (machine === undefined || machine.life !== 'alive') break;
    // containers this request destroyed are on their way out: the host goes Dying until they are gone
    if (
      force &&
      (machine.principals.length > 0 || machine.containers.some((c) => !destroyed.has(c)))
    ) {
      for (const container of machine.containers) {
        dead.push(...(await destroyContents(ctx, model, container)));
        destroyed.add(container);
      }
      for (const unit of machine.principals) {
        dead.push(...((await removePrincipalUnit(ctx, model, unit).catch(ignoreNotFound)) ?? []));
      }
      // something may have been placed meanwhile: look again (a bounded number of times)
      if (round < 20) continue;
    }
    const retired = await retireMachine(ctx, model, id, true, destroyed).catch(ignoreNotFound);
    dead.push(...(retired ?? []));
    break;
  }
  await signalDead(ctx, model, [...new Set(dead)]);
}

/** Removes a container's units and then the container (force path). */
async function destroyContents(
  ctx: ServiceContext,
  model: string,
  container: string,
): Promise<string[]> {
  const c = await ctx.repo.getMachine(model, container).catch(ignoreNotFound);
  if (c === undefined) return [];
  const dead: string[] = [];
  for (const unit of c.principals)
    dead.push(...((await removePrincipalUnit(ctx, model, unit).catch(ignoreNotFound)) ?? []));
  dead.push(...((await retireMachine(ctx, model, container, false).catch(ignoreNotFound)) ?? []));
  return dead;
}

/**
 * Takes a machine out of service: Dead, or removed when there is nothing to
 * tear down. With `requireEmpty` it refuses (Juju's texts) a machine that
 * hosts anything on the read the write depends on.
 */
export async function retireMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
  requireEmpty = false,
  /** Containers this request destroyed: the machine goes Dying until they are gone. */
  leaving: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  return retryOnConcurrentChange(async () => {
    const machine = await ctx.repo.getMachine(model, id);
    if (machine.life === 'dead') return [];
    if (requireEmpty) checkEmpty(machine, leaving);
    const tx = ctx.repo.transaction();
    const dead = writeMachineChange(
      tx,
      machine,
      { principals: [], applications: [], containers: [] },
      true,
    );
    await ctx.repo.commit(tx);
    return dead;
  });
}
