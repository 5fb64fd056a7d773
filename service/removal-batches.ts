import { ConcurrentChangeError, EntityNotFoundError } from '../state/errors';
import {
  deleteApplication,
  deleteRelation,
  markApplicationDying,
} from '../state/application-writes';
import { TRANSACTION_LIMIT, type ModelContents, type Transaction } from '../state/repository';
import { deleteSubordinateUnit, setUnitSubordinates } from '../state/unit-writes';
import type { MachineRecord, UnitRecord } from '../state/types';
import type { RemovalTarget } from '../temporal/removal';
import type { ServiceContext } from './context';
import {
  applicationOf,
  removePrincipalUnit,
  removeSubordinateUnit,
  removeUnitItems,
  retireMachine,
  writeMachineChange,
} from './removal';

/**
 * Removal in bulk (issue 23): remove-application and destroy-model write
 * many units and machines to a transaction, from one read of the model,
 * instead of three round trips per unit. Each machine's change goes in one
 * transaction with the units it loses, under the versions read, so a
 * concurrent change makes that transaction fail whole; it is read and
 * written again in the next round, and whatever still loses after a few
 * rounds goes one at a time (retried inside, as before).
 */

/**
 * Units plus machines a removal request changes itself; a larger one goes to
 * a removal workflow (workflows/removal.ts) and the request answers at once.
 */
export const INLINE_REMOVAL_LIMIT = 100;
/** Rounds of batched writes before what is left goes one at a time. */
const BATCH_ROUNDS = 4;
/** Transactions in flight at once (they write disjoint items). */
const BATCH_LANES = 4;

/** What a removal reports as it goes. */
export interface RemovalProgress {
  /** Machines that just went Dead: their workflows are to be told. */
  dead(ids: readonly string[]): Promise<void>;
  /** After each transaction (an activity heartbeats). */
  tick?(): void;
}

/** What a removal did. */
export interface RemovalCounts {
  units: number;
  dead: number;
}

interface Group {
  tx: Transaction;
  dead: string[];
  units: number;
}

type Op = Transaction['items'][number];

function itemKey(op: Op): string {
  const key = op.Put?.Item ?? op.Update?.Key ?? op.Delete?.Key ?? op.ConditionCheck?.Key ?? {};
  return `${String(key.pk)}\u0000${String(key.sk)}`;
}

/**
 * Packs groups into transactions of at most DynamoDB's 100 items, never two
 * writes of one item in a transaction. A group too large for one
 * transaction alone is handed back (it goes one unit at a time).
 */
function pack(
  ctx: ServiceContext,
  groups: readonly Group[],
): { batches: Group[]; oversize: Group[] } {
  const batches: Group[] = [];
  const oversize: Group[] = [];
  let current: (Group & { keys: Set<string> }) | undefined;
  for (const group of groups) {
    if (group.tx.size > TRANSACTION_LIMIT) {
      oversize.push(group);
      continue;
    }
    const keys = group.tx.items.map(itemKey);
    if (
      !current ||
      current.tx.size + group.tx.size > TRANSACTION_LIMIT ||
      keys.some((k) => current!.keys.has(k))
    ) {
      current = { tx: ctx.repo.transaction(), dead: [], units: 0, keys: new Set() };
      batches.push(current);
    }
    current.tx.items.push(...group.tx.items);
    current.tx.errors.push(...group.tx.errors);
    current.dead.push(...group.dead);
    current.units += group.units;
    for (const k of keys) current.keys.add(k);
  }
  return { batches, oversize };
}

async function inLanes<T>(items: readonly T[], lanes: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, lane));
}

/** Commits the batches; returns how many lost a race (read and written again in the next round). */
async function commitBatches(
  ctx: ServiceContext,
  batches: readonly Group[],
  progress: RemovalProgress,
  counts: RemovalCounts,
): Promise<number> {
  let lost = 0;
  await inLanes(batches, BATCH_LANES, async (batch) => {
    try {
      await ctx.repo.commit(batch.tx);
    } catch (err) {
      if (!(err instanceof ConcurrentChangeError)) throw err;
      lost += 1;
      return;
    }
    counts.units += batch.units;
    counts.dead += batch.dead.length;
    progress.tick?.();
    if (batch.dead.length > 0) await progress.dead(batch.dead);
  });
  return lost;
}

/** Each machine's loss of the chosen principal units, and each principal's loss of chosen subordinates. */
function unitGroups(
  ctx: ServiceContext,
  contents: ModelContents,
  chosen: readonly UnitRecord[],
): Group[] {
  const model = contents.model.name;
  const chosenNames = new Set(chosen.map((u) => u.name));
  const machines = new Map(contents.machines.map((m) => [m.id, m]));
  const units = new Map(contents.units.map((u) => [u.name, u]));
  const byMachine = new Map<string, UnitRecord[]>();
  const byPrincipal = new Map<string, UnitRecord[]>();
  for (const u of chosen) {
    if (u.principal === undefined) {
      byMachine.set(u.machine, [...(byMachine.get(u.machine) ?? []), u]);
    } else if (!chosenNames.has(u.principal) || !units.has(u.principal)) {
      // a subordinate whose principal stays (a chosen principal takes its subordinates with it)
      byPrincipal.set(u.principal, [...(byPrincipal.get(u.principal) ?? []), u]);
    }
  }
  const groups: Group[] = [];
  for (const [machineId, list] of byMachine) {
    const tx = ctx.repo.transaction();
    for (const u of list) removeUnitItems(tx, u);
    const machine: MachineRecord | undefined = machines.get(machineId);
    let dead: string[] = [];
    if (machine) {
      const gone = new Set(list.map((u) => u.name));
      const principals = machine.principals.filter((p) => !gone.has(p));
      dead = writeMachineChange(tx, machine, {
        principals,
        applications: [...new Set(principals.map(applicationOf))].sort(),
        containers: machine.containers,
      });
    }
    const subordinates = list.reduce((n, u) => n + u.subordinates.length, 0);
    groups.push({ tx, dead, units: list.length + subordinates });
  }
  for (const [principalName, list] of byPrincipal) {
    const tx = ctx.repo.transaction();
    for (const u of list) deleteSubordinateUnit(tx, model, u.name);
    const principal = units.get(principalName);
    if (principal && !chosenNames.has(principalName)) {
      const gone = new Set(list.map((u) => u.name));
      setUnitSubordinates(
        tx,
        principal,
        principal.subordinates.filter((s) => !gone.has(s)),
      );
    }
    groups.push({ tx, dead: [], units: list.length });
  }
  return groups;
}

/**
 * Removes the units `choose` picks (with their subordinates); machines left
 * empty go Dead (manual ones stay, as in Juju), reported to `progress`.
 */
export async function removeUnits(
  ctx: ServiceContext,
  model: string,
  choose: (u: UnitRecord) => boolean,
  progress: RemovalProgress,
  counts: RemovalCounts = { units: 0, dead: 0 },
): Promise<RemovalCounts> {
  for (let round = 0; round < BATCH_ROUNDS; round++) {
    const contents = await ctx.repo.loadModel(model);
    const chosen = contents.units.filter(choose);
    if (chosen.length === 0) return counts;
    const { batches, oversize } = pack(ctx, unitGroups(ctx, contents, chosen));
    await commitBatches(ctx, batches, progress, counts);
    if (oversize.length > 0) break; // one unit at a time below
  }
  // what kept losing races (or shares a machine with more units than a transaction holds)
  const left = (await ctx.repo.loadModel(model)).units.filter(choose);
  for (const u of left) {
    try {
      if (u.principal !== undefined) {
        await removeSubordinateUnit(ctx, model, u.name);
      } else {
        const dead = await removePrincipalUnit(ctx, model, u.name);
        counts.dead += dead.length;
        if (dead.length > 0) await progress.dead(dead);
      }
      counts.units += 1;
    } catch (err) {
      if (!(err instanceof EntityNotFoundError)) throw err; // removed meanwhile (with its principal)
    }
    progress.tick?.();
  }
  return counts;
}

/** Deletes applications with every relation they are in: relations first, then the applications. */
export async function deleteApplications(
  ctx: ServiceContext,
  model: string,
  apps: readonly string[],
): Promise<void> {
  if (apps.length === 0) return;
  const names = new Set(apps);
  const relations = (await ctx.repo.listRelations(model)).filter((r) =>
    r.endpoints.some((e) => names.has(e)),
  );
  for (let start = 0; start < relations.length; start += TRANSACTION_LIMIT) {
    const tx = ctx.repo.transaction();
    for (const r of relations.slice(start, start + TRANSACTION_LIMIT)) deleteRelation(tx, r);
    await ctx.repo.commit(tx);
  }
  for (let start = 0; start < apps.length; start += TRANSACTION_LIMIT) {
    const tx = ctx.repo.transaction();
    for (const app of apps.slice(start, start + TRANSACTION_LIMIT))
      deleteApplication(tx, model, app);
    await ctx.repo.commit(tx);
  }
}

/** Marks applications Dying (no new units); one already gone is left be. */
export async function markApplicationsDying(
  ctx: ServiceContext,
  model: string,
  apps: readonly string[],
): Promise<void> {
  for (const app of apps) {
    const tx = ctx.repo.transaction();
    markApplicationDying(tx, model, app);
    try {
      await ctx.repo.commit(tx);
    } catch (err) {
      if (!(err instanceof ConcurrentChangeError)) throw err; // removed meanwhile
    }
  }
}

/**
 * destroy-model's machines: each alive one goes Dead (a host that still has
 * containers goes Dying until they are gone; a manual machine is deleted),
 * many to a transaction.
 */
export async function retireMachines(
  ctx: ServiceContext,
  model: string,
  progress: RemovalProgress,
  counts: RemovalCounts = { units: 0, dead: 0 },
): Promise<RemovalCounts> {
  // a Dying host with containers stays Dying (its last container's removal makes it Dead)
  const due = (m: MachineRecord) =>
    m.life === 'alive' || (m.life === 'dying' && m.containers.length === 0);
  for (let round = 0; round < BATCH_ROUNDS; round++) {
    const machines = (await ctx.repo.listMachines(model)).filter(due);
    if (machines.length === 0) return counts;
    const groups = machines.map((m): Group => {
      const tx = ctx.repo.transaction();
      const dead = writeMachineChange(
        tx,
        m,
        { principals: [], applications: [], containers: [] },
        true,
      );
      return { tx, dead, units: 0 };
    });
    await commitBatches(ctx, pack(ctx, groups).batches, progress, counts);
  }
  for (const m of (await ctx.repo.listMachines(model)).filter(due)) {
    const dead = await retireMachine(ctx, model, m.id).catch((err: unknown) => {
      if (err instanceof EntityNotFoundError) return [] as string[]; // removed meanwhile
      throw err;
    });
    counts.dead += dead.length;
    if (dead.length > 0) await progress.dead(dead);
  }
  return counts;
}

/** remove-application's work: its units go (machines left empty go Dead), then its relations and itself. */
export async function removeApplicationContents(
  ctx: ServiceContext,
  model: string,
  app: string,
  progress: RemovalProgress,
): Promise<RemovalCounts> {
  await markApplicationsDying(ctx, model, [app]);
  const counts = await removeUnits(ctx, model, (u) => u.application === app, progress);
  await deleteApplications(ctx, model, [app]);
  return counts;
}

/**
 * destroy-model's work: the model goes Dying, its units, relations and
 * applications go, every machine goes Dead; the model itself is removed
 * when nothing is left (else by the last machine's removal).
 */
export async function removeModelContents(
  ctx: ServiceContext,
  model: string,
  progress: RemovalProgress,
): Promise<RemovalCounts> {
  await ctx.repo.markModelDying(model);
  const apps = (await ctx.repo.loadModel(model)).applications.map((a) => a.name);
  await markApplicationsDying(ctx, model, apps);
  const counts = await removeUnits(ctx, model, () => true, progress);
  await deleteApplications(ctx, model, apps);
  await retireMachines(ctx, model, progress, counts);
  await ctx.repo.removeModelIfEmpty(model);
  return counts;
}

/**
 * Starts the removal workflow; false when there is none to start (tests'
 * fakes) or Temporal could not be reached, and the request then writes the
 * removal itself (in batches, as the workflow would).
 */
export async function removeInBackground(
  ctx: ServiceContext,
  target: RemovalTarget,
): Promise<boolean> {
  if (!ctx.workflows.startRemoval) return false;
  try {
    await ctx.workflows.startRemoval(target);
    return true;
  } catch (err) {
    ctx.log.warn('could not start the removal workflow; the request removes', {
      model: target.model,
      application: target.application,
      error: String(err),
    });
    return false;
  }
}

/** A progress that keeps the Dead machines for the request to signal at its end. */
export function collectDead(): RemovalProgress & { ids: string[] } {
  const ids: string[] = [];
  return {
    ids,
    dead: (more) => {
      ids.push(...more);
      return Promise.resolve();
    },
  };
}
