import { EntityConflictError } from '../../state/errors';
import { Repository } from '../../state/repository';
import type { ApplicationRecord, ModelRecord } from '../../state/types';
import type { ServiceContext } from '../../service/context';
import { deployAtOnce } from '../../service/deploy';
import { addUnitsInBulk } from '../../service/units-bulk';
import type { MachineWorkflows } from '../../service/workflows';
import type { CreatedMachine } from '../../temporal/created-machine';
import { seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

/**
 * deploy and bulk add-unit write their machines naming the model's uid, only
 * while the model has it, and hand their workflows what they wrote (issue 26,
 * MachineWorkflowInput.created): the services themselves, on DynamoDB Local,
 * with a model record read before the model was destroyed and re-created.
 */
const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
// its own table: the stack's sweeper would start workflows for the machines written here
const table = privateTable(ddb, 'creation-uid');
const repo = new Repository(ddb, table.tableName);

type Start = { ids: readonly string[]; created?: CreatedMachine };

function context(): { ctx: ServiceContext; starts: Start[] } {
  const starts: Start[] = [];
  const workflows: MachineWorkflows = {
    start: () => Promise.resolve(),
    startMany: (_model, ids, _by, created) => {
      starts.push({ ids, ...(created ? { created } : {}) });
      return Promise.resolve();
    },
    signal: () => Promise.resolve(),
    ensureSweep: () => Promise.resolve(),
  };
  const ctx: ServiceContext = {
    repo,
    workflows,
    defaultRegion: stack.region,
    now: () => new Date(),
    log: { warn: () => undefined, info: () => undefined, error: () => undefined },
  };
  return { ctx, starts };
}

function application(model: string, name: string): ApplicationRecord {
  return {
    model,
    name,
    charm: name,
    base: 'ubuntu@22.04',
    constraints: 'mem=2048M',
    subordinate: false,
    life: 'alive',
    createdAt: new Date().toISOString(),
    version: 0,
  };
}

/** The model as a request read it, and as it is after a destroy and re-create by name. */
async function readThenRecreated(): Promise<{ read: ModelRecord; now: ModelRecord }> {
  const name = await seedModel(repo, 'uid', { region: stack.region });
  const read = await repo.getModel(name);
  return { read: { ...read, uid: 'an-older-model' }, now: read };
}

beforeAll(() => table.create());

afterAll(async () => {
  await table.drop();
  ddb.destroy();
});

it('deploy refuses to write when the model it read is gone, and hands its machines their creation otherwise', async () => {
  const { read, now } = await readThenRecreated();
  const { ctx, starts } = context();
  const refused = deployAtOnce(ctx, read, application(read.name, 'db'), 2);
  await expect(refused).rejects.toThrow(EntityConflictError);
  await expect(refused).rejects.toThrow(`model "${read.name}" is being destroyed`);
  // nothing half-written: no application, no machine, no workflow
  await expect(repo.getApplication(read.name, 'db')).rejects.toThrow(/not found/);
  expect(await repo.listMachines(read.name)).toEqual([]);
  expect(starts).toEqual([]);

  const units = await deployAtOnce(ctx, now, application(now.name, 'db'), 2);
  const machines = await repo.listMachines(now.name);
  expect(machines.map((m) => [m.id, m.modelUid, m.principals])).toEqual(
    units.map((u) => [u.machine, now.uid, [u.name]]),
  );
  expect(starts).toEqual([
    {
      ids: units.map((u) => u.machine),
      created: {
        modelUid: now.uid,
        region: stack.region,
        availabilitySets: false,
        base: 'ubuntu@22.04',
        constraints: 'mem=2048M',
        applications: ['db'],
        principalsOf: Object.fromEntries(units.map((u) => [u.machine, [u.name]])),
      },
    },
  ]);
});

it('bulk add-unit refuses to write when the model it read is gone; its machines name the uid otherwise', async () => {
  const { read, now } = await readThenRecreated();
  const { ctx } = context();
  await deployAtOnce(ctx, now, application(now.name, 'db'), 0);
  const app = await repo.getApplication(now.name, 'db');
  const units = async (model: ModelRecord, numbers: number[], appNow = app) => {
    const ids = await repo.allocateMachineIds(model.name, numbers.length);
    return addUnitsInBulk(ctx, {
      model,
      app: appNow,
      constraints: 'mem=2048M',
      units: numbers.map((number, i) => ({ number, hostId: ids[i]! })),
    });
  };
  const refused = units(read, [0, 1]);
  await expect(refused).rejects.toThrow(EntityConflictError);
  await expect(refused).rejects.toThrow(`model "${read.name}" is being destroyed`);
  expect(await repo.listMachines(now.name)).toEqual([]);

  const written = await units(now, [2, 3]);
  expect([...written.namingUid].sort()).toEqual(written.units.map((u) => u.machine).sort());
  for (const m of await repo.listMachines(now.name)) expect(m.modelUid).toBe(now.uid);
});

it('bulk add-unit whose chunk lost a race names no uid for the machines it then wrote one by one', async () => {
  const { now } = await readThenRecreated();
  const { ctx } = context();
  await deployAtOnce(ctx, now, application(now.name, 'db'), 0);
  const app = await repo.getApplication(now.name, 'db');
  const ids = await repo.allocateMachineIds(now.name, 2);
  // the application as read before another request changed it: the bulk write loses the race
  const stale = { ...app, version: app.version - 1 };
  const written = await addUnitsInBulk(ctx, {
    model: now,
    app: stale,
    constraints: 'mem=2048M',
    units: ids.map((hostId, i) => ({ number: 5 + i, hostId })),
  });
  expect(written.units.map((u) => u.machine).sort()).toEqual([...ids].sort());
  // so their workflows are started without a creation saying they do (service/units.ts)
  expect(written.namingUid.size).toBe(0);
  for (const m of await repo.listMachines(now.name)) expect(m.modelUid).toBeUndefined();
});
