import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import {
  assignZone,
  bump,
  claimGroups,
  regroupDelta,
  type GroupCounter,
  type PartitionCounts,
  type WorkingCounters,
  type ZoneAsk,
  type ZoneCounts,
} from '../core/zone-assignment';
import { jitteredPause } from './backoff';
import { batchGetAll } from './batch-get';
import { EntityNotFoundError } from './errors';
import { machineSk, modelPk } from './keys';
import type { Life } from './types';
import { documentClient, TRANSACTION_LIMIT } from './table';
import {
  counterKey,
  counterPut,
  machineClaimItem,
  regroupCondition,
  releaseItems,
  releaseUncountedMachine,
  type TransactItem,
} from './zone-count-items';

// The pure assignment lives in core/zone-assignment.ts; its names are re-exported for the
// store's callers.
export {
  countedGroups,
  partitionKey,
  type PartitionCounts,
  type ZoneCounts,
} from '../core/zone-assignment';

type Item = Record<string, unknown>;
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
}

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

export interface MachineView {
  exists: boolean;
  life?: Life;
  /** The machine's applications as recorded now: the groups it counts in (Juju's distribution group). */
  applications?: string[];
  countedZone?: string;
  countedGroups?: string[];
  /** Availability-set mode: the partition the machine is counted in, within `countedZone`. */
  countedPartition?: number;
}

/**
 * Zone choice that costs the same whatever the model's size (DESIGN.md
 * "Launching at scale"). Each distribution group (one application's
 * machines; bare machines form one group) has a counter item in the model's
 * partition: machines per zone and a version. A machine records the zone
 * and groups it is counted in (`countedZone`, `countedGroups`), so every
 * increment and decrement happens once, whatever retries.
 *
 * Claims that arrive together are made together: the counters of their
 * groups and the machines are read once, zones assigned one machine after
 * the other from the running counts (least populous first), and written in
 * transactions of up to 100 items conditional on each counter's version. A
 * claim that lost a race to another writer reads the counters again, and
 * only the machines whose own condition failed (the cancellation's reasons
 * say which): a machine's update is conditional on everything its read saw
 * that the claim relies on (alive, and the zone, groups and partition it is
 * counted in), so a view kept across rounds is never acted on stale.
 *
 * A machine hosting several applications counts in each of their groups,
 * and sees the sum of their counts: exact for the usual one application per
 * machine, an approximation of Juju's union of groups otherwise. The groups
 * are those of every application with a unit on the machine (Juju's
 * distribution group: every machine hosting a unit of the application),
 * however the unit got there: a claim counts the applications the machine
 * records when it is made, and a unit placed later on a machine already
 * counted (`--to N`) moves it into its application's group in the same
 * transaction that places the unit (`regroup`).
 *
 * In availability-set mode a claim also assigns a partition: the counter
 * items keep machines per (zone, partition) beside machines per zone, and
 * the machine records `countedPartition`, so the zone and the partition are
 * counted (and given back) in the same writes, least populous first at both
 * levels, and machines claimed together spread over partitions too.
 */
export class ZoneCountStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    private readonly options: {
      maxTries?: number;
      sleep?: (ms: number) => Promise<void>;
      random?: () => number;
    } = {},
  ) {
    this.doc = documentClient(client);
  }

  private get maxTries(): number {
    return this.options.maxTries ?? 50;
  }

  private async pause(attempt: number): Promise<void> {
    await jitteredPause(attempt, this.options);
  }

  /** A group's counts (strongly consistent), for tests and status. */
  async counts(model: string, group: string): Promise<ZoneCounts> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: counterKey(model, group),
        ConsistentRead: true,
      }),
    );
    const counts = (out.Item?.counts as ZoneCounts | undefined) ?? {};
    return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
  }

  /** A group's machines per `<zone>#<partition>` (strongly consistent), for tests. */
  async partitionCounts(model: string, group: string): Promise<PartitionCounts> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: counterKey(model, group),
        ConsistentRead: true,
      }),
    );
    const counts = (out.Item?.partitions as PartitionCounts | undefined) ?? {};
    return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
  }

  /**
   * The groups' counts by zone and by `<zone>#<partition>` (strongly
   * consistent, one BatchGetItem per 100 groups): what the next claims of
   * these groups would see. A read only: plans (service/plans.ts) use it.
   */
  async groupCounts(
    model: string,
    groups: readonly string[],
  ): Promise<Map<string, { counts: ZoneCounts; partitions: PartitionCounts }>> {
    const read = await this.readCounters(model, [...new Set(groups)]);
    return new Map([...read].map(([g, c]) => [g, { counts: c.counts, partitions: c.partitions }]));
  }

  /** Claims a zone for each request, in order; each settles on its own. */
  async claim(model: string, requests: readonly ClaimRequest[]): Promise<ClaimResult[]> {
    const results = new Map<number, ClaimResult>();
    // the machines as last read, kept across rounds: a round lost to another
    // writer of a counter reads the counters again, and only the machines
    // whose own condition failed
    const known = new Map<string, MachineView>();
    for (const r of requests) if (r.view) known.set(r.machineId, r.view);
    let remaining = requests.map((r, i) => ({ r, i }));
    for (let attempt = 1; remaining.length > 0; attempt++) {
      if (attempt > this.maxTries) {
        for (const { r, i } of remaining) {
          results.set(i, {
            ok: false,
            error: new ZoneClaimContendedError(
              `could not claim a zone for machine ${r.machineId} after ${this.maxTries} tries`,
            ),
          });
        }
        break;
      }
      const retry = await this.claimOnce(
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
      if (next.length > 0 && next.length === remaining.length) await this.pause(attempt);
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
  private async claimOnce(
    model: string,
    requests: readonly ClaimRequest[],
    known: Map<string, MachineView>,
  ): Promise<Array<ClaimResult | 'again'>> {
    const unread = [...new Set(requests.map((r) => r.machineId))].filter((id) => !known.has(id));
    if (unread.length > 0) {
      const read = await this.readMachines(model, unread);
      for (const id of unread) known.set(id, read.get(id) ?? { exists: false });
    }
    const machines = known;
    const groups = new Set(requests.flatMap((r) => claimGroups(r, machines.get(r.machineId))));
    for (const r of requests) {
      for (const g of machines.get(r.machineId)?.countedGroups ?? []) groups.add(g);
    }
    const counters = await this.readCounters(model, [...groups]);
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
      const assigned = assignZone(working, request, m);
      if (!assigned.ok) {
        outcomes[k] = { ok: false, error: assigned.error };
        return;
      }
      const { zone, partition, groups: mine, touched } = assigned;
      const wouldTouch = new Set([...chunk.touched, ...touched]);
      if (chunk.items.length > 0 && chunk.items.length + 1 + wouldTouch.size > TRANSACTION_LIMIT) {
        chunks.push(this.closeChunk(model, chunk, working));
        chunk = { indexes: [], items: [], touched: new Set() };
      }
      for (const g of touched) chunk.touched.add(g);
      chunk.indexes.push(k);
      chunk.items.push(
        machineClaimItem(this.tableName, model, request.machineId, {
          m,
          zone,
          partition,
          groups: [...mine],
          ...(request.status ? { status: request.status } : {}),
          now,
        }),
      );
      outcomes[k] = { ok: true, zone, ...(partition !== undefined ? { partition } : {}) };
    });
    if (chunk.items.length > 0) chunks.push(this.closeChunk(model, chunk, working));

    for (let c = 0; c < chunks.length; c++) {
      const { items, indexes } = chunks[c]!;
      try {
        await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
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

  /** Freezes a chunk: its machine updates, then a Put of each touched counter as it stands now. */
  private closeChunk(
    model: string,
    chunk: { indexes: number[]; items: TransactItem[]; touched: Set<string> },
    working: WorkingCounters,
  ): { indexes: number[]; items: TransactItem[]; touched: Set<string> } {
    const items = [...chunk.items];
    for (const g of chunk.touched) {
      const state = working.get(g) ?? { version: 0, counts: {}, partitions: {} };
      items.push(counterPut(this.tableName, model, g, state));
      // the next chunk expects this chunk's version
      working.set(g, { ...state, version: state.version + 1 });
    }
    return { ...chunk, items };
  }

  /**
   * Takes the machine out of the zone counts (a failover, a final error,
   * teardown): idempotent, a machine not counted anywhere is left as it is.
   */
  async release(model: string, machineId: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const m = (await this.readMachines(model, [machineId])).get(machineId);
      if (!m?.exists) throw new EntityNotFoundError(`machine ${machineId} not found`);
      const now = new Date().toISOString();
      if (!m.countedZone) {
        try {
          await this.doc.send(
            new UpdateCommand(releaseUncountedMachine(this.tableName, model, machineId, now)),
          );
          return;
        } catch (err) {
          // gone, or counted meanwhile: read again
          if (!(err instanceof ConditionalCheckFailedException)) throw err;
          if (attempt >= this.maxTries) throw err;
          continue;
        }
      }
      const zone = m.countedZone;
      const partition = m.countedPartition;
      const items = releaseItems(
        this.tableName,
        model,
        machineId,
        { zone, partition, groups: m.countedGroups ?? [] },
        now,
      );
      try {
        await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const codes = (err.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
        // a counter already at zero (never counted there): take the machine out alone
        if (
          codes[0] === 'None' &&
          codes.slice(1).every((c) => c === 'None' || c === 'ConditionalCheckFailed')
        ) {
          const [first] = items;
          await this.doc
            .send(new TransactWriteCommand({ TransactItems: [first] }))
            .catch(() => undefined);
          return;
        }
        if (attempt >= this.maxTries) throw err;
        await this.pause(attempt);
      }
    }
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
  async regroup(
    model: string,
    machineId: string,
    applications: readonly string[],
  ): Promise<Regroup> {
    const m = (await this.readMachines(model, [machineId])).get(machineId);
    if (!m?.exists) throw new EntityNotFoundError(`machine ${machineId} not found`);
    if (!m.countedZone) {
      return {
        machine: {
          set: '',
          condition: 'attribute_not_exists(#countedZone)',
          names: { '#countedZone': 'countedZone' },
          values: {},
        },
        counters: [],
      };
    }
    const { condition, names, values } = regroupCondition({
      countedZone: m.countedZone,
      ...(m.countedGroups ? { countedGroups: m.countedGroups } : {}),
    });
    const { want, joined, left } = regroupDelta(m.countedGroups ?? [], applications);
    if (joined.length === 0 && left.length === 0) {
      return { machine: { set: '', condition, names, values }, counters: [] };
    }
    const working = await this.readCounters(model, [...joined, ...left]);
    for (const g of joined) bump(working, g, m.countedZone, 1, m.countedPartition);
    for (const g of left) bump(working, g, m.countedZone, -1, m.countedPartition);
    values[':rgGroups'] = want;
    return {
      machine: { set: '#countedGroups = :rgGroups', condition, names, values },
      counters: [...joined, ...left].map((g) =>
        counterPut(
          this.tableName,
          model,
          g,
          working.get(g) ?? { version: 0, counts: {}, partitions: {} },
        ),
      ),
    };
  }

  /** Takes a Dead machine out of the zone counts; any other machine (or none) is left alone. */
  async releaseIfDead(model: string, machineId: string): Promise<void> {
    const m = (await this.readMachines(model, [machineId])).get(machineId);
    if (m?.life !== 'dead' || !m.countedZone) return;
    await this.release(model, machineId).catch((err: unknown) => {
      if (!(err instanceof EntityNotFoundError)) throw err;
    });
  }

  private async readMachines(
    model: string,
    ids: readonly string[],
  ): Promise<Map<string, MachineView>> {
    const found = new Map<string, MachineView>();
    const keys = [...new Set(ids)].map((id) => ({ pk: modelPk(model), sk: machineSk(id) }));
    for (const item of await this.batchGet(
      keys,
      'sk, #life, #applications, #countedZone, #countedGroups, #countedPartition',
      {
        '#life': 'life',
        '#applications': 'applications',
        '#countedZone': 'countedZone',
        '#countedGroups': 'countedGroups',
        '#countedPartition': 'countedPartition',
      },
    )) {
      found.set(String(item.sk).slice('MACHINE#'.length), machineView(item));
    }
    return found;
  }

  private async readCounters(
    model: string,
    groups: readonly string[],
  ): Promise<Map<string, CounterState>> {
    const out = new Map<string, CounterState>();
    for (const g of groups) out.set(g, { version: 0, counts: {}, partitions: {} });
    const keys = groups.map((g) => counterKey(model, g));
    for (const item of await this.batchGet(keys, '#group, #counts, #partitions, #version', {
      '#group': 'group',
      '#counts': 'counts',
      '#partitions': 'partitions',
      '#version': 'version',
    })) {
      out.set(String(item.group), {
        version: typeof item.version === 'number' ? item.version : 0,
        counts: { ...((item.counts as ZoneCounts | undefined) ?? {}) },
        partitions: { ...((item.partitions as PartitionCounts | undefined) ?? {}) },
      });
    }
    return out;
  }

  /** BatchGetItem, strongly consistent (state/batch-get.ts), with the store's backoff. */
  private async batchGet(
    keys: Array<{ pk: string; sk: string }>,
    projection: string,
    names: Record<string, string>,
  ): Promise<Item[]> {
    return batchGetAll(this.doc, this.tableName, keys, {
      projection,
      names,
      pause: (attempt) => this.pause(attempt),
    });
  }
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

/** What a zone claim relies on of a machine item (read with at least these attributes). */
export function machineView(item: Item): MachineView {
  return {
    exists: true,
    life: item.life as Life,
    ...(Array.isArray(item.applications)
      ? { applications: (item.applications as unknown[]).map(String) }
      : {}),
    ...(typeof item.countedZone === 'string' ? { countedZone: item.countedZone } : {}),
    ...(Array.isArray(item.countedGroups) ? { countedGroups: item.countedGroups as string[] } : {}),
    ...(typeof item.countedPartition === 'number'
      ? { countedPartition: item.countedPartition }
      : {}),
  };
}
