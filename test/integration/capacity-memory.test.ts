import { createActivities } from '../../activities';
import { CapacityMemory } from '../../activities/capacity-memory';
import { runningCatchUpsSettled } from '../../activities/running-catch-up';
import { regionalEc2 } from '../../ec2/regional';
import type { LaunchPlan } from '../../activities/types';
import { provisioningTuning } from '../../config/env';
import { ProvisioningStore } from '../../state/provisioning';
import { Repository } from '../../state/repository';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, ec2ClientFor, loadTestStack, privateTable } from './stack';

/**
 * Capacity memory in zone claims (issue 10), through the claim activity on
 * the stack's DynamoDB and EC2 catalogue: a zone where a type lately lacked
 * capacity comes last for the next machines; an explicit retry ignores it.
 */
const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const ec2 = ec2ClientFor(stack);
// its own table: the sweeper would launch the machines written here (stack.ts)
const table = privateTable(ddb, 'capacity-memory');
const repo = new Repository(ddb, table.tableName);
const store = new ProvisioningStore(ddb, table.tableName);
const memory = new CapacityMemory(60_000);
const activities = createActivities({
  repo,
  store,
  ec2ForRegion: regionalEc2(() => ec2, 0),
  defaultRegion: stack.region,
  tuning: provisioningTuning({}),
  capacityMemory: memory,
  deployment: 'capacity-memory-test',
  taskQueue: 'unused',
});

beforeAll(() => table.create());

afterAll(async () => {
  // a catch-up window still open writes to the table: it ends first (a log after the file's end fails the run)
  await runningCatchUpsSettled();
  await table.drop();
  ec2.destroy();
  ddb.destroy();
});

const ZONES = ['us-east-1a', 'us-east-1b'];
const TYPE = 'm5.large';

async function machines(n: number): Promise<{ model: string; ids: string[] }> {
  const model = await seedModel(repo, 'capmem', { region: stack.region });
  const ids = await repo.allocateMachineIds(model, n);
  await repo.putNewMachines(
    ids.map((id) =>
      pendingMachine(model, id, {
        constraints: `zones=${ZONES.join(',')}`,
        applications: ['mem'],
      }),
    ),
  );
  return { model, ids };
}

const plan: LaunchPlan = {
  region: stack.region,
  instanceType: TYPE,
  imageId: 'ami-unused',
  hardware: { arch: 'amd64', cores: 2, mem: 8192 },
  zonesConstraint: ZONES,
  applications: ['mem'],
};

it('steers the next machines away from a zone that lately lacked capacity for the type, unless a retry asks', async () => {
  const { model, ids } = await machines(3);
  const [m0, m1, m2] = ids as [string, string, string];
  memory.remember(stack.region, TYPE, 'us-east-1a');
  // a is as empty as b and sorts first, but lately lacked m5.large
  expect(await activities.claimZone({ model, machineId: m0, plan, exclude: [] })).toBe(
    'us-east-1b',
  );
  // an explicit retry looks at every zone as it is: a is the least populous
  expect(
    await activities.claimZone({
      model,
      machineId: m1,
      plan,
      exclude: [],
      ignoreCapacityMemory: true,
    }),
  ).toBe('us-east-1a');
  memory.remember(stack.region, TYPE, 'us-east-1b');
  // every allowed zone lately lacked it: they are all tried, least populous first
  expect(await activities.claimZone({ model, machineId: m2, plan, exclude: [] })).toBe(
    'us-east-1a',
  );
  expect(await store.zones.counts(model, 'mem')).toEqual({ 'us-east-1a': 2, 'us-east-1b': 1 });
});

it('writes allocating with the zone and attempt in the claim itself', async () => {
  const { model, ids } = await machines(1);
  const zone = await activities.claimZone({
    model,
    machineId: ids[0]!,
    plan: { ...plan, instanceType: 't3.small' },
    exclude: [],
    attempt: 2,
    maxAttempts: 10,
  });
  expect(await repo.getMachine(model, ids[0]!)).toMatchObject({
    status: 'allocating',
    message: `starting in zone "${zone}" (attempt 2 of 10)`,
  });
  const allocating = (await store.machines(model)).filter((m) => m.status === 'allocating');
  expect(allocating.map((m) => m.id)).toEqual([ids[0]]);
});
