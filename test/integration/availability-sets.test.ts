import {
  DescribeInstancesCommand,
  DescribePlacementGroupsCommand,
  EC2Client,
  type Instance,
  type PlacementGroup,
} from '@aws-sdk/client-ec2';
import { PARTITION_COUNT, placementGroupName } from '../../core';
import { Repository } from '../../state/repository';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Availability-set mode (issue 14) on the shared local stack: each
 * application's machines go into a partition placement group of their own,
 * spread least populous first over zones and, within each zone, over the
 * group's partitions; the group goes with its last machine. The EC2 proxy
 * serves placement groups per caller, so EC2 is asked here with the local
 * worker's credentials.
 */

const stack = loadTestStack();
const api = apiClient(stack);
const repo = new Repository(dynamoClientFor(stack), stack.tableName);
const ec2 = new EC2Client({
  region: stack.region,
  endpoint: stack.ec2Endpoint,
  // the worker's caller identity on the local stack (local/stack.ts)
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 1,
});
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const IN_ZONES = `zones=${ZONES.join(',')}`;
/** A busy 2-core machine launches 14 instances slowly; bounds are generous, never sleeps. */
const SLOW = 600_000;

afterAll(() => {
  ec2.destroy();
});

async function status(model: string): Promise<any> {
  const res = await api.get(`/v1/models/${model}/status`);
  expect(res.status).toBe(200);
  return res.body;
}

async function deploy(model: string, name: string, numUnits: number): Promise<void> {
  const res = await api.post(`/v1/models/${model}/applications`, {
    name,
    base: 'ubuntu@24.04',
    numUnits,
    constraints: IN_ZONES,
  });
  expect(res.status).toBe(201);
}

/** The machines hosting the application's units, once every one of them runs. */
async function runningMachines(model: string, app: string, count: number): Promise<any[]> {
  const done = await eventually(
    () => status(model),
    (s) => {
      const ids = Object.values<any>(s.applications[app]?.units ?? {}).map((u) => u.machine);
      return (
        ids.length === count &&
        ids.every((id: string) => s.machines[id]?.status === 'running') &&
        Object.values<any>(s.machines).every((m) => m.status !== 'error')
      );
    },
    SLOW,
    1000,
  );
  const ids = Object.values<any>(done.applications[app].units).map((u) => u.machine as string);
  return ids.map((id) => ({ id, ...done.machines[id] }));
}

async function describeInstances(ids: string[]): Promise<Instance[]> {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }));
  return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
}

async function groupsNamed(name: string): Promise<PlacementGroup[]> {
  const out = await ec2.send(
    new DescribePlacementGroupsCommand({ Filters: [{ Name: 'group-name', Values: [name] }] }),
  );
  return out.PlacementGroups ?? [];
}

function spread(values: readonly number[]): number {
  return Math.max(...values) - Math.min(...values);
}

describe('availability-set mode', () => {
  it(
    'puts each application in its own partition placement group, spread over zones and partitions, and deletes a group with its last machine',
    async () => {
      const model = uniqueName('avsets');
      expect((await api.post('/v1/models', { name: model, availabilitySets: true })).status).toBe(
        201,
      );
      const { uid } = await repo.getModel(model);
      const webGroup = placementGroupName(uid, 'web');
      const dbGroup = placementGroupName(uid, 'db');

      await deploy(model, 'web', 14);
      await deploy(model, 'db', 2);
      const web = await runningMachines(model, 'web', 14);
      const db = await runningMachines(model, 'db', 2);

      // status: every machine names its group and a partition 1..7
      for (const m of web) {
        expect(m.placementGroup).toBe(webGroup);
        expect(m.partition).toBeGreaterThanOrEqual(1);
        expect(m.partition).toBeLessThanOrEqual(PARTITION_COUNT);
      }
      for (const m of db) expect(m.placementGroup).toBe(dbGroup);
      expect(webGroup).not.toBe(dbGroup);
      // the machine view says the same
      const one = await api.get(`/v1/models/${model}/machines/${web[0].id}`);
      expect(one.body).toMatchObject({ placementGroup: webGroup, partition: web[0].partition });

      // zones within ±1 over the three zones
      const perZone = ZONES.map((z) => web.filter((m) => m.zone === z).length);
      expect(perZone.reduce((a, b) => a + b, 0)).toBe(14);
      expect(spread(perZone)).toBeLessThanOrEqual(1);
      // partitions within ±1 in each zone
      for (const zone of ZONES) {
        const counts = Array.from(
          { length: PARTITION_COUNT },
          (_, k) => web.filter((m) => m.zone === zone && m.partition === k + 1).length,
        );
        expect(spread(counts)).toBeLessThanOrEqual(1);
      }

      // EC2 says the same: every instance in the application's group, in the recorded partition
      const instances = await describeInstances(web.map((m) => m.instanceId as string));
      expect(instances).toHaveLength(14);
      for (const instance of instances) {
        const m = web.find((x) => x.instanceId === instance.InstanceId);
        expect(instance.Placement?.GroupName).toBe(webGroup);
        expect(instance.Placement?.PartitionNumber).toBe(m.partition);
        expect(instance.Placement?.AvailabilityZone).toBe(m.zone);
      }
      const dbInstances = await describeInstances(db.map((m) => m.instanceId as string));
      expect(dbInstances.map((i) => i.Placement?.GroupName)).toEqual([dbGroup, dbGroup]);
      expect(await groupsNamed(webGroup)).toEqual([
        expect.objectContaining({ GroupName: webGroup, Strategy: 'partition', PartitionCount: 7 }),
      ]);
      expect(await groupsNamed(dbGroup)).toHaveLength(1);

      // the db group goes with its last machine; web's stays
      expect((await api.delete(`/v1/models/${model}/applications/db`)).status).toBe(202);
      await eventually(
        () => groupsNamed(dbGroup),
        (groups) => groups.length === 0,
        SLOW,
        1000,
      );
      await eventually(
        () => status(model),
        (s) => db.every((m) => s.machines[m.id] === undefined),
        SLOW,
        1000,
      );
      expect(await groupsNamed(webGroup)).toHaveLength(1);

      // and the model's removal takes the last group with it
      expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
      await eventually(
        () => groupsNamed(webGroup),
        (groups) => groups.length === 0,
        SLOW,
        1000,
      );
    },
    3 * SLOW,
  );

  it('refuses placement and add-machine, and the mode cannot change after creation', async () => {
    const model = uniqueName('avsets-refusals');
    expect((await api.post('/v1/models', { name: model, availabilitySets: true })).status).toBe(
      201,
    );
    const placed = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@24.04',
      to: ['zone=us-east-1a'],
    });
    expect(placed).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-placement',
          message: 'unit placement is not supported with availability-sets-enabled',
        },
      },
    });
    expect(await api.post(`/v1/models/${model}/machines`, {})).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'add-machine is not supported with availability-sets-enabled',
        },
      },
    });
    expect(await api.call('PATCH', `/v1/models/${model}`, { availabilitySets: false })).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'availability-sets-enabled cannot be changed after the model is created',
        },
      },
    });
    expect((await api.get(`/v1/models/${model}`)).body.availabilitySets).toBe(true);
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
  });
});
