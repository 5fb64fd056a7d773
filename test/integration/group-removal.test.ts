import { randomUUID } from 'node:crypto';
import {
  CreatePlacementGroupCommand,
  DescribePlacementGroupsCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import type { ActivityDeps } from '../../activities/deps';
import { recordActivities } from '../../activities/records';
import { placementGroupName } from '../../core';
import type { Ec2Proxy } from '../../local/ec2-proxy';
import { startEc2Proxy } from '../../local/ec2-proxy';
import { EntityNotFoundError } from '../../state/errors';
import { ProvisioningStore } from '../../state/provisioning';
import { Repository } from '../../state/repository';
import { seedModel } from './fixtures';
import { dynamoClientFor, ec2ClientFor, loadTestStack, privateTable } from './stack';

/**
 * The removal activity in availability-set mode, once its machine is gone:
 * a placement group EC2 refuses to delete is left (and said so in the log),
 * and the removal answers as usual, so the workflow's teardown ends. Faults
 * are global to a proxy, so this file starts its own in front of the stack's
 * moto (it keeps placement groups itself), and its own table (the sweeper
 * would launch the machines written here).
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const table = privateTable(ddb, 'group-removal');
const repo = new Repository(ddb, table.tableName);
const store = new ProvisioningStore(ddb, table.tableName);
let proxy: Ec2Proxy;
let ec2: EC2Client;
let activities: ReturnType<typeof recordActivities>;

async function faults(body: unknown): Promise<void> {
  const res = await fetch(`${proxy.url}/_admin/faults`, {
    method: 'PUT',
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  await table.create();
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  ec2 = ec2ClientFor(stack, proxy.url);
  // only what the removal uses: the records and the region's EC2 client
  activities = recordActivities({
    repo,
    store,
    ec2ForRegion: () => ({ ec2 }),
  } as unknown as ActivityDeps);
});

afterEach(() => faults({}));

afterAll(async () => {
  ec2.destroy();
  await proxy.close();
  await table.drop();
  ddb.destroy();
});

/** A dying availability-set model whose one Dead machine ran in the `web` group, and that group. */
async function dyingModelWithDeadMachine(): Promise<{ model: string; group: string }> {
  const uid = randomUUID();
  const model = await seedModel(repo, 'groups', {
    uid,
    availabilitySets: true,
    region: stack.region,
  });
  const group = placementGroupName(uid, 'web');
  const [id] = await repo.allocateMachineIds(model, 1);
  expect(id).toBe('0');
  const now = new Date().toISOString();
  await repo.putNewMachines([
    {
      model,
      id: '0',
      base: 'ubuntu@24.04',
      constraints: '',
      applications: ['web'],
      principals: [],
      containers: [],
      life: 'dead',
      status: 'stopping',
      message: '',
      placementGroup: group,
      createdAt: now,
      updatedAt: now,
    },
  ]);
  await repo.markModelDying(model);
  await ec2.send(
    new CreatePlacementGroupCommand({ GroupName: group, Strategy: 'partition', PartitionCount: 7 }),
  );
  return { model, group };
}

async function groupNames(name: string): Promise<string[]> {
  const out = await ec2.send(
    new DescribePlacementGroupsCommand({ Filters: [{ Name: 'group-name', Values: [name] }] }),
  );
  return (out.PlacementGroups ?? []).map((g) => g.GroupName ?? '');
}

describe('removeMachine in availability-set mode', () => {
  it("deletes the group with the group's last machine", async () => {
    const { model, group } = await dyingModelWithDeadMachine();
    expect(await groupNames(group)).toEqual([group]);
    await expect(activities.removeMachine({ model, machineId: '0' })).resolves.toEqual({
      modelRemoved: true,
    });
    expect(await groupNames(group)).toEqual([]);
  });

  it('answers normally when EC2 refuses to delete the group, logging the code and leaving the group', async () => {
    const { model, group } = await dyingModelWithDeadMachine();
    await faults({ errors: { deletePlacementGroup: 'UnauthorizedOperation' } });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    let removed;
    let logged: unknown[];
    try {
      removed = await activities.removeMachine({ model, machineId: '0' });
      logged = warn.mock.calls.map(([line]) => JSON.parse(String(line)) as unknown);
    } finally {
      warn.mockRestore();
    }
    expect(removed).toEqual({ modelRemoved: true });
    await expect(repo.getMachine(model, '0')).rejects.toBeInstanceOf(EntityNotFoundError);
    expect(logged).toEqual([
      expect.objectContaining({
        message: 'placement group not deleted; left for a later removal',
        model,
        machineId: '0',
        placementGroup: group,
        code: 'UnauthorizedOperation',
      }),
    ]);
    await faults({});
    expect(await groupNames(group)).toEqual([group]);
    // the activity's retry (or a second delivery) finds nothing left to do and answers too
    await expect(activities.removeMachine({ model, machineId: '0' })).resolves.toEqual({
      modelRemoved: false,
    });
  });
});
