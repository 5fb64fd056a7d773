/**
 * Zone (and partition) assignment over running counts, without I/O: what a
 * batch of zone claims decides between reading the counters and writing
 * them (state/zone-counts.ts does the reading and writing). Juju's
 * distribution group: each application's machines form a group, bare
 * machines the group `''`; a machine sees the sum of its groups' counts.
 */
import { leastPopulousPartition } from './partitions';

/** Zone → machines of a distribution group in (or claimed for) it. */
export type ZoneCounts = Record<string, number>;

/** `<zone>#<partition>` → machines of a distribution group in that partition of that zone. */
export type PartitionCounts = Record<string, number>;

/** The key of a zone's partition in PartitionCounts. */
export function partitionKey(zone: string, partition: number): string {
  return `${zone}#${partition}`;
}

/** One group's counter as read (version 0: none written yet), then as the claims change it. */
export interface GroupCounter {
  version: number;
  counts: ZoneCounts;
  partitions: PartitionCounts;
}

/** Group → its counter, changed in place as machines are assigned. */
export type WorkingCounters = Map<string, GroupCounter>;

/** The group counter key of a machine's applications; `[]` is the group of bare machines. */
export function countedGroups(applications: readonly string[]): string[] {
  return applications.length === 0 ? [''] : [...new Set(applications)].sort();
}

/** What a claim needs of a machine as recorded: where it is counted now, and its applications. */
export interface CountedMachine {
  /** The machine's applications as recorded now: the groups it counts in. */
  applications?: string[];
  countedZone?: string;
  countedGroups?: string[];
  /** Availability-set mode: the partition the machine is counted in, within `countedZone`. */
  countedPartition?: number;
}

/** What a claim asks: the groups it names, the zone order, and (availability sets) partitions. */
export interface ZoneAsk {
  groups: readonly string[];
  /** The zones to try, best first, given the population of the machine's groups; may throw. */
  order: (population: ZoneCounts) => string[];
  partitions?: number;
}

/**
 * The groups a claim counts the machine in: those it asks for, and those of
 * the applications the machine records now, however their units were placed
 * (a `--to` unit placed after the workflow read the machine).
 */
export function claimGroups(ask: Pick<ZoneAsk, 'groups'>, m: CountedMachine | undefined): string[] {
  return countedGroups([...ask.groups, ...(m?.applications ?? [])]);
}

/** Adds `by` machines to a group's zone (and partition), never below zero. */
export function bump(
  working: WorkingCounters,
  group: string,
  zone: string,
  by: number,
  partition?: number,
): void {
  let state = working.get(group);
  if (!state) {
    state = { version: 0, counts: {}, partitions: {} };
    working.set(group, state);
  }
  state.counts[zone] = Math.max(0, (state.counts[zone] ?? 0) + by);
  if (partition !== undefined) {
    const key = partitionKey(zone, partition);
    state.partitions[key] = Math.max(0, (state.partitions[key] ?? 0) + by);
  }
}

export type ZoneAssignment =
  | {
      ok: true;
      zone: string;
      partition?: number;
      /** The groups the machine is now counted in. */
      groups: string[];
      /** Every group whose counter changed: those it joins and those it left. */
      touched: Set<string>;
    }
  | { ok: false; error: unknown };

/**
 * One machine's zone, chosen on the running counts and counted in them: a
 * machine already counted somewhere leaves its zone (and partition) first;
 * `order` sees the sum of its groups' counts; in availability-set mode the
 * least populous partition of the chosen zone (over its groups) is taken.
 * A refusal (`order` threw, or offered no zone) leaves the counts as they were.
 */
export function assignZone(
  working: WorkingCounters,
  ask: ZoneAsk,
  m: CountedMachine,
): ZoneAssignment {
  const mine = claimGroups(ask, m);
  if (m.countedZone) {
    for (const g of m.countedGroups ?? []) bump(working, g, m.countedZone, -1, m.countedPartition);
  }
  const population: ZoneCounts = {};
  for (const g of mine) {
    for (const [zone, n] of Object.entries(working.get(g)?.counts ?? {})) {
      population[zone] = (population[zone] ?? 0) + n;
    }
  }
  // a refusal undoes the move: this machine keeps what it had
  const refuse = (error: unknown): ZoneAssignment => {
    if (m.countedZone) {
      for (const g of m.countedGroups ?? []) bump(working, g, m.countedZone, 1, m.countedPartition);
    }
    return { ok: false, error };
  };
  let zone: string | undefined;
  try {
    zone = ask.order(population)[0];
  } catch (error) {
    return refuse(error);
  }
  if (zone === undefined) return refuse(new Error('no zone to claim'));
  let partition: number | undefined;
  if (ask.partitions !== undefined) {
    const inZone: Record<number, number> = {};
    for (const g of mine) {
      const parts = working.get(g)?.partitions ?? {};
      for (let p = 1; p <= ask.partitions; p++) {
        inZone[p] = (inZone[p] ?? 0) + (parts[partitionKey(zone, p)] ?? 0);
      }
    }
    partition = leastPopulousPartition(inZone, ask.partitions);
  }
  for (const g of mine) bump(working, g, zone, 1, partition);
  return {
    ok: true,
    zone,
    ...(partition !== undefined ? { partition } : {}),
    groups: mine,
    touched: new Set([...mine, ...(m.countedGroups ?? [])]),
  };
}

/**
 * The groups a machine counted in `have` joins and leaves when its
 * applications become `applications` (a unit placed on it, or gone).
 */
export function regroupDelta(
  have: readonly string[],
  applications: readonly string[],
): { want: string[]; joined: string[]; left: string[] } {
  const want = countedGroups(applications);
  return {
    want,
    joined: want.filter((g) => !have.includes(g)),
    left: have.filter((g) => !want.includes(g)),
  };
}

/** Only the positive entries: what a counter item stores. */
export function positiveCounts(counts: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}
