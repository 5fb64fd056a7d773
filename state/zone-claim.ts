import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import {
  assignZone,
  claimGroups,
  type GroupCounter,
  type WorkingCounters,
  type ZoneAsk,
  type ZoneCounts,
} from '../core/zone-assignment';
import { EntityNotFoundError } from './errors';
import { TRANSACTION_LIMIT } from './table';
import { counterPut, machineClaimItem, type TransactItem } from './zone-count-items';
import {
  readCounters,
  readMachines,
  type MachineView,
  type ZoneCountTable,
} from './zone-count-reads';

/**
 * The zone claim (ZoneCountStore.claim): claims that arrive together are
 * read once, assigned zones one after the other from the running counts
 * (core/zone-assignment.ts), and written in transactions of up to 100
 * items conditional on each counter's version; a round lost to another
 * writer reads the counters again, and only the machines whose own
 * condition failed.
 */

type CounterState = GroupCounter;

/**
 * One machine's zone claim, as the workflow asks for it. `order` sees the
 * population of the machine's groups (its own count left out) and answers
 * the zones to try, best first, or throws (e.g. NoSuitableZoneError), which
 * fails this claim alone.
 */
export interface ClaimRequest extends ZoneAsk {
  machineId: string;
  /**
   * The distribution groups the machine counts in (its applications as the
   * caller read them; `[]`: the bare machines' group). The claim adds the
   * applications the machine records when it is made.
   */
  groups: readonly string[];
  order: (population: ZoneCounts) => string[];
  /** Written with the claim in the same update (status `allocating`, its message). */
  status?: { status: string; message: (zone: string) => string };
  /**
   * The machine run and attempt that claims (`<workflow id>/<run id>/<attempt>`,
   * activities/launch.ts `claimant`), written as the item's `claimedBy` with
   * the zone (removed by a claim without one): a step of that run run again
   * after its workflow task was lost keeps the zone it claimed instead of
   * claiming again (activities/records.ts `zoneHeldByThisRun`).
   */
  claimedBy?: string;
  /**
   * Zones the machine failed in during this attempt: a claim its claimant
   * (`claimedBy`) already holds is kept unless its zone is among them.
   */
  exclude?: readonly string[];
  /**
   * Availability-set mode: the group's placement group has this many
   * partitions, and the claim also assigns the machine the least populous
   * of them in the chosen zone (counted in the same counter items).
   */
  partitions?: number;
  /**
   * The machine as the caller read it a moment ago (strongly consistent,
   * `machineView`): the claim's first round takes it instead of reading the
   * machine again. Safe when stale: the claim's write is conditional on every
   * field of the view, and a machine whose condition failed is read afresh.
   */
  view?: MachineView;
  /**
   * `view` is not a read but what the request that created the machine wrote
   * (the workflow's start input, with `view.asCreated`): the claim is made
   * only if the machine is exactly so (its write's condition holds). A machine whose
   * condition failed is not read again here: the claim fails with
   * StaleViewError, and the caller reads the machine and plans from that.
   */
  strict?: boolean;
}

/** A strict claim's view (ClaimRequest.strict) no longer held: nothing was claimed. */
export class StaleViewError extends Error {
  override readonly name = 'StaleViewError';
}

/** The machine went Dead: it must not claim a zone or launch. */
export class MachineDeadError extends Error {
  override readonly name = 'MachineDeadError';
}

/** Too many concurrent claims in a row; the caller may try again later. */
export class ZoneClaimContendedError extends Error {
  override readonly name = 'ZoneClaimContendedError';
}

export type ClaimResult =
  { ok: true; zone: string; partition?: number } | { ok: false; error: unknown };

/** Claims a zone for each request, in order; each settles on its own. */
export async function claimZones(
  t: ZoneCountTable,
  model: string,
  requests: readonly ClaimRequest[],
): Promise<ClaimResult[]> {
  const results = new Map<number, ClaimResult>();
  // the machines as last read, kept across rounds: a round lost to another
  // writer of a counter reads the counters again, and only the machines
  // whose own condition failed
  const known = new Map<string, MachineView>();
  for (const r of requests) if (r.view) known.set(r.machineId, r.view);
  let remaining = requests.map((r, i) => ({ r, i }));
  for (let attempt = 1; remaining.length > 0; attempt++) {
    if (attempt > t.maxTries) {
      for (const { r, i } of remaining) {
        results.set(i, {
          ok: false,
          error: new ZoneClaimContendedError(
            `could not claim a zone for machine ${r.machineId} after ${t.maxTries} tries`,
          ),
        });
      }
      break;
    }
    const retry = await claimOnce(
      t,
      model,
      remaining.map((x) => x.r),
      known,
    );
    const next: typeof remaining = [];
    retry.forEach((outcome, k) => {
      const entry = remaining[k]!;
      if (outcome === 'again') next.push(entry);
      else results.set(entry.i, outcome);
      // claimed: a later claim of the same machine reads what this one wrote
      if (outcome !== 'again' && outcome.ok) known.delete(entry.r.machineId);
    });
    if (next.length > 0 && next.length === remaining.length) await t.pause(attempt);
    remaining = next;
  }
  return requests.map(
    (_, i) => results.get(i) ?? { ok: false, error: new Error('zone claim lost') },
  );
}

/**
 * One round: read, assign, write. `again` marks the claims to make in the
 * next round. `known` holds the machines read in earlier rounds; only the
 * others are read, and a cancelled write forgets the machines it may have
 * found changed.
 */
async function claimOnce(
  t: ZoneCountTable,
  model: string,
  requests: readonly ClaimRequest[],
  known: Map<string, MachineView>,
): Promise<Array<ClaimResult | 'again'>> {
  const unread = [...new Set(requests.filter((r) => !r.strict).map((r) => r.machineId))].filter(
    (id) => !known.has(id),
  );
  if (unread.length > 0) {
    const read = await readMachines(t, model, unread);
    for (const id of unread) known.set(id, read.get(id) ?? { exists: false });
  }
  const machines = known;
  const groups = new Set(requests.flatMap((r) => claimGroups(r, machines.get(r.machineId))));
  for (const r of requests) {
    for (const g of machines.get(r.machineId)?.countedGroups ?? []) groups.add(g);
  }
  const counters = await readCounters(t, model, [...groups]);
  const outcomes: Array<ClaimResult | 'again'> = [];
  const working = new Map<string, CounterState>(
    [...counters].map(([g, c]) => [
      g,
      { version: c.version, counts: { ...c.counts }, partitions: { ...c.partitions } },
    ]),
  );
  // per chunk: the machines' updates and the counters' states after them
  const chunks: Array<{ indexes: number[]; items: TransactItem[]; touched: Set<string> }> = [];
  let chunk = {
    indexes: [] as number[],
    items: [] as TransactItem[],
    touched: new Set<string>(),
  };
  const now = new Date().toISOString();

  const inRound = new Set<string>();
  requests.forEach((request, k) => {
    // a second claim of one machine (a retried activity's, while the first
    // waited) is made in the next round, as a move from the first's zone:
    // one transaction may not write an item twice
    if (inRound.has(request.machineId)) {
      outcomes[k] = 'again';
      return;
    }
    inRound.add(request.machineId);
    if (request.strict && machines.get(request.machineId) !== request.view) {
      // its own view was dropped (its condition failed, or the machine was claimed already
      // in this batch) or replaced by a read another claim of it made
      outcomes[k] = {
        ok: false,
        error: new StaleViewError(`machine ${request.machineId} is not as its creation wrote it`),
      };
      return;
    }
    const m = machines.get(request.machineId);
    if (!m?.exists) {
      outcomes[k] = {
        ok: false,
        error: new EntityNotFoundError(`machine ${request.machineId} not found`),
      };
      return;
    }
    if (m.life === 'dead') {
      outcomes[k] = {
        ok: false,
        error: new MachineDeadError(`machine ${request.machineId} is dead`),
      };
      return;
    }
    // its own claimant's claim (a step run again after its workflow task was lost): kept as
    // it is, nothing written, so the launch that follows is the lost one's (same token seed)
    const held = heldZone(request, m);
    if (held !== undefined) {
      outcomes[k] = {
        ok: true,
        zone: held,
        ...(m.countedPartition !== undefined ? { partition: m.countedPartition } : {}),
      };
      return;
    }
    // the chunk is closed before this machine is counted: a closed chunk's counters hold its
    // own machines only (were this one counted in them and its own chunk's write lost, the
    // counter would keep a machine no item records, and later claims would avoid its zone)
    const touches = new Set([...claimGroups(request, m), ...(m.countedGroups ?? [])]);
    const wouldTouch = new Set([...chunk.touched, ...touches]);
    if (chunk.items.length > 0 && chunk.items.length + 1 + wouldTouch.size > TRANSACTION_LIMIT) {
      chunks.push(closeChunk(t.tableName, model, chunk, working));
      chunk = { indexes: [], items: [], touched: new Set() };
    }
    const assigned = assignZone(working, request, m);
    if (!assigned.ok) {
      outcomes[k] = { ok: false, error: assigned.error };
      return;
    }
    const { zone, partition, groups: mine, touched } = assigned;
    for (const g of touched) chunk.touched.add(g);
    chunk.indexes.push(k);
    chunk.items.push(
      machineClaimItem(t.tableName, model, request.machineId, {
        m,
        zone,
        partition,
        groups: [...mine],
        ...(request.status ? { status: request.status } : {}),
        ...(request.claimedBy !== undefined ? { claimedBy: request.claimedBy } : {}),
        now,
      }),
    );
    outcomes[k] = { ok: true, zone, ...(partition !== undefined ? { partition } : {}) };
  });
  if (chunk.items.length > 0) chunks.push(closeChunk(t.tableName, model, chunk, working));

  for (let c = 0; c < chunks.length; c++) {
    const { items, indexes } = chunks[c]!;
    try {
      await t.doc.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      // the machines this write may have found changed are read again;
      // the others keep their view (their own conditions still guard it)
      for (const k of changedMachines(indexes, items.length, err)) {
        known.delete(requests[k]!.machineId);
      }
      // this chunk and every later one are made again from fresh counters
      for (const later of chunks.slice(c)) for (const k of later.indexes) outcomes[k] = 'again';
      break;
    }
  }
  return outcomes;
}

/**
 * The zone the request's own claimant (`claimedBy`: run and attempt) already
 * claimed and holds, counted there, not among the zones it failed in; else
 * undefined. Read in the claim's own round: a claim of the same claimant
 * that lands between this round's read and its write fails the write's
 * condition (the machine is counted elsewhere now), and the next round
 * reads it and keeps it.
 */
export function heldZone(request: ClaimRequest, m: MachineView): string | undefined {
  if (request.claimedBy === undefined || m.claimedBy !== request.claimedBy) return undefined;
  const zone = m.zoneClaim;
  if (zone === undefined || zone === '' || m.countedZone !== zone) return undefined;
  return request.exclude?.includes(zone) ? undefined : zone;
}

/** Freezes a chunk: its machine updates, then a Put of each touched counter as it stands now. */
function closeChunk(
  tableName: string,
  model: string,
  chunk: { indexes: number[]; items: TransactItem[]; touched: Set<string> },
  working: WorkingCounters,
): { indexes: number[]; items: TransactItem[]; touched: Set<string> } {
  const items = [...chunk.items];
  for (const g of chunk.touched) {
    const state = working.get(g) ?? { version: 0, counts: {}, partitions: {} };
    items.push(counterPut(tableName, model, g, state));
    // the next chunk expects this chunk's version
    working.set(g, { ...state, version: state.version + 1 });
  }
  return { ...chunk, items };
}

/**
 * The requests (by index) of a cancelled chunk whose machine item may have
 * changed: those whose item the cancellation reasons do not clear (`None`:
 * its condition held). Without reasons for every item, all of the chunk's.
 * A chunk's items are its machines' updates in `indexes` order, then its
 * counters.
 */
function changedMachines(
  indexes: readonly number[],
  itemCount: number,
  err: TransactionCanceledException,
): number[] {
  const reasons = err.CancellationReasons;
  if (!reasons || reasons.length !== itemCount) return [...indexes];
  return indexes.filter((_, j) => reasons[j]?.Code !== 'None');
}
