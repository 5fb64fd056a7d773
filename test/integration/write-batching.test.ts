import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { createServer } from 'node:net';
import {
  emptyTotals,
  meterCapacity,
  STATEMENT_FALLBACK,
  STATEMENT_REFUSED,
} from '../../config/capacity-meter';
import { EntityNotFoundError } from '../../state/errors';
import { machineSk, modelPk } from '../../state/keys';
import type { LaunchMarker, MarkOutcome } from '../../state/launch-batches';
import {
  ProvisioningStore,
  routineRunningStatement,
  type AddressWrite,
  type RoutineRunning,
  type RunningRecord,
} from '../../state/provisioning';
import { sendStatements } from '../../state/statement-batch';
import { Repository } from '../../state/repository';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

/**
 * The launch path's single-item writes sent together (state/statement-batch.ts)
 * on DynamoDB Local: a batch's marks and the records of launched instances
 * made at once go out as BatchExecuteStatement calls of up to 25, and every
 * caller gets exactly the answer its own UpdateItem would have given.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const doc = DynamoDBDocumentClient.from(ddb);
// its own table: the sweeper would launch the machines written here (stack.ts)
const table = privateTable(ddb, 'write-batching');
const TABLE = table.tableName;
const repo = new Repository(ddb, TABLE);

/** A store on a client of its own, its DynamoDB calls counted by command. */
function meteredStore(batching: boolean) {
  const client = dynamoClientFor(stack);
  const totals = emptyTotals();
  meterCapacity(client, totals);
  const store = new ProvisioningStore(client, TABLE, batching ? {} : { batching: false });
  return { client, totals, store };
}

const together = meteredStore(true);
const alone = meteredStore(false);

beforeAll(() => table.create());

afterAll(async () => {
  await table.drop();
  for (const c of [ddb, together.client, alone.client]) c.destroy();
});

async function newModel(): Promise<string> {
  return seedModel(repo, 'wb', { region: stack.region });
}

async function addMachines(model: string, n: number): Promise<string[]> {
  const ids = await repo.allocateMachineIds(model, n);
  await repo.putNewMachines(ids.map((id) => pendingMachine(model, id)));
  return ids;
}

async function setFields(model: string, id: string, fields: Record<string, unknown>) {
  const names = Object.keys(fields);
  await doc.send(
    new UpdateCommand({
      TableName: TABLE,
      Key: { pk: modelPk(model), sk: machineSk(id) },
      UpdateExpression: `SET ${names.map((_, i) => `#n${i} = :v${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#n${i}`, n])),
      ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, fields[n]])),
    }),
  );
}

async function remove(model: string, id: string) {
  await doc.send(
    new DeleteCommand({ TableName: TABLE, Key: { pk: modelPk(model), sk: machineSk(id) } }),
  );
}

async function item(model: string, id: string): Promise<Record<string, unknown> | undefined> {
  const out = await doc.send(
    new GetCommand({
      TableName: TABLE,
      Key: { pk: modelPk(model), sk: machineSk(id) },
      ConsistentRead: true,
    }),
  );
  return out.Item;
}

const callsOf = (totals: ReturnType<typeof emptyTotals>) => ({ ...totals.calls });
const writeUnitsOf = (totals: ReturnType<typeof emptyTotals>) => totals.writeUnits;

/** Statements written again alone (refused for another reason than their condition) so far. */
const fallbacksOf = (totals: ReturnType<typeof emptyTotals>) =>
  totals.failed[STATEMENT_FALLBACK] ?? 0;

function since(before: Record<string, number>, after: Record<string, number>) {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after))
    if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
  return out;
}

/**
 * Sixty machines in every state a mark meets, and the mark each is asked
 * for (batch `B`): free, held for its attempt by another batch, marked for
 * an earlier attempt, this very mark repeated, a takeover of the batch the
 * try settled (and one whose marker moved on), dying, dead, gone.
 */
async function markScenario(
  model: string,
): Promise<Array<{ id: string; marker: LaunchMarker; replaces?: string; expected: MarkOutcome }>> {
  const ids = await addMachines(model, 60);
  const cases: Array<{
    id: string;
    marker: LaunchMarker;
    replaces?: string;
    expected: MarkOutcome;
  }> = [];
  for (const [i, id] of ids.entries()) {
    const marker = { batchId: 'B', tokenSeed: `seed-${id}` };
    if (i < 40) {
      cases.push({ id, marker, expected: { marked: true } });
    } else if (i < 45) {
      await setFields(model, id, {
        launchBatch: { batchId: `other-${id}`, tokenSeed: marker.tokenSeed },
      });
      cases.push({ id, marker, expected: { marked: false, claimedBy: `other-${id}` } });
    } else if (i < 48) {
      await setFields(model, id, { launchBatch: { batchId: 'earlier', tokenSeed: 'seed-before' } });
      cases.push({ id, marker, expected: { marked: true } });
    } else if (i < 50) {
      await setFields(model, id, { launchBatch: marker });
      cases.push({ id, marker, expected: { marked: true } });
    } else if (i === 50) {
      await setFields(model, id, {
        launchBatch: { batchId: 'settled', tokenSeed: marker.tokenSeed },
      });
      cases.push({ id, marker, replaces: 'settled', expected: { marked: true } });
    } else if (i === 51) {
      await setFields(model, id, { launchBatch: { batchId: 'next', tokenSeed: 'seed-next' } });
      cases.push({
        id,
        marker,
        replaces: 'settled',
        expected: { marked: false, claimedBy: 'next' },
      });
    } else if (i < 54) {
      await setFields(model, id, { life: 'dying' });
      cases.push({ id, marker, expected: { marked: true } });
    } else if (i < 57) {
      await setFields(model, id, { life: 'dead' });
      cases.push({ id, marker, expected: { marked: false } });
    } else {
      await remove(model, id);
      cases.push({ id, marker, expected: { marked: false } });
    }
  }
  return cases;
}

describe('marks sent together', () => {
  it('sends 60 marks made at once as 3 calls, each answered as a single mark would be', async () => {
    const [modelT, modelA] = [await newModel(), await newModel()];
    const [casesT, casesA] = [await markScenario(modelT), await markScenario(modelA)];
    const mark = (s: ProvisioningStore, model: string, c: (typeof casesT)[number]) =>
      s.batches.mark(
        model,
        c.id,
        c.marker,
        c.replaces !== undefined ? { replaces: c.replaces } : {},
      );

    const before = callsOf(together.totals);
    const refusedBefore = { ...together.totals.failed };
    const unitsBefore = writeUnitsOf(together.totals);
    const outcomes = await Promise.all(casesT.map((c) => mark(together.store, modelT, c)));
    expect(since(before, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 3 });
    expect(outcomes).toEqual(casesT.map((c) => c.expected));
    // the refused ones counted as refused statements (the meter), not as failed calls; none
    // refused for another reason, so none written again alone
    expect(since(refusedBefore, { ...together.totals.failed })).toEqual({
      [STATEMENT_REFUSED]: casesT.filter((c) => !c.expected.marked).length,
    });
    expect(fallbacksOf(together.totals)).toBe(0);
    expect(casesT.filter((c) => !c.expected.marked)).toHaveLength(12);

    // the same marks alone: the same answers and the same markers
    const aloneUnitsBefore = writeUnitsOf(alone.totals);
    const single = [];
    for (const c of casesA) single.push(await mark(alone.store, modelA, c));
    expect(single).toEqual(outcomes);
    // the meter's estimate for the statements (DynamoDB Local reports none) is what DynamoDB
    // Local reports for the same marks made as UpdateItem: 1 unit a mark that was written
    const together60 = writeUnitsOf(together.totals) - unitsBefore;
    expect(together60).toBe(writeUnitsOf(alone.totals) - aloneUnitsBefore);
    expect(together60).toBe(48);
    for (const [i, c] of casesT.entries()) {
      const [t, a] = [await item(modelT, c.id), await item(modelA, casesA[i]!.id)];
      expect(t?.launchBatch).toEqual(a?.launchBatch);
    }
  });

  it('accepts a mark repeated with the same batch, and sends two marks of one machine in two calls', async () => {
    const model = await newModel();
    const [id] = await addMachines(model, 1);
    const marker = { batchId: 'B1', tokenSeed: 's1' };
    const before = callsOf(together.totals);
    // DynamoDB refuses a call naming one item twice: the repeat waits for the next call
    const outcomes = await Promise.all([
      together.store.batches.mark(model, id!, marker),
      together.store.batches.mark(model, id!, marker),
    ]);
    expect(outcomes).toEqual([{ marked: true }, { marked: true }]);
    expect(since(before, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 2 });
    expect((await item(model, id!))?.launchBatch).toEqual(marker);
  });

  it('sends a lone mark when its window ends, promptly', async () => {
    const model = await newModel();
    const [id] = await addMachines(model, 1);
    const before = callsOf(together.totals);
    const started = Date.now();
    await expect(
      together.store.batches.mark(model, id!, { batchId: 'L', tokenSeed: 'l' }),
    ).resolves.toEqual({ marked: true });
    // a 5 ms window and one call; the bound is generous for a busy shared machine
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(since(before, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 1 });
  });
});

const RUN_FULL: RunningRecord = {
  instanceId: 'i-full',
  imageId: 'ami-1',
  zone: 'us-east-1b',
  instanceType: 'm5.large',
  hardware: { arch: 'amd64', cores: 2, mem: 8192 },
  pricePerHour: 0.096,
  placementGroup: 'juju-g',
  partition: 3,
};
const RUN_BARE: RunningRecord = {
  instanceId: 'i-bare',
  imageId: 'ami-2',
  zone: 'us-east-1a',
  instanceType: 't3.small',
  hardware: { arch: 'amd64', cores: 2, mem: 2048 },
};

/** What a machine was before an instance was recorded on it: a claim, an old instance's addresses and placement. */
const BEFORE = {
  zoneClaim: 'us-east-1b',
  privateAddress: '10.0.0.9',
  publicAddress: '54.0.0.9',
  pricePerHour: 1.5,
  placementGroup: 'juju-old',
  partition: 1,
  status: 'pending',
  message: 'waiting',
};

/** An item without what differs between two machines and two moments: key, id, times. */
function comparable(i: Record<string, unknown> | undefined) {
  const {
    sk: _sk,
    id: _id,
    instanceRecordedAt,
    instanceStatusAt,
    updatedAt,
    createdAt: _c,
    ...rest
  } = i ?? {};
  expect(typeof instanceRecordedAt).toBe('string');
  expect(instanceStatusAt).toBe(instanceRecordedAt);
  expect(updatedAt).toBe(instanceRecordedAt);
  return rest;
}

describe('records of launched instances sent together', () => {
  it('writes exactly what a record alone writes, with or without price and placement', async () => {
    const model = await newModel();
    const ids = await addMachines(model, 4);
    for (const id of ids) await setFields(model, id, BEFORE);
    const before = callsOf(together.totals);
    const unitsBefore = writeUnitsOf(together.totals);
    const lives = await Promise.all([
      together.store.recordRunning(model, ids[0]!, RUN_FULL),
      together.store.recordRunning(model, ids[1]!, RUN_BARE),
    ]);
    expect(lives).toEqual(['alive', 'alive']);
    expect(since(before, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 1 });
    expect(fallbacksOf(together.totals)).toBe(0);
    const aloneUnitsBefore = writeUnitsOf(alone.totals);
    expect(await alone.store.recordRunning(model, ids[2]!, RUN_FULL)).toBe('alive');
    expect(await alone.store.recordRunning(model, ids[3]!, RUN_BARE)).toBe('alive');
    // the meter's estimate for the two statements is what DynamoDB Local reports for the same
    // records as UpdateItem: the item and the byInstance entry its new instanceId makes, 2 each
    const togetherUnits = writeUnitsOf(together.totals) - unitsBefore;
    expect(togetherUnits).toBe(writeUnitsOf(alone.totals) - aloneUnitsBefore);
    expect(togetherUnits).toBe(4);

    const [full, bare] = [
      comparable(await item(model, ids[0]!)),
      comparable(await item(model, ids[1]!)),
    ];
    expect(full).toEqual(comparable(await item(model, ids[2]!)));
    expect(bare).toEqual(comparable(await item(model, ids[3]!)));
    expect(full).toMatchObject({
      status: 'running',
      message: '',
      instanceId: 'i-full',
      instanceStatus: 'pending',
      pricePerHour: 0.096,
      placementGroup: 'juju-g',
      partition: 3,
    });
    for (const gone of ['zoneClaim', 'privateAddress', 'publicAddress'])
      expect(full).not.toHaveProperty(gone);
    for (const gone of [
      'zoneClaim',
      'privateAddress',
      'publicAddress',
      'pricePerHour',
      'placementGroup',
      'partition',
    ])
      expect(bare).not.toHaveProperty(gone);
  });

  it('answers a removed machine with EntityNotFoundError for its caller only, and a dying or dead one with its life', async () => {
    const model = await newModel();
    const ids = await addMachines(model, 5);
    await remove(model, ids[1]!);
    await setFields(model, ids[2]!, { life: 'dying' });
    await setFields(model, ids[3]!, { life: 'dead' });
    const before = callsOf(together.totals);
    const refusedBefore = { ...together.totals.failed };
    const answers = await Promise.allSettled(
      ids.map((id, i) =>
        together.store.recordRunning(model, id, { ...RUN_BARE, instanceId: `i-${i}` }),
      ),
    );
    // three refused by their condition (gone, dying, dead): none counted as written alone for
    // another reason
    expect(since(refusedBefore, { ...together.totals.failed })).toEqual({ [STATEMENT_REFUSED]: 3 });
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : a.reason))).toEqual([
      'alive',
      new EntityNotFoundError(`machine ${ids[1]} not found`),
      'dying',
      'dead',
      'alive',
    ]);
    expect(answers[1]).toMatchObject({ reason: expect.any(EntityNotFoundError) });
    // one call for the five; the two not alive recorded alone (their life answered by the write)
    expect(since(before, callsOf(together.totals))).toEqual({
      BatchExecuteStatement: 1,
      UpdateItem: 2,
    });
    expect(await item(model, ids[1]!)).toBeUndefined();
    for (const i of [2, 3]) {
      expect(await item(model, ids[i]!)).toMatchObject({ instanceId: `i-${i}`, status: 'running' });
    }
  });
});

/**
 * A machine as a launch left it (its instance recorded, EC2's `pending`, an
 * old instance's addresses), then moved on as each case says: the states
 * the routine `running` write meets, its outcome, and the addresses it is
 * given.
 */
const RECORDED = {
  status: 'running',
  message: '',
  instanceId: 'i-routine',
  instanceStatus: 'pending',
  instanceStatusAt: '2026-11-27T00:00:00.000Z',
  privateAddress: '10.0.0.9',
  publicAddress: '54.0.0.9',
};
const ROUTINE_CASES: Array<{
  name: string;
  fields: Record<string, unknown>;
  gone?: true;
  addresses?: RoutineRunning['addresses'];
  expected: 'written' | 'refused';
}> = [
  {
    name: 'launched, pending',
    fields: {},
    addresses: { privateAddress: '10.0.0.5', publicAddress: '54.0.0.5' },
    expected: 'written',
  },
  {
    name: 'running already, its public address gone',
    fields: { instanceStatus: 'running' },
    addresses: { privateAddress: '10.0.0.5' },
    expected: 'written',
  },
  {
    name: 'in no state yet',
    fields: { instanceStatus: undefined },
    addresses: {},
    expected: 'written',
  },
  { name: 'no addresses given', fields: {}, expected: 'written' },
  {
    // what a launch's record leaves (no address), in a private subnet: one SET, one REMOVE
    name: 'launched, no address recorded, EC2 lists only a private one',
    fields: { privateAddress: undefined, publicAddress: undefined },
    addresses: { privateAddress: '10.0.0.5' },
    expected: 'written',
  },
  {
    name: 'another instance',
    fields: { instanceId: 'i-other' },
    addresses: { privateAddress: '10.0.0.5' },
    expected: 'refused',
  },
  {
    // lost, then its instance starting again (workflows/machine.ts): only `status` refuses it
    name: 'down',
    fields: { status: 'down' },
    addresses: { privateAddress: '10.0.0.5' },
    expected: 'refused',
  },
  { name: 'stopped', fields: { instanceStatus: 'stopped' }, expected: 'refused' },
  { name: 'dying', fields: { life: 'dying' }, addresses: {}, expected: 'refused' },
  { name: 'dead', fields: { life: 'dead' }, expected: 'refused' },
  // its instance still recorded: only `status` refuses it
  { name: 'in error', fields: { status: 'error' }, expected: 'refused' },
  { name: 'gone', fields: {}, gone: true, expected: 'refused' },
];

/** A machine per case (`copies` of each), set as the case says; its write's arguments. */
async function routineScenario(model: string, copies: number): Promise<RoutineRunning[]> {
  const cases = ROUTINE_CASES.flatMap((c) => Array<typeof c>(copies).fill(c));
  const ids = await addMachines(model, cases.length);
  const writes: RoutineRunning[] = [];
  for (const [i, c] of cases.entries()) {
    const id = ids[i]!;
    const fields: Record<string, unknown> = { ...RECORDED, ...c.fields };
    const absent = Object.keys(fields).filter((k) => fields[k] === undefined);
    await setFields(
      model,
      id,
      Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
    );
    for (const name of absent) {
      await doc.send(
        new UpdateCommand({
          TableName: TABLE,
          Key: { pk: modelPk(model), sk: machineSk(id) },
          UpdateExpression: 'REMOVE #n',
          ExpressionAttributeNames: { '#n': name },
        }),
      );
    }
    if (c.gone) await remove(model, id);
    writes.push({
      model,
      machineId: id,
      instanceId: 'i-routine',
      ...(c.addresses ? { addresses: c.addresses } : {}),
    });
  }
  return writes;
}

/** A machine's item without what differs between two machines and two moments. */
function routineComparable(i: Record<string, unknown> | undefined) {
  if (!i) return undefined;
  const { sk: _sk, id: _id, createdAt: _c, updatedAt: _u, instanceStatusAt: _s, ...rest } = i;
  return rest;
}

/** Each written machine's item as it is now, by machine id. */
async function itemsOf(model: string, writes: ReadonlyArray<{ machineId: string }>) {
  return new Map(
    await Promise.all(
      writes.map(async (w) => [w.machineId, await item(model, w.machineId)] as const),
    ),
  );
}

/**
 * The single write on a machine of each case (`aloneWrites`, one a case, by
 * `writeAlone`): the answer the case expects, and the very item each of the
 * case's `copies` machines written together (`writes`, in case order) was left with.
 */
async function expectAsAlone<W extends { machineId: string }>(
  model: string,
  cases: ReadonlyArray<{ name: string; expected: string }>,
  writes: readonly W[],
  copies: number,
  aloneWrites: readonly W[],
  writeAlone: (w: W) => Promise<boolean | 'stale'>,
) {
  for (const [n, c] of cases.entries()) {
    const w = aloneWrites[n]!;
    await expect(writeAlone(w)).resolves.toBe(c.expected === 'written');
    for (const copy of writes.slice(copies * n, copies * n + copies)) {
      expect({ case: c.name, item: routineComparable(await item(model, copy.machineId)) }).toEqual({
        case: c.name,
        item: routineComparable(await item(model, w.machineId)),
      });
    }
  }
}

describe('routine running writes sent together (the running catch-up)', () => {
  it('answers and writes each machine exactly as the single routine write does, in calls of 25', async () => {
    const model = await newModel();
    const writes = await routineScenario(model, 3);
    const aloneWrites = await routineScenario(model, 1);
    const before = await itemsOf(model, writes);
    const calls = callsOf(together.totals);
    const failed = { ...together.totals.failed };
    const units = writeUnitsOf(together.totals);
    const started = new Date().toISOString();

    const outcomes = await together.store.recordRoutineRunningAll(writes);

    const expected = ROUTINE_CASES.flatMap((c) => Array<string>(3).fill(c.expected));
    expect(outcomes).toEqual(expected.map((outcome) => ({ outcome })));
    // 36 statements: two calls; every refusal by its condition (none written again alone)
    expect(since(calls, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 2 });
    const refusals = expected.filter((e) => e === 'refused').length;
    expect(since(failed, { ...together.totals.failed })).toEqual({
      'BatchExecuteStatement:statement': refusals,
    });
    expect(fallbacksOf(together.totals)).toBe(0);

    // the single write on a machine of each case: the same answer, the same item after it
    const aloneUnits = writeUnitsOf(alone.totals);
    await expectAsAlone(model, ROUTINE_CASES, writes, 3, aloneWrites, (w) =>
      alone.store.recordRoutineInstanceState(
        w.model,
        w.machineId,
        w.instanceId,
        'running',
        w.addresses,
      ),
    );
    // the meter's estimate for the written statements is what DynamoDB Local reports for the
    // same writes as UpdateItem: 1 each (the instance index is untouched)
    const written = expected.length - refusals;
    expect(writeUnitsOf(together.totals) - units).toBe(written);
    expect(writeUnitsOf(alone.totals) - aloneUnits).toBe(written / 3);

    // what each case left: running with the addresses given; a refused machine untouched
    const [launched, moved, , untouched, privateOnly] = [0, 3, 6, 9, 12].map((k) => writes[k]!);
    expect(await item(model, launched!.machineId)).toMatchObject({
      status: 'running',
      instanceStatus: 'running',
      privateAddress: '10.0.0.5',
      publicAddress: '54.0.0.5',
    });
    const after = (await item(model, launched!.machineId))!;
    expect(String(after.instanceStatusAt) >= started).toBe(true);
    expect(await item(model, moved!.machineId)).not.toHaveProperty('publicAddress');
    const privately = await item(model, privateOnly!.machineId);
    expect(privately).toMatchObject({ instanceStatus: 'running', privateAddress: '10.0.0.5' });
    expect(privately).not.toHaveProperty('publicAddress');
    expect(await item(model, untouched!.machineId)).toMatchObject({
      instanceStatus: 'running',
      privateAddress: '10.0.0.9',
      publicAddress: '54.0.0.9',
    });
    for (const [k, w] of writes.entries()) {
      if (expected[k] === 'refused') {
        expect(await item(model, w.machineId)).toEqual(before.get(w.machineId));
      }
    }
  });

  it('is refused by DynamoDB Local with ConditionalCheckFailed, the item as it was when there is one', async () => {
    const model = await newModel();
    const writes = await routineScenario(model, 1);
    const pick = (name: string) => writes[ROUTINE_CASES.findIndex((c) => c.name === name)]!;
    const responses = await sendStatements(
      doc,
      [pick('launched, pending'), pick('down'), pick('gone')].map((w) =>
        routineRunningStatement(TABLE, w),
      ),
    );
    expect(responses[0]!.Error).toBeUndefined();
    expect(responses[1]!.Error).toMatchObject({
      Code: 'ConditionalCheckFailed',
      Item: expect.objectContaining({ status: 'down', instanceStatus: 'pending' }) as unknown,
    });
    expect(responses[2]!.Error?.Code).toBe('ConditionalCheckFailed');
    expect(responses[2]!.Error?.Item).toBeUndefined();
  });
});

/**
 * A sweep's address writes, one machine per case: what the machine records,
 * the addresses EC2 lists, and whether the write applies (it does only while
 * the machine records that instance).
 */
const ADDRESS_CASES: Array<{
  name: string;
  fields: Record<string, unknown> | 'gone';
  addresses: { privateAddress?: string; publicAddress?: string };
  expected: 'written' | 'refused';
}> = [
  {
    name: 'running, no addresses yet',
    fields: { status: 'running', instanceId: 'i-A', instanceStatus: 'running' },
    addresses: { privateAddress: '10.0.0.5', publicAddress: '54.0.0.5' },
    expected: 'written',
  },
  {
    name: 'public address gone (stopped)',
    fields: {
      status: 'running',
      instanceId: 'i-A',
      instanceStatus: 'stopped',
      privateAddress: '10.0.0.9',
      publicAddress: '54.0.0.9',
    },
    addresses: { privateAddress: '10.0.0.9' },
    expected: 'written',
  },
  {
    name: 'neither listed',
    fields: {
      status: 'running',
      instanceId: 'i-A',
      privateAddress: '10.0.0.9',
      publicAddress: '54.0.0.9',
    },
    addresses: {},
    expected: 'written',
  },
  {
    name: 'another instance recorded (reprovisioned)',
    fields: { status: 'running', instanceId: 'i-B', privateAddress: '10.0.0.9' },
    addresses: { privateAddress: '10.0.0.5', publicAddress: '54.0.0.5' },
    expected: 'refused',
  },
  {
    name: 'no instance recorded',
    fields: { status: 'pending' },
    addresses: { privateAddress: '10.0.0.5' },
    expected: 'refused',
  },
  { name: 'gone', fields: 'gone', addresses: { privateAddress: '10.0.0.5' }, expected: 'refused' },
];

/** `copies` machines of each address case, in case order, and the write each is asked for. */
async function addressScenario(model: string, copies: number): Promise<AddressWrite[]> {
  const ids = await addMachines(model, ADDRESS_CASES.length * copies);
  const writes: AddressWrite[] = [];
  for (const [k, id] of ids.entries()) {
    const c = ADDRESS_CASES[Math.floor(k / copies)]!;
    if (c.fields === 'gone') await remove(model, id);
    else await setFields(model, id, c.fields);
    writes.push({ machineId: id, instanceId: 'i-A', ...c.addresses });
  }
  return writes;
}

describe('address writes sent together (the sweep)', () => {
  it('answers and writes each machine exactly as recordAddresses alone does, in one call per 25', async () => {
    const model = await newModel();
    const writes = await addressScenario(model, 5);
    const aloneWrites = await addressScenario(model, 1);
    const before = await itemsOf(model, writes);
    const calls = callsOf(together.totals);
    const units = writeUnitsOf(together.totals);

    const outcomes = await together.store.recordAddressesAll(model, writes);

    const expected = ADDRESS_CASES.flatMap((c) => Array<string>(5).fill(c.expected));
    expect(outcomes).toEqual(expected.map((outcome) => ({ outcome })));
    // 30 statements: two calls, where each was an UpdateItem
    expect(since(calls, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 2 });
    expect(fallbacksOf(together.totals)).toBe(0);
    const written = expected.filter((e) => e === 'written').length;
    expect(writeUnitsOf(together.totals) - units).toBe(written);

    await expectAsAlone(model, ADDRESS_CASES, writes, 5, aloneWrites, (w) =>
      alone.store.recordAddresses(model, w.machineId, w.instanceId, w),
    );
    // what the cases left: addresses set, one removed, both removed; refused ones untouched
    expect(await item(model, writes[0]!.machineId)).toMatchObject({
      privateAddress: '10.0.0.5',
      publicAddress: '54.0.0.5',
    });
    const stopped = await item(model, writes[5]!.machineId);
    expect(stopped).toMatchObject({ privateAddress: '10.0.0.9' });
    expect(stopped).not.toHaveProperty('publicAddress');
    const neither = await item(model, writes[10]!.machineId);
    expect(neither).not.toHaveProperty('privateAddress');
    expect(neither).not.toHaveProperty('publicAddress');
    for (const [k, w] of writes.entries()) {
      if (expected[k] === 'refused') {
        expect(await item(model, w.machineId)).toEqual(before.get(w.machineId));
      }
    }
  });
});

/** DynamoDB's largest item, in bytes. */
const ITEM_LIMIT = 400 * 1024;

/** An item's size as DynamoDB counts it (names and values; a number taken at its largest). */
function sizeOf(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return 21;
  if (typeof value === 'boolean' || value === null) return 1;
  if (Array.isArray(value)) return 3 + value.reduce((t: number, v) => t + 1 + sizeOf(v), 0);
  if (typeof value === 'object') {
    return (
      3 +
      Object.entries(value as Record<string, unknown>).reduce(
        (t, [k, v]) => t + 1 + Buffer.byteLength(k) + sizeOf(v),
        0,
      )
    );
  }
  return 0;
}

describe('a statement refused for another reason than its condition', () => {
  it('is written alone, told once by its code, and counted as a fallback', async () => {
    const model = await newModel();
    const ids = await addMachines(model, 3);
    // machine 1 a little under DynamoDB's item limit: its record would take it over, which
    // refuses the statement (ValidationError, not its condition) and then its single write
    const current = (await item(model, ids[1]!))!;
    const top = Object.entries(current).reduce(
      (t, [k, v]) => t + Buffer.byteLength(k) + sizeOf(v),
      0,
    );
    await setFields(model, ids[1]!, {
      padding: 'x'.repeat(ITEM_LIMIT - 100 - top - 'padding'.length),
    });
    const before = callsOf(together.totals);
    const failedBefore = { ...together.totals.failed };
    const warned: unknown[] = [];
    const spy = jest.spyOn(console, 'warn').mockImplementation((line) => void warned.push(line));
    const answers = await Promise.allSettled(
      ids.map((id, i) =>
        together.store.recordRunning(model, id, { ...RUN_BARE, instanceId: `i-${i}` }),
      ),
    ).finally(() => spy.mockRestore());

    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect([answers[0], answers[2]]).toEqual([
      { status: 'fulfilled', value: 'alive' },
      { status: 'fulfilled', value: 'alive' },
    ]);
    // the single write's own error, as before batching
    expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/item size/i) as unknown,
    });
    // one call; the refused statement counted refused and written again alone (fallback): once
    expect(since(before, callsOf(together.totals))).toEqual({ BatchExecuteStatement: 1 });
    expect(since(failedBefore, { ...together.totals.failed })).toEqual({
      [STATEMENT_REFUSED]: 1,
      [STATEMENT_FALLBACK]: 1,
      UpdateItem: 1,
    });
    // told once, by code and count, with no item in it
    expect(warned.map((l) => JSON.parse(l as string) as unknown)).toEqual([
      {
        level: 'warn',
        message:
          'DynamoDB refused statements of a BatchExecuteStatement for another reason than their condition; each is written alone',
        calls: 'provisioning:recordRunning',
        statements: 1,
        of: 3,
        codes: { ValidationError: 1 },
      },
    ]);
    expect((await item(model, ids[1]!))?.instanceId).toBeUndefined();
    expect((await item(model, ids[0]!))?.instanceId).toBe('i-0');
    expect((await item(model, ids[2]!))?.instanceId).toBe('i-2');
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('a call that fails as a whole', () => {
  it('rejects every caller in it with the error (none hangs, none is dropped)', async () => {
    const port = await closedPort();
    const client = new DynamoDBClient({
      region: stack.region,
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    });
    const store = new ProvisioningStore(client, TABLE);
    try {
      const answers = await Promise.allSettled([
        ...['0', '1', '2'].map((id) =>
          store.batches.mark('m', id, { batchId: 'X', tokenSeed: id }),
        ),
        ...['3', '4'].map((id) => store.recordRunning('m', id, RUN_BARE)),
      ]);
      expect(answers.map((a) => a.status)).toEqual(Array(5).fill('rejected'));
      const reasons = answers.map((a) => (a as PromiseRejectedResult).reason as Error);
      for (const r of reasons) {
        expect(r.message).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
      }
      // the marks shared one call, so one error; the records another
      expect(reasons[1]).toBe(reasons[0]);
      expect(reasons[2]).toBe(reasons[0]);
      expect(reasons[4]).toBe(reasons[3]);
    } finally {
      client.destroy();
    }
  });
});
