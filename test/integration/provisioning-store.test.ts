import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { orderZones } from '../../core';
import { EntityConflictError, EntityNotFoundError } from '../../state/errors';
import { MODEL_SK, counterSk, machineSk, modelPk } from '../../state/keys';
import { MachineDeadError, ProvisioningStore } from '../../state/provisioning';
import { zoneCountSk } from '../../state/provisioning-keys';
import type { ClaimRequest } from '../../state/zone-counts';
import { Repository } from '../../state/repository';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

/**
 * The provisioning store on DynamoDB Local: zone claims stay atomic under
 * far more concurrency than a test through the workflow can produce, and
 * dying models go once empty.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const doc = DynamoDBDocumentClient.from(ddb);
// its own table: the sweeper would launch the machines written here (stack.ts)
const table = privateTable(ddb, 'provisioning-store');
const TABLE = table.tableName;
const repo = new Repository(ddb, TABLE);
const store = new ProvisioningStore(ddb, TABLE);
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'].map((name) => ({
  name,
  state: 'available',
}));

beforeAll(() => table.create());

afterAll(async () => {
  await table.drop();
  ddb.destroy();
});

async function newModel(): Promise<string> {
  return seedModel(repo, 'store', { region: stack.region });
}

async function addMachines(model: string, applications: string[][]): Promise<string[]> {
  const ids = await repo.allocateMachineIds(model, applications.length);
  await repo.putNewMachines(
    applications.map((apps, i) => pendingMachine(model, ids[i]!, { applications: apps })),
  );
  return ids;
}

/** A claim as the workflow asks for one: least populous zone of the machine's group. */
function request(machineId: string, groups: string[], exclude: string[] = []): ClaimRequest {
  return {
    machineId,
    groups,
    order: (population) =>
      orderZones({ machineId, zones: ZONES, population, failedZones: exclude }),
  };
}

/** One machine's claim on its own; its error is thrown. */
async function claimOne(
  model: string,
  machineId: string,
  groups: string[],
  exclude: string[] = [],
): Promise<string> {
  const [result] = await store.claimZones(model, [request(machineId, groups, exclude)]);
  if (!result!.ok) throw result!.error;
  return result!.zone;
}

function count(zones: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const z of zones) out[z] = (out[z] ?? 0) + 1;
  return out;
}

describe('zone claims', () => {
  it('spreads 30 machines of one group claiming at the same moment 10/10/10 (separate claims racing), and a second group independently', async () => {
    const model = await newModel();
    const web = await addMachines(
      model,
      Array.from({ length: 30 }, () => ['web']),
    );
    const db = await addMachines(
      model,
      Array.from({ length: 6 }, () => ['db']),
    );
    // one claim per call, all at once: they race on the counters' versions
    const claims = await Promise.all([
      ...web.map((id) => claimOne(model, id, ['web'])),
      ...db.map((id) => claimOne(model, id, ['db'])),
    ]);
    expect(count(claims.slice(0, 30))).toEqual({
      'us-east-1a': 10,
      'us-east-1b': 10,
      'us-east-1c': 10,
    });
    expect(count(claims.slice(30))).toEqual({ 'us-east-1a': 2, 'us-east-1b': 2, 'us-east-1c': 2 });
    expect(await store.zones.counts(model, 'web')).toEqual({
      'us-east-1a': 10,
      'us-east-1b': 10,
      'us-east-1c': 10,
    });
    expect(await store.zones.counts(model, 'db')).toEqual({
      'us-east-1a': 2,
      'us-east-1b': 2,
      'us-east-1c': 2,
    });
  });

  it('assigns 250 claims made together least populous first, in transactions of at most 100 items, within one of each other', async () => {
    const model = await newModel();
    const ids = await addMachines(
      model,
      Array.from({ length: 250 }, () => ['big']),
    );
    const results = await store.claimZones(
      model,
      ids.map((id) => request(id, ['big'])),
    );
    const zones = results.map((r) => (r.ok ? r.zone : `error: ${String(r.error)}`));
    expect(count(zones)).toEqual({ 'us-east-1a': 84, 'us-east-1b': 83, 'us-east-1c': 83 });
    expect(await store.zones.counts(model, 'big')).toEqual({
      'us-east-1a': 84,
      'us-east-1b': 83,
      'us-east-1c': 83,
    });
  });

  it('gives up a claim: the zone counts one fewer for the next chooser; a machine claiming again moves its count', async () => {
    const model = await newModel();
    const [a, b, c] = await addMachines(model, [['web'], ['web'], ['web']]);
    expect(await claimOne(model, a!, ['web'])).toBe('us-east-1a');
    expect(await claimOne(model, b!, ['web'])).toBe('us-east-1b');
    await store.releaseZoneClaim(model, a!);
    await store.releaseZoneClaim(model, a!); // idempotent
    expect(await store.zoneClaim(model, a!)).toBeUndefined();
    expect(await store.zones.counts(model, 'web')).toEqual({ 'us-east-1b': 1 });
    expect(await claimOne(model, c!, ['web'])).toBe('us-east-1a');
    // a machine that failed in a and c is left with b
    expect(await claimOne(model, a!, ['web'], ['us-east-1a', 'us-east-1c'])).toBe('us-east-1b');
    // b claims again without releasing (a retried pass): it leaves b for c's neighbour
    expect(await claimOne(model, b!, ['web'], ['us-east-1b'])).toBe('us-east-1c');
    expect(await store.zones.counts(model, 'web')).toEqual({
      'us-east-1a': 1,
      'us-east-1b': 1,
      'us-east-1c': 1,
    });
  });

  it("keeps a claim its own claimant (run and attempt) already made: nothing written, even when that claim landed after the caller's read", async () => {
    const model = await newModel();
    const [m, x, y] = await addMachines(model, [['db'], ['db'], ['db']]);
    const mine = 'machine:store:1/run-1/1';
    const claim = async (fields: Partial<ClaimRequest>) => {
      const [result] = await store.claimZones(model, [{ ...request(m!, ['db']), ...fields }]);
      if (!result!.ok) throw result!.error;
      return result!.zone;
    };
    // the machine as the caller read it before any claim: alive, counted nowhere
    const before = (
      await doc.send(
        new GetCommand({ TableName: TABLE, Key: { pk: modelPk(model), sk: machineSk(m!) } }),
      )
    ).Item!;
    expect(await claim({ claimedBy: mine, exclude: [] })).toBe('us-east-1a');
    // two more of the group land in us-east-1a: a fresh claim of m would now move it
    await store.claimZones(model, [
      { machineId: x!, groups: ['db'], order: () => ['us-east-1a'] },
      { machineId: y!, groups: ['db'], order: () => ['us-east-1a'] },
    ]);
    const counts = { 'us-east-1a': 3 };
    expect(await store.zones.counts(model, 'db')).toEqual(counts);
    // the same claimant again (a step run again after its task was lost): kept
    expect(await claim({ claimedBy: mine, exclude: [] })).toBe('us-east-1a');
    // from the read made before its own claim landed: the write's condition fails, the next
    // round reads the machine and keeps the claim
    const { machineView } = await import('../../state/zone-count-reads');
    expect(await claim({ claimedBy: mine, exclude: [], view: machineView(before) })).toBe(
      'us-east-1a',
    );
    expect(await store.zones.counts(model, 'db')).toEqual(counts);
    const item = (
      await doc.send(
        new GetCommand({ TableName: TABLE, Key: { pk: modelPk(model), sk: machineSk(m!) } }),
      )
    ).Item!;
    expect(item).toMatchObject({ zoneClaim: 'us-east-1a', claimedBy: mine });
    // a zone it failed in, or another claimant (attempt 2): claimed afresh, moved
    expect(await claim({ claimedBy: mine, exclude: ['us-east-1a'] })).toBe('us-east-1b');
    // (claimed again, not kept: its own count left out, us-east-1b and -1c tie, b first)
    expect(await claim({ claimedBy: 'machine:store:1/run-1/2', exclude: [] })).toBe('us-east-1b');
    expect(await store.zones.counts(model, 'db')).toEqual({ 'us-east-1a': 2, 'us-east-1b': 1 });
    const moved = (
      await doc.send(
        new GetCommand({ TableName: TABLE, Key: { pk: modelPk(model), sk: machineSk(m!) } }),
      )
    ).Item!;
    expect(moved).toMatchObject({ zoneClaim: 'us-east-1b', claimedBy: 'machine:store:1/run-1/2' });
  });

  it('availability sets: claims made together assign partitions least populous first within each zone, and releases give them back', async () => {
    const model = await newModel();
    const ids = await addMachines(
      model,
      Array.from({ length: 14 }, () => ['web']),
    );
    const results = await store.claimZones(
      model,
      ids.map((id) => ({ ...request(id, ['web']), partitions: 7 })),
    );
    const claimed = results.map((r) => {
      if (!r.ok) throw r.error;
      return { zone: r.zone, partition: r.partition! };
    });
    // 5/5/4 over the zones, then partitions 1..5 (or 1..4) once each in every zone
    expect(count(claimed.map((c) => c.zone))).toEqual({
      'us-east-1a': 5,
      'us-east-1b': 5,
      'us-east-1c': 4,
    });
    for (const zone of ['us-east-1a', 'us-east-1b', 'us-east-1c']) {
      const parts = claimed.filter((c) => c.zone === zone).map((c) => c.partition);
      expect(new Set(parts).size).toBe(parts.length);
      expect(Math.max(...parts)).toBe(parts.length);
    }
    expect(await store.countedPlacement(model, ids[0]!)).toEqual(claimed[0]);
    const partitions = await store.zones.partitionCounts(model, 'web');
    expect(Object.values(partitions).reduce((x, y) => x + y, 0)).toBe(14);
    expect(partitions['us-east-1a#1']).toBe(1);

    // a release gives the partition back: the next claim in that zone takes it
    const first = claimed[0]!;
    await store.releaseZoneClaim(model, ids[0]!);
    await store.releaseZoneClaim(model, ids[0]!); // idempotent
    expect(await store.countedPlacement(model, ids[0]!)).toEqual({});
    expect(
      (await store.zones.partitionCounts(model, 'web'))[`${first.zone}#${first.partition}`],
    ).toBeUndefined();
    const [again] = await store.claimZones(model, [
      {
        machineId: ids[0]!,
        groups: ['web'],
        partitions: 7,
        order: () => [first.zone],
      },
    ]);
    expect(again).toEqual({ ok: true, zone: first.zone, partition: first.partition });

    // racing one at a time over separate claims spreads just the same
    const more = await addMachines(
      model,
      Array.from({ length: 7 }, () => ['db']),
    );
    const raced = await Promise.all(
      more.map(async (id) => {
        const [r] = await store.claimZones(model, [
          { machineId: id, groups: ['db'], partitions: 7, order: () => ['us-east-1a'] },
        ]);
        if (!r!.ok) throw r!.error;
        return r!.partition;
      }),
    );
    expect([...raced].sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('refuses a claim for a Dead or missing machine, and fails only that claim of a batch', async () => {
    const model = await newModel();
    const [id, alive] = await addMachines(model, [[], []]);
    await doc.send(
      new PutCommand({
        TableName: TABLE,
        Item: {
          ...(
            await doc.send(
              new GetCommand({
                TableName: TABLE,
                Key: { pk: modelPk(model), sk: `MACHINE#${id!}` },
              }),
            )
          ).Item,
          life: 'dead',
        },
      }),
    );
    await expect(claimOne(model, id!, [])).rejects.toBeInstanceOf(MachineDeadError);
    await expect(claimOne(model, '999', [])).rejects.toBeInstanceOf(EntityNotFoundError);
    const results = await store.claimZones(model, [
      request(id!, []),
      request('999', []),
      request(alive!, []),
    ]);
    expect(results.map((r) => r.ok)).toEqual([false, false, true]);
    expect(results[2]).toEqual({ ok: true, zone: 'us-east-1a' });
  });

  it('records running and error with the claim gone, and answers not-found for a removed machine', async () => {
    const model = await newModel();
    const [ok, bad] = await addMachines(model, [[], []]);
    await claimOne(model, ok!, []);
    const life = await store.recordRunning(model, ok!, {
      instanceId: 'i-1',
      imageId: 'ami-1',
      zone: 'us-east-1a',
      instanceType: 't3.small',
      hardware: { arch: 'amd64', cores: 2, mem: 2048 },
    });
    expect(life).toBe('alive');
    expect(await repo.getMachine(model, ok!)).toMatchObject({
      status: 'running',
      instanceId: 'i-1',
      zone: 'us-east-1a',
      hardware: { arch: 'amd64', cores: 2, mem: 2048 },
    });
    expect(await store.zoneClaim(model, ok!)).toBeUndefined();

    expect(await claimOne(model, bad!, [])).toBe('us-east-1b');
    await store.recordError(model, bad!, 'InsufficientInstanceCapacity: none left');
    const failed = await repo.getMachine(model, bad!);
    expect(failed).toMatchObject({
      status: 'error',
      message: 'InsufficientInstanceCapacity: none left',
    });
    expect(failed.instanceId).toBeUndefined();
    expect(failed.zone).toBeUndefined();
    const inError = (await store.machines(model)).filter((m) => m.status === 'error');
    expect(inError.map((m) => m.id)).toEqual([bad]);
    // the running machine still counts; the failed one no longer does
    expect(await store.zones.counts(model, '')).toEqual({ 'us-east-1a': 1 });

    await expect(store.recordError(model, '999', 'x')).rejects.toBeInstanceOf(EntityNotFoundError);
    await expect(
      store.recordRunning(model, '999', {
        instanceId: 'i-2',
        imageId: 'ami-1',
        zone: 'us-east-1a',
        instanceType: 't3.small',
        hardware: { arch: 'amd64', cores: 2, mem: 2048 },
      }),
    ).rejects.toBeInstanceOf(EntityNotFoundError);
  });
});

describe('removal', () => {
  async function setLife(model: string, sk: string, life: string): Promise<void> {
    const item = (
      await doc.send(new GetCommand({ TableName: TABLE, Key: { pk: modelPk(model), sk } }))
    ).Item;
    await doc.send(new PutCommand({ TableName: TABLE, Item: { ...item, life } }));
  }

  it('removes only a Dead machine, then the dying model with its side items once the last machine is gone', async () => {
    const model = await newModel();
    const [m0, m1] = await addMachines(model, [[], []]);
    await claimOne(model, m0!, []); // leaves the group's #ZONES# item
    await doc.send(
      new PutCommand({
        TableName: TABLE,
        Item: { pk: modelPk(model), sk: counterSk('test'), next: 3 },
      }),
    );
    await expect(store.removeMachine(model, m0!)).rejects.toBeInstanceOf(EntityConflictError);

    await setLife(model, MODEL_SK, 'dying');
    await setLife(model, `MACHINE#${m0!}`, 'dead');
    await setLife(model, `MACHINE#${m1!}`, 'dead');
    expect(await store.removeMachine(model, m0!)).toEqual({ modelRemoved: false });
    expect(await store.removeMachine(model, m1!)).toEqual({ modelRemoved: true });
    await expect(repo.getModel(model)).rejects.toBeInstanceOf(EntityNotFoundError);
    for (const sk of [zoneCountSk(''), counterSk('test')]) {
      const left = await doc.send(
        new GetCommand({ TableName: TABLE, Key: { pk: modelPk(model), sk } }),
      );
      expect(left.Item).toBeUndefined();
    }
    // removing again is a no-op
    expect(await store.removeMachine(model, m1!)).toEqual({ modelRemoved: false });
  });

  it('reads the model item, then at most one entity, when a removal leaves others behind', async () => {
    const model = await newModel();
    await addMachines(
      model,
      Array.from({ length: 30 }, () => []),
    );
    // items each query of this client reads (Query's ScannedCount), counted from here on
    const counted = dynamoClientFor(stack);
    let scanned = 0;
    counted.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const body = out.output as { ScannedCount?: number };
        scanned += body.ScannedCount ?? 0;
        return out;
      },
      { step: 'initialize', name: 'countScanned' },
    );
    const counting = new ProvisioningStore(counted, TABLE);
    try {
      expect(await counting.removeModelIfDyingAndEmpty(model)).toBe(false);
      expect(scanned).toBe(0); // alive: the model item alone
      await setLife(model, MODEL_SK, 'dying');
      expect(await counting.removeModelIfDyingAndEmpty(model)).toBe(false);
      expect(scanned).toBe(1); // dying, not empty: one entity
    } finally {
      counted.destroy();
    }
  });

  it('keeps an alive model, and a dying one that still has entities', async () => {
    const model = await newModel();
    expect(await store.removeModelIfDyingAndEmpty(model)).toBe(false);
    await addMachines(model, [[]]);
    await setLife(model, MODEL_SK, 'dying');
    expect(await store.removeModelIfDyingAndEmpty(model)).toBe(false);
    expect((await repo.getModel(model)).life).toBe('dying');
  });
});

describe('routine liveness news written without the workflow', () => {
  const RUN = {
    imageId: 'ami-1',
    zone: 'us-east-1a',
    instanceType: 'm5.large',
    hardware: { arch: 'amd64', cores: 2, mem: 8192 },
  };

  async function runningMachine(): Promise<{ model: string; id: string }> {
    const model = await newModel();
    const [id] = await addMachines(model, [['web']]);
    await store.recordRunning(model, id!, { ...RUN, instanceId: 'i-routine' });
    return { model, id: id! };
  }

  it('records running (one write) with the addresses, and only while the machine still records that instance', async () => {
    const { model, id } = await runningMachine();
    await expect(
      store.recordRoutineInstanceState(model, id, 'i-routine', 'running', {
        privateAddress: '10.0.0.5',
        publicAddress: '54.0.0.5',
      }),
    ).resolves.toBe(true);
    const m = await repo.getMachine(model, id);
    expect(m).toMatchObject({
      status: 'running',
      instanceStatus: 'running',
      privateAddress: '10.0.0.5',
      publicAddress: '54.0.0.5',
      message: '',
    });
    // an address EC2 no longer lists is removed; none given, none touched
    await store.recordRoutineInstanceState(model, id, 'i-routine', 'running', {
      privateAddress: '10.0.0.5',
    });
    expect((await repo.getMachine(model, id)).publicAddress).toBeUndefined();
    // a stale instance id (the machine was reprovisioned since): nothing written
    const before = await repo.getMachine(model, id);
    await expect(store.recordRoutineInstanceState(model, id, 'i-old', 'running')).resolves.toBe(
      false,
    );
    expect(await repo.getMachine(model, id)).toEqual(before);
  });

  it('writes pending only over nothing or pending: a late pending of an instance recorded running is stale, dropped, nothing written', async () => {
    const { model, id } = await runningMachine();
    // recordRunning records EC2's `pending`; pending over pending applies
    await expect(store.recordRoutineInstanceState(model, id, 'i-routine', 'pending')).resolves.toBe(
      true,
    );
    await expect(store.recordRoutineInstanceState(model, id, 'i-routine', 'running')).resolves.toBe(
      true,
    );
    const running = await repo.getMachine(model, id);
    expect(running.instanceStatus).toBe('running');
    // a retried pending event, or a sweep that asked EC2 before the running landed
    await expect(
      store.recordRoutineInstanceState(model, id, 'i-routine', 'pending', {
        privateAddress: '10.0.0.9',
      }),
    ).resolves.toBe('stale');
    expect(await repo.getMachine(model, id)).toEqual(running);
    // a pending of another instance is no news of this one: the workflow's to decide
    await expect(store.recordRoutineInstanceState(model, id, 'i-old', 'pending')).resolves.toBe(
      false,
    );
    // a pending of a stopped instance is a start: refused, and left to the workflow (not stale)
    await store.recordInstanceState(model, id, 'i-routine', 'stopped');
    await expect(store.recordRoutineInstanceState(model, id, 'i-routine', 'pending')).resolves.toBe(
      false,
    );
    expect((await repo.getMachine(model, id)).instanceStatus).toBe('stopped');
  });

  it('leaves a machine that is down, stopped or dying to its workflow: nothing written', async () => {
    const lost = await runningMachine();
    await store.recordInstanceState(lost.model, lost.id, 'i-routine', 'terminated');
    await expect(
      store.recordRoutineInstanceState(lost.model, lost.id, 'i-routine', 'running'),
    ).resolves.toBe(false);
    expect(await repo.getMachine(lost.model, lost.id)).toMatchObject({
      status: 'down',
      instanceStatus: 'terminated',
    });

    const stopped = await runningMachine();
    await store.recordInstanceState(stopped.model, stopped.id, 'i-routine', 'stopped');
    await expect(
      store.recordRoutineInstanceState(stopped.model, stopped.id, 'i-routine', 'running'),
    ).resolves.toBe(false);
    expect(await repo.getMachine(stopped.model, stopped.id)).toMatchObject({
      status: 'running',
      instanceStatus: 'stopped',
      message: 'instance "i-routine" is stopped',
    });

    const dying = await runningMachine();
    await doc.send(
      new UpdateCommand({
        TableName: TABLE,
        Key: { pk: modelPk(dying.model), sk: machineSk(dying.id) },
        UpdateExpression: 'SET #life = :dying',
        ExpressionAttributeNames: { '#life': 'life' },
        ExpressionAttributeValues: { ':dying': 'dying' },
      }),
    );
    await expect(
      store.recordRoutineInstanceState(dying.model, dying.id, 'i-routine', 'running'),
    ).resolves.toBe(false);
    expect((await repo.getMachine(dying.model, dying.id)).instanceStatus).toBe('pending');

    await expect(
      store.recordRoutineInstanceState(dying.model, 'no-such-machine', 'i-routine', 'running'),
    ).resolves.toBe(false);
  });

  it('writes a Dead machine’s news of its instance going (no workflow task), only while it is Dead and records that instance', async () => {
    const { model, id } = await runningMachine();
    // alive: refused, nothing written (its workflow is told instead)
    const alive = await repo.getMachine(model, id);
    await expect(store.recordDeadInstanceState(model, id, 'i-routine', 'terminated')).resolves.toBe(
      false,
    );
    expect(await repo.getMachine(model, id)).toEqual(alive);
    await doc.send(
      new UpdateCommand({
        TableName: TABLE,
        Key: { pk: modelPk(model), sk: machineSk(id) },
        UpdateExpression: 'SET #life = :dead',
        ExpressionAttributeNames: { '#life': 'life' },
        ExpressionAttributeValues: { ':dead': 'dead' },
      }),
    );
    await expect(
      store.recordDeadInstanceState(model, id, 'i-routine', 'shutting-down'),
    ).resolves.toBe(true);
    await expect(store.recordDeadInstanceState(model, id, 'i-routine', 'terminated')).resolves.toBe(
      true,
    );
    const dead = await repo.getMachine(model, id);
    // only the instance's state: the teardown's status and message stay its own
    expect(dead).toMatchObject({
      life: 'dead',
      instanceStatus: 'terminated',
      status: alive.status,
      message: alive.message,
    });
    // another instance, or a machine already removed: refused, nothing created
    await expect(store.recordDeadInstanceState(model, id, 'i-old', 'terminated')).resolves.toBe(
      false,
    );
    expect(await repo.getMachine(model, id)).toEqual(dead);
    await expect(
      store.recordDeadInstanceState(model, 'no-such-machine', 'i-routine', 'terminated'),
    ).resolves.toBe(false);
    await expect(repo.getMachine(model, 'no-such-machine')).rejects.toThrow();
  });

  it('refuses to write a state that is not routine', async () => {
    const { model, id } = await runningMachine();
    await expect(
      store.recordRoutineInstanceState(model, id, 'i-routine', 'terminated'),
    ).rejects.toThrow('instance state "terminated" is not routine news');
  });
});
