import { bump, regroupDelta } from '../core/zone-assignment';
import { EntityNotFoundError } from './errors';
import {
  counterPut,
  regroupCondition,
  regroupUncountedCondition,
  type TransactItem,
} from './zone-count-items';
import { readCounters, readMachines, type ZoneCountTable } from './zone-count-reads';

/** What a change of a machine's applications writes with it (ZoneCountStore.regroup). */
export interface Regroup {
  /** Merged into the caller's update of the machine: SET clause ('' for none), condition, names, values. */
  machine: {
    set: string;
    condition: string;
    names: Record<string, string>;
    values: Record<string, unknown>;
  };
  /** The counters' writes, each conditional on the version read. */
  counters: TransactItem[];
}

/**
 * What a change of the machine's applications to `applications` must write
 * with it so the zone counts follow (Juju counts every machine hosting a
 * unit of an application, `--to` placements included): for a machine
 * counted in a zone, the counters of the groups it joins (+1 in its zone
 * and partition) and leaves (-1), each conditional on its version, and its
 * new `countedGroups`; for a machine counted nowhere yet, only the
 * condition that it still is not (its claim, made later, reads the
 * applications itself). The caller merges `machine` into its own update
 * of the machine and adds `counters` to the same transaction; a failed
 * condition means a claim or another change came between: read again.
 */
export async function regroup(
  t: ZoneCountTable,
  model: string,
  machineId: string,
  applications: readonly string[],
): Promise<Regroup> {
  const m = (await readMachines(t, model, [machineId])).get(machineId);
  if (!m?.exists) throw new EntityNotFoundError(`machine ${machineId} not found`);
  if (!m.countedZone) {
    return { machine: { set: '', ...regroupUncountedCondition() }, counters: [] };
  }
  const { condition, names, values } = regroupCondition({
    countedZone: m.countedZone,
    ...(m.countedGroups ? { countedGroups: m.countedGroups } : {}),
  });
  const { want, joined, left } = regroupDelta(m.countedGroups ?? [], applications);
  if (joined.length === 0 && left.length === 0) {
    return { machine: { set: '', condition, names, values }, counters: [] };
  }
  const working = await readCounters(t, model, [...joined, ...left]);
  for (const g of joined) bump(working, g, m.countedZone, 1, m.countedPartition);
  for (const g of left) bump(working, g, m.countedZone, -1, m.countedPartition);
  values[':rgGroups'] = want;
  return {
    machine: { set: '#countedGroups = :rgGroups', condition, names, values },
    counters: [...joined, ...left].map((g) =>
      counterPut(
        t.tableName,
        model,
        g,
        working.get(g) ?? { version: 0, counts: {}, partitions: {} },
      ),
    ),
  };
}
