import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { claimCoalescer } from '../../activities/launch';
import { emptyTotals, meterCapacity } from '../../config/capacity-meter';
import { orderZones } from '../../core';
import { machineSk, modelPk } from '../../state/keys';
import { ProvisioningStore } from '../../state/provisioning';
import { zoneCountSk } from '../../state/provisioning-keys';
import { Repository } from '../../state/repository';
import {
  MachineDeadError,
  ZoneClaimContendedError,
  ZoneCountStore,
  type ClaimRequest,
  type ClaimResult,
} from '../../state/zone-counts';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

/**
 * What zone claims cost in reads when they lose races: each machine is read
 * once per claim, whatever the rounds; a lost round reads the counters again,
 * and only the machines whose own condition failed.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const doc = DynamoDBDocumentClient.from(ddb);
// its own table: the sweeper would launch the machines written here (stack.ts)
const table = privateTable(ddb, 'zone-claim-cost');
const TABLE = table.tableName;
const repo = new Repository(ddb, TABLE);
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'].map((name) => ({
  name,
  state: 'available',
}));

beforeAll(() => table.create());

afterAll(async () => {
  await table.drop();
  ddb.destroy();
});

async function modelWithMachines(count: number, applications: string[]): Promise<string[]> {
  const model = await seedModel(repo, 'claims', { region: stack.region });
  const ids = await repo.allocateMachineIds(model, count);
  await repo.putNewMachines(ids.map((id) => pendingMachine(model, id, { applications })));
  return [model, ...ids];
}

function request(machineId: string, groups: string[]): ClaimRequest {
  return {
    machineId,
    groups,
    order: (population) => orderZones({ machineId, zones: ZONES, population, failedZones: [] }),
  };
}

interface Ledger {
  /** Read units and items read, machines apart from zone counters. */
  machineUnits: number;
  machineItems: number;
  counterUnits: number;
  counterItems: number;
  /** Read units as config/capacity-meter.ts adds them up (the benchmark's figure). */
  totals: ReturnType<typeof emptyTotals>;
  transactions: number;
  /** Cancelled transactions, and their reasons' codes by kind of item. */
  cancelled: number;
  reasons: Record<string, number>;
}

/**
 * A store on a client of its own that meters what it reads, and runs
 * `interfere` (another writer's turn, on the uncounted client) before each
 * of its transactions.
 */
function meteredStore(
  options: {
    maxTries?: number;
    /** No pause between lost rounds (the store's jittered one otherwise). */
    noPause?: boolean;
    interfere?: (transaction: number) => Promise<void>;
  } = {},
) {
  const client = dynamoClientFor(stack);
  const ledger: Ledger = {
    machineUnits: 0,
    machineItems: 0,
    counterUnits: 0,
    counterItems: 0,
    totals: emptyTotals(),
    transactions: 0,
    cancelled: 0,
    reasons: {},
  };
  meterCapacity(client, ledger.totals);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        RequestItems?: Record<string, { Keys?: unknown[] }>;
        TransactItems?: Array<{ Put?: unknown; Update?: unknown }>;
      };
      if (context.commandName === 'BatchGetItemCommand') {
        const keys = input.RequestItems?.[TABLE]?.Keys ?? [];
        const counters = keys.every((k) => JSON.stringify(k).includes('#ZONES#'));
        const out = await next(args);
        const consumed = (out.output as { ConsumedCapacity?: Array<{ CapacityUnits?: number }> })
          .ConsumedCapacity;
        const units = (consumed ?? []).reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
        const items = Object.values(
          (out.output as { Responses?: Record<string, unknown[]> }).Responses ?? {},
        ).reduce((n, list) => n + list.length, 0);
        if (counters) {
          ledger.counterUnits += units;
          ledger.counterItems += items;
        } else {
          ledger.machineUnits += units;
          ledger.machineItems += items;
        }
        return out;
      }
      if (context.commandName === 'TransactWriteItemsCommand') {
        ledger.transactions += 1;
        await options.interfere?.(ledger.transactions);
        try {
          return await next(args);
        } catch (err) {
          if (err instanceof TransactionCanceledException) {
            ledger.cancelled += 1;
            (err.CancellationReasons ?? []).forEach((reason, i) => {
              const kind = input.TransactItems?.[i]?.Put ? 'counter' : 'machine';
              const key = `${kind} ${reason.Code ?? 'none given'}`;
              ledger.reasons[key] = (ledger.reasons[key] ?? 0) + 1;
            });
          }
          throw err;
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'zoneClaimLedger' },
  );
  const store = new ZoneCountStore(client, TABLE, {
    ...(options.noPause ? { sleep: () => Promise.resolve() } : {}),
    ...(options.maxTries !== undefined ? { maxTries: options.maxTries } : {}),
  });
  return { client, store, ledger, done: () => client.destroy() };
}

/** Another writer of the group's counter (a claim or a release elsewhere) moves its version. */
async function moveCounter(model: string, group: string): Promise<void> {
  await doc.send(
    new UpdateCommand({
      TableName: TABLE,
      Key: { pk: modelPk(model), sk: zoneCountSk(group) },
      UpdateExpression: 'SET #group = :group ADD #version :one',
      ExpressionAttributeNames: { '#group': 'group', '#version': 'version' },
      ExpressionAttributeValues: { ':group': group, ':one': 1 },
    }),
  );
}

function zonesOf(results: ClaimResult[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const key = r.ok ? r.zone : `error: ${String(r.error)}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** How many of `zones` name each zone. */
function tally(zones: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const z of zones) out[z] = (out[z] ?? 0) + 1;
  return out;
}

/** Where the machines `ids` of `model` record they are counted (`countedZone`, read consistently), as a tally. */
async function countedZones(
  model: string,
  ids: readonly string[],
): Promise<Record<string, number>> {
  const zones: string[] = [];
  for (const id of ids) {
    const out = await doc.send(
      new GetCommand({
        TableName: TABLE,
        Key: { pk: modelPk(model), sk: machineSk(id) },
        ConsistentRead: true,
      }),
    );
    zones.push(String(out.Item?.countedZone));
  }
  return tally(zones);
}

describe('zone claims under contention', () => {
  it('300 machines in 10 racing claims, with another writer moving the counter before 12 of their writes: each machine read once, the spread exact', async () => {
    const [model, ...ids] = await modelWithMachines(300, ['web']);
    const { store, ledger, done } = meteredStore({
      interfere: (n) => (n <= 12 ? moveCounter(model!, 'web') : Promise.resolve()),
    });
    try {
      const calls = await Promise.all(
        Array.from({ length: 10 }, (_, c) =>
          store.claim(
            model!,
            ids.slice(c * 30, c * 30 + 30).map((id) => request(id, ['web'])),
          ),
        ),
      );
      const results = calls.flat();
      const readUnits = ledger.totals.readUnits;
      expect(zonesOf(results)).toEqual({ 'us-east-1a': 100, 'us-east-1b': 100, 'us-east-1c': 100 });
      expect(await store.counts(model!, 'web')).toEqual({
        'us-east-1a': 100,
        'us-east-1b': 100,
        'us-east-1c': 100,
      });
      // the forced losses, and any races the calls lost to each other
      expect(ledger.cancelled).toBeGreaterThanOrEqual(12);
      // lost on the counter (its version moved; or, racing, another transaction held it)
      const counterLosses =
        (ledger.reasons['counter ConditionalCheckFailed'] ?? 0) +
        (ledger.reasons['counter TransactionConflict'] ?? 0);
      expect(counterLosses).toBeGreaterThanOrEqual(ledger.cancelled);
      expect(Object.keys(ledger.reasons).filter((k) => k.startsWith('machine '))).toEqual([
        'machine None',
      ]);
      const figures = {
        machineItems: ledger.machineItems,
        machineUnitsPerMachine: ledger.machineUnits / 300,
      };
      expect(figures).toEqual({ machineItems: 300, machineUnitsPerMachine: 1 });
      // every other unit read is a counter's: one item a round, and a round a write
      expect(readUnits).toBe(ledger.machineUnits + ledger.counterUnits);
      expect(ledger.counterItems).toBeGreaterThanOrEqual(12);
      expect(ledger.counterUnits).toBeLessThanOrEqual(ledger.transactions);
    } finally {
      done();
    }
  });

  it("a round written in two transactions whose second loses to another writer: the first's counter holds only its own machines (the counts stay exact, the spread ±1)", async () => {
    // 150 claims of one group in one call: one round, two transactions (at most 100 items
    // each, the counter one of them); another writer moves the counter between the two
    const [model, ...ids] = await modelWithMachines(150, ['web']);
    const { store, ledger, done } = meteredStore({
      noPause: true,
      interfere: (n) => (n === 2 ? moveCounter(model!, 'web') : Promise.resolve()),
    });
    try {
      const results = await store.claim(
        model!,
        ids.map((id) => request(id, ['web'])),
      );
      expect(ledger.cancelled).toBe(1);
      const claimed = zonesOf(results);
      expect(claimed).toEqual({ 'us-east-1a': 50, 'us-east-1b': 50, 'us-east-1c': 50 });
      // where each machine records it is counted: what the counter must say
      expect(await countedZones(model!, ids)).toEqual(claimed);
      expect(await store.counts(model!, 'web')).toEqual(claimed);
    } finally {
      done();
    }
  });

  it("1,000 claims of one model arriving over a second, through the worker's claim coalescer: each machine read once, 334/333/333", async () => {
    const [model, ...ids] = await modelWithMachines(1000, ['web']);
    const { client, ledger, done } = meteredStore();
    const store = new ProvisioningStore(client, TABLE);
    let sent = 0;
    const claims = claimCoalescer({
      claimZones: (m, requests) => {
        sent += 1;
        return store.claimZones(m, requests);
      },
    });
    try {
      const zones = await Promise.all(
        ids.map(async (id, i) => {
          await new Promise((r) => setTimeout(r, i));
          return claims.submit(model!, request(id, ['web']));
        }),
      );
      const readUnits = ledger.totals.readUnits;
      const spread = tally(zones);
      expect(spread).toEqual({ 'us-east-1a': 334, 'us-east-1b': 333, 'us-east-1c': 333 });
      expect(await store.zones.counts(model!, 'web')).toEqual(spread);
      expect(ledger.machineItems).toBe(1000);
      expect(ledger.machineUnits).toBe(1000);
      // the rest: the counter, once a round (a batch, or a lost round of one)
      expect(readUnits).toBe(ledger.machineUnits + ledger.counterUnits);
      expect(ledger.counterUnits).toBeLessThanOrEqual(sent + ledger.cancelled);
      // one batch of the model at a time: none lost a round to another (a batch waits 5 s at
      // most for the one before; each takes well under 1 s idle, so only a very busy machine
      // lets one race the next, and then only once or twice: the reads above are what count)
      expect(ledger.cancelled).toBeLessThanOrEqual(2);
    } finally {
      done();
    }
  });

  it("1,000 claims of one model through two workers' claim coalescers at once: the counter says what the machines record, and the spread is ±1", async () => {
    const [model, ...ids] = await modelWithMachines(1000, ['web']);
    const workers = [meteredStore(), meteredStore()].map((m) => ({
      ...m,
      claims: claimCoalescer(new ProvisioningStore(m.client, TABLE)),
    }));
    try {
      const zones = await Promise.all(
        // all at once: each worker's batches fill (500), so its rounds go out in several
        // transactions, racing the other worker's on the counter
        ids.map((id, i) => workers[i % 2]!.claims.submit(model!, request(id, ['web']))),
      );
      const spread = tally(zones);
      expect(spread).toEqual({ 'us-east-1a': 334, 'us-east-1b': 333, 'us-east-1c': 333 });
      expect(await countedZones(model!, ids)).toEqual(spread);
      expect(await workers[0]!.store.counts(model!, 'web')).toEqual(spread);
    } finally {
      for (const w of workers) w.done();
    }
  });

  it('reads again only the machine whose own condition failed: one went Dead before the write, the other 29 are claimed', async () => {
    const [model, ...ids] = await modelWithMachines(30, []);
    const dying = ids[4]!;
    const { store, ledger, done } = meteredStore({
      interfere: async (n) => {
        if (n !== 1) return;
        await doc.send(
          new UpdateCommand({
            TableName: TABLE,
            Key: { pk: modelPk(model!), sk: machineSk(dying) },
            UpdateExpression: 'SET #life = :dead',
            ExpressionAttributeNames: { '#life': 'life' },
            ExpressionAttributeValues: { ':dead': 'dead' },
          }),
        );
      },
    });
    try {
      const results = await store.claim(
        model!,
        ids.map((id) => request(id, [])),
      );
      const refused = results[4]!;
      expect(refused.ok).toBe(false);
      expect(!refused.ok && refused.error).toBeInstanceOf(MachineDeadError);
      expect(!refused.ok && (refused.error as Error).message).toBe(`machine ${dying} is dead`);
      const claimed = results.filter((r) => r.ok);
      expect(zonesOf(claimed)).toEqual({ 'us-east-1a': 10, 'us-east-1b': 10, 'us-east-1c': 9 });
      expect(await store.counts(model!, '')).toEqual({
        'us-east-1a': 10,
        'us-east-1b': 10,
        'us-east-1c': 9,
      });
      expect(ledger.cancelled).toBe(1);
      expect(ledger.reasons).toEqual({
        'machine ConditionalCheckFailed': 1,
        'machine None': 29,
        'counter None': 1,
      });
      expect(ledger.machineItems).toBe(31);
    } finally {
      done();
    }
  });

  it("reads no machine for claims given the views their caller read (a machine's first workflow step), and only the one whose view went stale", async () => {
    const [model, ...ids] = await modelWithMachines(30, ['db']);
    // what loadMachine with `prepare` reads: the machine and its view, in one GetItem each
    const reader = new ProvisioningStore(ddb, TABLE);
    const views = await Promise.all(
      ids.map(async (id) => (await reader.machineWithView(model!, id))!.view),
    );
    expect(views[0]).toEqual({ exists: true, life: 'alive', applications: ['db'] });
    // machine 7 is claimed by another worker after its view was read: the view says uncounted
    const stale = ids[7]!;
    const [elsewhere] = await new ZoneCountStore(ddb, TABLE).claim(model!, [
      request(stale, ['db']),
    ]);
    expect(elsewhere?.ok).toBe(true);
    const { store, ledger, done } = meteredStore({ noPause: true });
    try {
      const results = await store.claim(
        model!,
        ids.map((id, i) => ({ ...request(id, ['db']), view: views[i]! })),
      );
      expect(results.every((r) => r.ok)).toBe(true);
      // machine 7 moved from its first claim, counted once: 30 machines, 10 per zone
      expect(zonesOf(results)).toEqual({ 'us-east-1a': 10, 'us-east-1b': 10, 'us-east-1c': 10 });
      expect(await store.counts(model!, 'db')).toEqual({
        'us-east-1a': 10,
        'us-east-1b': 10,
        'us-east-1c': 10,
      });
      // the stale view's condition failed; that machine alone was read, once
      expect(ledger.cancelled).toBe(1);
      expect(ledger.reasons['machine ConditionalCheckFailed']).toBe(1);
      expect(ledger.machineItems).toBe(1);
    } finally {
      done();
    }
  });

  it('moves a machine out of the groups it is counted in now, not the ones first read: it was given up and claimed for another group meanwhile', async () => {
    const [model, m] = await modelWithMachines(1, ['web']);
    const other = new ZoneCountStore(ddb, TABLE);
    expect((await other.claim(model!, [request(m!, ['web'])]))[0]).toEqual({
      ok: true,
      zone: 'us-east-1a',
    });
    const { store, ledger, done } = meteredStore({
      interfere: async (n) => {
        if (n !== 1) return;
        // between this claim's read and its write: given up, then counted in `db`, same zone
        await other.release(model!, m!);
        expect((await other.claim(model!, [request(m!, ['db'])]))[0]).toEqual({
          ok: true,
          zone: 'us-east-1a',
        });
      },
    });
    try {
      const [moved] = await store.claim(model!, [request(m!, ['web'])]);
      expect(moved).toEqual({ ok: true, zone: 'us-east-1a' });
      expect(ledger.reasons['machine ConditionalCheckFailed']).toBe(1);
      expect(ledger.machineItems).toBe(2);
      // counted once, in `web`: `db` gave it back
      expect(await store.counts(model!, 'web')).toEqual({ 'us-east-1a': 1 });
      expect(await store.counts(model!, 'db')).toEqual({});
    } finally {
      done();
    }
  });

  it('makes a second claim of one machine in the same call after the first, as a move from its zone', async () => {
    const [model, a, b] = await modelWithMachines(2, ['web']);
    const { store, ledger, done } = meteredStore();
    const only = (machineId: string, failedZones: string[]): ClaimRequest => ({
      machineId,
      groups: ['web'],
      order: (population) => orderZones({ machineId, zones: ZONES, population, failedZones }),
    });
    try {
      const results = await store.claim(model!, [
        only(a!, ['us-east-1b', 'us-east-1c']),
        request(b!, ['web']),
        // a retried claim of `a` that failed in the zone the first gave it
        only(a!, ['us-east-1a']),
      ]);
      expect(results).toEqual([
        { ok: true, zone: 'us-east-1a' },
        { ok: true, zone: 'us-east-1b' },
        { ok: true, zone: 'us-east-1c' },
      ]);
      expect(await store.counts(model!, 'web')).toEqual({ 'us-east-1b': 1, 'us-east-1c': 1 });
      // `a` read again after its first claim, to move from what it wrote
      expect(ledger.machineItems).toBe(3);
      expect(ledger.cancelled).toBe(0);
    } finally {
      done();
    }
  });

  it('gives up after maxTries lost rounds with ZoneClaimContendedError, having read each machine once and counted none', async () => {
    const [model, ...ids] = await modelWithMachines(5, ['db']);
    const { store, ledger, done } = meteredStore({
      maxTries: 3,
      noPause: true,
      interfere: () => moveCounter(model!, 'db'),
    });
    try {
      const results = await store.claim(
        model!,
        ids.map((id) => request(id, ['db'])),
      );
      expect(results.map((r) => (r.ok ? r.zone : (r.error as Error).message))).toEqual(
        ids.map((id) => `could not claim a zone for machine ${id} after 3 tries`),
      );
      for (const r of results) expect(!r.ok && r.error).toBeInstanceOf(ZoneClaimContendedError);
      expect(ledger.transactions).toBe(3);
      expect(ledger.machineItems).toBe(5);
      expect(ledger.counterItems).toBe(2); // the counter exists from the second round on
      expect(await store.counts(model!, 'db')).toEqual({});
      const machine = await doc.send(
        new GetCommand({
          TableName: TABLE,
          Key: { pk: modelPk(model!), sk: machineSk(ids[0]!) },
          ConsistentRead: true,
        }),
      );
      expect(machine.Item?.countedZone).toBeUndefined();
    } finally {
      done();
    }
  });
});
