import type { ServiceContext } from '../../service/context';
import { newMachine, newUnit } from '../../service/records';
import { modelStatus } from '../../service/status';
import { unitItem } from '../../state/items';
import { Repository } from '../../state/repository';
import { eventually } from './api-client';
import { seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

const stack = loadTestStack();
const client = dynamoClientFor(stack);
// its own table: the sweeper would launch the 1,000 machines written here (stack.ts)
const table = privateTable(client, 'status-cost');
const repo = new Repository(client, table.tableName);
const ctx: ServiceContext = {
  repo,
  workflows: {
    start: () => Promise.reject(new Error('no workflows in this test')),
    startMany: () => Promise.reject(new Error('no workflows in this test')),
    signal: () => Promise.reject(new Error('no workflows in this test')),
    ensureSweep: () => Promise.reject(new Error('no workflows in this test')),
  },
  defaultRegion: stack.region,
  now: () => new Date(),
  log: { warn: () => undefined, info: () => undefined, error: () => undefined },
};

beforeAll(() => table.create());

afterAll(async () => {
  await table.drop();
  client.destroy();
});

async function modelWithMachines(count: number): Promise<string> {
  const now = new Date().toISOString();
  const name = await seedModel(repo, 'big');
  const ids = await repo.allocateMachineIds(name, count);
  await repo.putNewMachines(
    ids.map((id) =>
      newMachine({ model: name, id, base: 'ubuntu@24.04', constraints: 'mem=2048M', now }),
    ),
  );
  return name;
}

async function statusCost(model: string): Promise<{ capacity: number; machines: number }> {
  const before = repo.consumedReadCapacity;
  const status = await modelStatus(ctx, model);
  return {
    capacity: repo.consumedReadCapacity - before,
    machines: Object.keys(status.machines).length,
  };
}

describe('status of a large model', () => {
  it("is served by Queries of its own partition: 1,000 machines, and a cost that other models' size does not change", async () => {
    const model = await modelWithMachines(1000);
    const first = await statusCost(model);
    expect(first.machines).toBe(1000);
    expect(first.capacity).toBeGreaterThan(0);

    await modelWithMachines(1000);
    const second = await statusCost(model);
    expect(second).toEqual(first);
  });
});

describe('indexes', () => {
  it('finds the machines hosting an application (gsi1)', async () => {
    const now = new Date().toISOString();
    const model = await seedModel(repo, 'idx');
    const ids = await repo.allocateMachineIds(model, 3);
    await repo.putNewMachines(
      ids.map((id) => newMachine({ model, id, base: 'ubuntu@24.04', constraints: '', now })),
    );
    const tx = repo.transaction();
    tx.put(
      unitItem(
        newUnit({ model, application: 'web', number: 0, machine: '0', constraints: '', now }),
      ),
    );
    tx.put(
      unitItem(
        newUnit({ model, application: 'web', number: 1, machine: '2', constraints: '', now }),
      ),
    );
    tx.put(
      unitItem(
        newUnit({ model, application: 'db', number: 0, machine: '1', constraints: '', now }),
      ),
    );
    // a subordinate unit does not make its machine part of the application's group
    tx.put(
      unitItem(
        newUnit({
          model,
          application: 'web',
          number: 2,
          machine: '1',
          constraints: '',
          principal: 'db/0',
          now,
        }),
      ),
    );
    await repo.commit(tx);
    // global secondary indexes are eventually consistent
    await eventually(
      () => repo.machinesOfApplication(model, 'web'),
      (m) => m.length === 2,
      5000,
    );
    expect((await repo.machinesOfApplication(model, 'web')).sort()).toEqual(['0', '2']);
    expect(await repo.machinesOfApplication(model, 'db')).toEqual(['1']);
  });
});
