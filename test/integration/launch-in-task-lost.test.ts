import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import type { MachineSnapshot, StartedInstance } from '../../activities/types';
import type { StartInstanceInput } from '../../activities/launch';
import { runningCatchUpsSettled } from '../../activities/running-catch-up';
import { provisioningTuning } from '../../config/env';
import { workerEc2Client } from '../../ec2/client';
import { regionalEc2 } from '../../ec2/regional';
import { liveInstancesTagged } from '../../ec2/tags';
import { LaunchBatchStore } from '../../state/launch-batches';
import { ProvisioningStore } from '../../state/provisioning';
import { Repository } from '../../state/repository';
import type { CreatedMachine } from '../../temporal/created-machine';
import { launchTokenSeed } from '../../temporal/launch-token';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { eventually } from './api-client';
import { pendingMachine, seedModel } from './fixtures';
import {
  dynamoClientFor,
  ec2ClientFor,
  loadTestStack,
  privateTable,
  TEST_CREDENTIALS,
} from './stack';

/**
 * A machine's first launch runs as a local activity in its first workflow
 * task (issue 26, LAUNCH_IN_TASK). If the worker dies while that task runs,
 * nothing of it is in the history: the task is run again from scratch on
 * another worker, first read and launch included. The first read then finds
 * the machine still claimed by this very run for attempt 1 (`claimedBy`, or
 * on items from before, the launch marker it left), and answers that zone
 * without claiming again, so the launch run again has the same token seed,
 * finds the batch the lost task sent (or joins the one it waits in), and
 * answers its instance: one instance in EC2 for the machine. On the stack's DynamoDB Local (a table of its own:
 * the sweeper must not launch these machines) and its EC2 endpoint
 * (idempotent by ClientToken, as EC2 is); each "worker" is its own
 * createActivities (its own batcher, claims and caches).
 */
const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const ec2 = ec2ClientFor(stack);
const table = privateTable(ddb, 'launch-in-task');
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
    // the worker's own EC2 client (retries included): the stack's moto, on a busy machine,
    // resets a connection now and then, which the worker rides out
    ec2ForRegion: regionalEc2(
      () =>
        workerEc2Client({
          region: stack.region,
          endpoint: stack.ec2Endpoint,
          credentials: TEST_CREDENTIALS,
        }),
      0,
    ),
    defaultRegion: stack.region,
    tuning: provisioningTuning({}),
    deployment: DEPLOYMENT,
    taskQueue: 'unused',
  });
};
type Worker = ReturnType<typeof worker>;

beforeAll(() => table.create());

afterAll(async () => {
  // a catch-up window still open writes to the table: it ends first (a log after the file's end fails the run)
  await runningCatchUpsSettled();
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
    // the step scheduled now with a first read's 10 minutes (the mock's defaults, the epoch and
    // 1 s, would put the step's end, which a local launch try never outlives, long past)
    scheduledTimestampMs: Date.now(),
    scheduleToCloseTimeoutMs: 600_000,
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

it("a task lost after its launch went out: the task run again on another worker launches nothing more and answers the lost launch's instance", async () => {
  const machine = await created();
  const { model, id } = machine;
  const run = runOf(model, id);

  // worker A: the first task reads, claims and launches, then dies before the task completes
  // (nothing recorded on the machine, nothing in the history)
  const lost = await firstTask(worker(), run, machine);
  expect(lost.read.prepared).toMatchObject({ fromCreation: true, launchInTask: true });
  const zone = lost.input!.zone;
  const instanceId = lost.started!.instanceId;
  expect(instanceId).toMatch(/^i-/);
  const marker = await new LaunchBatchStore(ddb, table.tableName).marker(model, id);
  expect(marker?.tokenSeed).toBe(lost.input!.tokenSeed);
  expect(await repo.getMachine(model, id)).toMatchObject({ status: 'allocating' });

  // meanwhile two more bare machines of the model are claimed in that zone: a fresh claim of
  // this machine (its own count left out) would now choose another zone, and launch there
  const more = await repo.allocateMachineIds(model, 2);
  const { uid } = await repo.getModel(model);
  await repo.putNewMachines(more.map((m) => pendingMachine(model, m, { modelUid: uid })));
  const others = await store.claimZones(
    model,
    more.map((m) => ({ machineId: m, groups: [], order: () => [zone] })),
  );
  expect(others).toEqual(more.map(() => expect.objectContaining({ ok: true, zone })));
  expect(await store.zones.counts(model, '')).toEqual({ [zone]: 3 });

  // worker B: the same task, run again from scratch for the same run
  const again = await firstTask(worker(), run, machine);
  // the creation's strict claim found the machine claimed already: read, and the zone this run
  // marked its launch in answered, without a claim (counted once, where it was)
  expect(again.read.prepared).toMatchObject({ zone, launchInTask: true });
  expect(again.read.prepared?.fromCreation).toBeUndefined();
  expect(await store.zones.counts(model, '')).toEqual({ [zone]: 3 });
  // the same launch (same token seed): the lost task's batch, its instance
  expect(again.input!.tokenSeed).toBe(lost.input!.tokenSeed);
  expect(again.started).toMatchObject({ instanceId, zone, adopted: false });
  expect((await live(model)).map((i) => i.InstanceId)).toEqual([instanceId]);
  // the machine is still held by the lost task's batch: no second batch was sent for it
  expect(await new LaunchBatchStore(ddb, table.tableName).marker(model, id)).toEqual(marker);
}, 120_000);

it('a task lost after its launch recorded the instance: the task run again reads the machine launched, and prepares nothing', async () => {
  const machine = await created();
  const { model, id } = machine;
  const run = runOf(model, id);
  const lost = await firstTask(worker(), run, machine, { record: true });
  expect(lost.started?.recorded).toBe('alive');
  const instanceId = lost.started!.instanceId;

  const again = await firstTask(worker(), run, machine);
  expect(again.read).toMatchObject({ life: 'alive', status: 'running', instanceId });
  expect(again.read.prepared).toBeUndefined();
  expect(again.started).toBeUndefined();
  expect((await live(model)).map((i) => i.InstanceId)).toEqual([instanceId]);
}, 120_000);

it("a run's first read never takes another run's marker for its own: the next run claims afresh", async () => {
  const machine = await created();
  const { model, id } = machine;
  const lost = await firstTask(worker(), runOf(model, id), machine);
  const zone = lost.input!.zone;
  // the same story as the first test, but read again for another run (one the sweep started,
  // or a continue-as-new): its launch is its own, after a claim of its own
  const more = await repo.allocateMachineIds(model, 2);
  const { uid } = await repo.getModel(model);
  await repo.putNewMachines(more.map((m) => pendingMachine(model, m, { modelUid: uid })));
  await store.claimZones(
    model,
    more.map((m) => ({ machineId: m, groups: [], order: () => [zone] })),
  );
  const w = worker();
  const read = await inTaskOf(runOf(model, id), () =>
    w.loadMachine({ model, machineId: id, prepare: true, created: machine.hint }),
  );
  expect(read?.prepared?.zone).toBeDefined();
  expect(read?.prepared?.zone).not.toBe(zone);
  // claimed again: moved, counted once
  const counts = await store.zones.counts(model, '');
  expect(counts[zone]).toBe(2);
  expect(counts[read!.prepared!.zone!]).toBe(1);
}, 120_000);

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
 * Without `claimedBy` this test saw two live instances (zone A us-east-1a,
 * zone B us-east-1b).
 */
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

/**
 * The same stories with the launch made by the first read itself
 * (LAUNCH_IN_READ: the workflow passes the pass and attempt, the read makes
 * the token seed from its run). A first read whose launch recorded its
 * instance, run again, reads the machine launched; one whose launch still
 * waits unmarked in its batch, run again on another worker after a burst
 * moved the counts, keeps its run's zone, and both answer one instance.
 */
const FIRST_LAUNCH = { pass: 1, attempt: 1 };

it('a first read that launched and recorded, its task lost: run again, it reads the machine launched and launches nothing', async () => {
  const { model, id, hint } = await created();
  const run = runOf(model, id);
  const a = worker();
  const lost = await inTaskOf(run, () =>
    a.loadMachine({ model, machineId: id, prepare: true, created: hint, launch: FIRST_LAUNCH }),
  );
  const launched = lost!.prepared!.launched!;
  expect(launched).toMatchObject({ recorded: 'alive', adopted: false });
  expect(launched.instanceId).toMatch(/^i-/);
  const b = worker();
  const again = await inTaskOf(run, () =>
    b.loadMachine({ model, machineId: id, prepare: true, created: hint, launch: FIRST_LAUNCH }),
  );
  expect(again).toMatchObject({
    life: 'alive',
    status: 'running',
    instanceId: launched.instanceId,
  });
  expect(again!.prepared).toBeUndefined();
  expect((await live(model)).map((i) => i.InstanceId)).toEqual([launched.instanceId]);
}, 120_000);

it('a first read whose launch waits unmarked, its task lost: run again on another worker, it keeps the zone and both answer one instance', async () => {
  const { model, id, hint } = await created();
  const run = runOf(model, id);
  let open!: () => void;
  const hold = new Promise<void>((r) => (open = r));
  // worker A: the first read claims, and its launch waits in its batch, unmarked
  const a = worker(hold);
  const readA = inTaskOf(run, () =>
    a.loadMachine({ model, machineId: id, prepare: true, created: hint, launch: FIRST_LAUNCH }),
  );
  // its claim counted (the launch is held before its mark)
  const counts = await eventually(
    () => store.zones.counts(model, ''),
    (c) => Object.values(c).some((n) => n > 0),
    60_000,
    100,
  );
  const zone = Object.keys(counts).find((z) => counts[z]! > 0)!;
  // meanwhile (a burst) two more bare machines are claimed in that zone
  const more = await repo.allocateMachineIds(model, 2);
  const { uid } = await repo.getModel(model);
  await repo.putNewMachines(more.map((m) => pendingMachine(model, m, { modelUid: uid })));
  await store.claimZones(
    model,
    more.map((m) => ({ machineId: m, groups: [], order: () => [zone] })),
  );
  // the task is lost (worker A lives on): worker B runs the first read again
  const b = worker();
  const again = await inTaskOf(run, () =>
    b.loadMachine({ model, machineId: id, prepare: true, created: hint, launch: FIRST_LAUNCH }),
  );
  open();
  const first = await readA;
  expect(again!.prepared?.zone).toBe(zone);
  expect(first!.prepared?.zone).toBe(zone);
  expect(again!.prepared?.launched?.instanceId).toMatch(/^i-/);
  expect(first!.prepared?.launched?.instanceId).toBe(again!.prepared?.launched?.instanceId);
  expect((await live(model)).map((i) => i.InstanceId)).toEqual([
    again!.prepared!.launched!.instanceId,
  ]);
}, 120_000);
