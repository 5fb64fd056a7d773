import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import type { MachineSnapshot, StartedInstance } from '../../activities/types';
import type { StartInstanceInput } from '../../activities/launch';
import { provisioningTuning } from '../../config/env';
import { regionalEc2 } from '../../ec2/regional';
import { liveInstancesTagged } from '../../ec2/tags';
import { ProvisioningStore } from '../../state/provisioning';
import { Repository } from '../../state/repository';
import type { CreatedMachine } from '../../temporal/created-machine';
import { launchTokenSeed } from '../../temporal/launch-token';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, ec2ClientFor, loadTestStack, privateTable } from './stack';

/**
 * The window (a review finding of LAUNCH_IN_TASK, now a regression test): a
 * first workflow task lost while its worker is alive (the server lost it,
 * or the worker could not reach it) is run again on another worker while the
 * lost task's launch still waits in its batch, before the batch marks the
 * machine. There is no launch marker to find yet; the claim itself says who
 * made it (`claimedBy`: the run and attempt), so the first read run again
 * keeps the zone this run claimed instead of claiming afresh (which, after
 * a burst moved the counts, would choose another zone). Both launches then
 * have the same token seed: whichever marks first holds the machine, the
 * other takes what that batch launched, and one instance goes out.
 *
 * On the stack's DynamoDB Local (a table of its own: the sweeper must not
 * launch these machines) and its EC2 endpoint (idempotent by ClientToken, as
 * EC2 is); each "worker" is its own createActivities (its own batcher,
 * claims and caches). Without `claimedBy` this test saw two live instances
 * (zone A us-east-1a, zone B us-east-1b).
 */
const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const ec2 = ec2ClientFor(stack);
const table = privateTable(ddb, 'launch-in-task-window');
const repo = new Repository(ddb, table.tableName);
const store = new ProvisioningStore(ddb, table.tableName);
const DEPLOYMENT = `launch-in-task-${randomUUID().slice(0, 8)}`;

/**
 * A worker process: the activities over the stack's clients, with nothing
 * shared in memory; its first launch-batch mark waits at `hold` when given.
 */
const worker = (hold?: Promise<void>) => {
  const own = new ProvisioningStore(ddb, table.tableName);
  if (hold) {
    const mark = own.batches.mark.bind(own.batches);
    own.batches.mark = async (...args) => {
      await hold;
      return mark(...args);
    };
  }
  return createActivities({
    repo: new Repository(ddb, table.tableName),
    store: own,
    ec2ForRegion: regionalEc2(() => ec2, 0),
    defaultRegion: stack.region,
    tuning: provisioningTuning({}),
    deployment: DEPLOYMENT,
    taskQueue: 'unused',
  });
};
type Worker = ReturnType<typeof worker>;

beforeAll(() => table.create());

afterAll(async () => {
  await table.drop();
  ec2.destroy();
  ddb.destroy();
});

/** A model and one new machine in it, as add-machine writes them, and what the request handed its workflow. */
async function created(): Promise<{ model: string; id: string; hint: CreatedMachine }> {
  const model = await seedModel(repo, 'lit', { region: stack.region });
  const { uid } = await repo.getModel(model);
  const [id] = await repo.allocateMachineIds(model, 1);
  await repo.putNewMachines([pendingMachine(model, id!, { constraints: 'mem=2G', modelUid: uid })]);
  const hint: CreatedMachine = {
    modelUid: uid,
    region: stack.region,
    availabilitySets: false,
    base: 'ubuntu@24.04',
    constraints: 'mem=2G',
    applications: [],
  };
  return { model, id: id!, hint };
}

/** Runs `fn` as a local activity of the run (the first workflow task's steps). */
function inTaskOf<T>(run: { workflowId: string; runId: string }, fn: () => Promise<T>) {
  const env = new MockActivityEnvironment({
    isLocal: true,
    workflowExecution: run,
    startToCloseTimeoutMs: 120_000,
    currentAttemptScheduledTimestampMs: Date.now(),
  });
  return env.run<[], T, () => Promise<T>>(fn);
}

/** The first workflow task's steps on one worker: the first read (plan and claim), then the launch. */
async function firstTask(
  w: Worker,
  run: { workflowId: string; runId: string },
  machine: { model: string; id: string; hint: CreatedMachine },
  options: { record?: boolean } = {},
): Promise<{
  read: MachineSnapshot;
  input?: StartInstanceInput;
  started?: StartedInstance;
}> {
  const { model, id, hint } = machine;
  const read = await inTaskOf(run, () =>
    w.loadMachine({ model, machineId: id, prepare: true, created: hint }),
  );
  expect(read).not.toBeNull();
  const prepared = read!.prepared;
  if (prepared?.zone === undefined || prepared.plan === undefined) return { read: read! };
  // as workflows/launch.ts makes the launch's input: pass 1, attempt 1, the claimed zone
  const input: StartInstanceInput = {
    model,
    machineId: id,
    zone: prepared.zone,
    plan: prepared.plan,
    tokenSeed: launchTokenSeed(run, 1, 1, prepared.zone),
    ...(options.record ? { record: true } : {}),
  };
  const started = await inTaskOf(run, () => w.startInstance(input));
  return { read: read!, input, started };
}

/** The machine workflow run the task belongs to. */
const runOf = (model: string, id: string) => ({
  workflowId: machineWorkflowId(model, id),
  runId: randomUUID(),
});

const live = (model: string) => liveInstancesTagged(ec2, { deployment: DEPLOYMENT, model });

it('a task lost while its launch waits unmarked: run again on another worker, it keeps the zone and both answer one instance', async () => {
  const machine = await created();
  const { model, id, hint } = machine;
  const run = runOf(model, id);
  let open!: () => void;
  const hold = new Promise<void>((r) => (open = r));

  // worker A: the first task reads and claims, and its launch waits in its batch, unmarked
  const a = worker(hold);
  const first = await inTaskOf(run, () =>
    a.loadMachine({ model, machineId: id, prepare: true, created: hint }),
  );
  const zone = first!.prepared!.zone!;
  const inputA: StartInstanceInput = {
    model,
    machineId: id,
    zone,
    plan: first!.prepared!.plan!,
    tokenSeed: launchTokenSeed(run, 1, 1, zone),
  };
  const launchA = inTaskOf(run, () => a.startInstance(inputA));

  // meanwhile (a burst) two more bare machines are claimed in that zone
  const more = await repo.allocateMachineIds(model, 2);
  const { uid } = await repo.getModel(model);
  await repo.putNewMachines(more.map((m) => pendingMachine(model, m, { modelUid: uid })));
  await store.claimZones(
    model,
    more.map((m) => ({ machineId: m, groups: [], order: () => [zone] })),
  );

  // the task is lost (the server lost it; worker A lives on): worker B runs it again
  const again = await firstTask(worker(), run, machine);
  const zoneB = again.input!.zone;
  // worker A's launch goes on
  open();
  const startedA = await launchA;
  const instances = (await live(model)).map((i) => i.InstanceId);
  process.stderr.write(
    `[window] zone A ${zone}, zone B ${zoneB}; instance A ${startedA.instanceId}, B ${again.started!.instanceId}; live ${instances.join(',')}\n`,
  );
  // the run's claim held: the same zone, the same token seed, the same instance
  expect(zoneB).toBe(zone);
  expect(again.input!.tokenSeed).toBe(inputA.tokenSeed);
  expect(again.started!.instanceId).toBe(startedA.instanceId);
  expect(instances).toEqual([startedA.instanceId]);
}, 120_000);
