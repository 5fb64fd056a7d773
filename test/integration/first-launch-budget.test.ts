import { paginateDescribeInstances, type Instance } from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TAG_MODEL } from '../../ec2/tags';
import type { ManagedProcess } from '../../local/processes';
import { Repository } from '../../state/repository';
import type { CreatedMachine } from '../../temporal/created-machine';
import { launchTokenSeed } from '../../temporal/launch-token';
import { MACHINE_WORKFLOW_TYPE, machineWorkflowId } from '../../temporal/search-attributes';
import { apiClient, eventually, uniqueName } from './api-client';
import { pendingMachine } from './fixtures';
import { recordHistory } from './histories';
import { startPrivateWorker } from './private-worker';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

/**
 * A machine's first read whose launch outlasts its budget (workflows/patches.ts
 * LAUNCH_OUT_OF_TASK), on the local stack: a worker of this file's own, whose
 * first reads may hold their launch 4 s (PROVISIONER_FIRST_LAUNCH_BUDGET)
 * while its launch batches gather 10 s, so the read's launch is withdrawn from
 * its batch and the read answers its plan and claim alone (`launchInTask:
 * false`). The first workflow task then schedules the launch as an activity
 * (`startInstance`), whose answer a second task records: one instance for the
 * machine, running and recorded. The history alone would read the same had
 * the budget run out before the launch (a slow stack: the read, plan and
 * claim past 4 s on a busy machine), so the worker runs at debug level and its one deferral
 * (`FirstLaunchesDeferred`, counted on either path) is the one its debug line
 * says was withdrawn from its batch. With PROVISIONER_RECORD_HISTORIES=<dir> the
 * run's history is written there as `machine-launch-deferred.json` (the
 * replay test's folder).
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const ec2 = ec2ClientFor(stack, stack.ec2Endpoint, 3);
const repo = new Repository(ddb, stack.tableName);
const TASK_QUEUE = `provisioner-budget-${randomUUID().slice(0, 8)}`;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-budget-'));
const LOG = join(logDir, 'worker.log');
let connection: Connection | undefined;
let temporal: Client;
let worker: ManagedProcess | undefined;

beforeAll(async () => {
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  worker = await startPrivateWorker(stack, {
    name: 'worker-budget',
    taskQueue: TASK_QUEUE,
    logFile: LOG,
    env: {
      // the first read's deferral is logged at debug, saying which path deferred it
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      PROVISIONER_FIRST_LAUNCH_BUDGET: '4s',
      PROVISIONER_LAUNCH_BATCH_IDLE: '10s',
      PROVISIONER_LAUNCH_BATCH_MAX: '10s',
    },
  });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await connection?.close();
  ec2.destroy();
  ddb.destroy();
});

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
type HistoryEvent = NonNullable<History['events']>[number];

const payload = (data: Uint8Array | null | undefined): unknown =>
  JSON.parse(Buffer.from(data ?? new Uint8Array()).toString('utf8'));

/** A local activity's marker: its type, the workflow task that ran it, and its answer. */
function localActivity(e: HistoryEvent): { type: string; task: number; answer: unknown } {
  const attributes = e.markerRecordedEventAttributes!;
  const data = payload(attributes.details?.data?.payloads?.[0]?.data) as {
    activity_type?: string;
  };
  return {
    type: data.activity_type ?? '',
    task: Number(attributes.workflowTaskCompletedEventId),
    answer: payload(attributes.details?.result?.payloads?.[0]?.data),
  };
}

/** The worker's JSON log lines (its own and its EMF records), each parsed. */
function logLines(): Array<Record<string, unknown>> {
  const text = existsSync(LOG) ? readFileSync(LOG, 'utf8') : '';
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** `FirstLaunchesDeferred` summed over the worker's EMF records so far (flushed every 10 s). */
function deferralsCounted(): number {
  return logLines()
    .filter((r) => r._aws !== undefined && r.service === 'provisioner-worker')
    .reduce(
      (n, r) => n + (typeof r.FirstLaunchesDeferred === 'number' ? r.FirstLaunchesDeferred : 0),
      0,
    );
}

/** Every instance EC2 holds tagged for the model, in any state. */
async function instancesOf(model: string): Promise<Instance[]> {
  const all: Instance[] = [];
  const pages = paginateDescribeInstances(
    { client: ec2 },
    { Filters: [{ Name: `tag:${TAG_MODEL}`, Values: [model] }] },
  );
  for await (const page of pages) {
    all.push(...(page.Reservations ?? []).flatMap((r) => r.Instances ?? []));
  }
  return all;
}

it("launches in an activity when the first read's launch outlasts its budget: one instance, running and recorded", async () => {
  const model = uniqueName('budget');
  expect((await api.post('/v1/models', { name: model })).status).toBe(201);
  const { uid } = await repo.getModel(model);
  const [id] = await repo.allocateMachineIds(model, 1);
  await repo.putNewMachines([pendingMachine(model, id!, { constraints: 'mem=2G', modelUid: uid })]);
  // as add-machine starts it (its creation handed over), on this file's worker
  const created: CreatedMachine = {
    modelUid: uid,
    region: stack.region,
    availabilitySets: false,
    base: 'ubuntu@24.04',
    constraints: 'mem=2G',
    applications: [],
  };
  const workflowId = machineWorkflowId(model, id!);
  const handle = await temporal.workflow.start(MACHINE_WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUE,
    workflowId,
    args: [{ model, machineId: id!, created }],
  });

  const running = await eventually(
    () => api.get(`/v1/models/${model}/machines/${id!}`),
    (res) => res.body?.status === 'running',
    180_000,
  );
  const instanceId = running.body.instanceId as string;
  expect(instanceId).toMatch(/^i-/);
  expect((await repo.getMachine(model, id!)).instanceId).toBe(instanceId);

  // exactly one instance for the machine, running
  const instances = await eventually(
    () => instancesOf(model),
    (all) => all.length === 1 && all[0]?.State?.Name === 'running',
    60_000,
  );
  expect(instances.map((i) => i.InstanceId)).toEqual([instanceId]);

  // the run's history: the first task's one local activity is the first read, whose answer has
  // the plan and claim but no launch (launchInTask false); that task schedules startInstance as
  // an activity, and a later task takes its answer
  const history = await eventually(
    () => handle.fetchHistory(),
    (h) =>
      (h.events ?? []).some((e) => e.activityTaskCompletedEventAttributes) &&
      (h.events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes).length >= 2,
    60_000,
  );
  const events = history.events ?? [];
  const completed = events
    .filter((e) => e.workflowTaskCompletedEventAttributes)
    .map((e) => Number(e.eventId));
  const first = completed[0]!;
  const locals = events
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
    .map(localActivity);
  expect(locals.filter((a) => a.task === first).map((a) => a.type)).toEqual(['loadMachine']);
  expect(locals.map((a) => a.type)).not.toContain('startInstance');
  const read = locals[0]!.answer as {
    prepared?: { zone?: string; launchInTask?: boolean; launched?: unknown };
  };
  expect(read.prepared?.launchInTask).toBe(false);
  expect(read.prepared?.launched).toBeUndefined();
  expect(read.prepared?.zone).toBe(running.body.zone);
  const scheduled = events.filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startInstance',
  );
  expect(scheduled).toHaveLength(1);
  const launch = scheduled[0]!.activityTaskScheduledEventAttributes!;
  // scheduled by the first task, after its marker: the first task completed without the launch
  expect(Number(launch.workflowTaskCompletedEventId)).toBe(first);
  expect(Number(scheduled[0]!.eventId)).toBeGreaterThan(
    Number(
      events.find((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')!
        .eventId,
    ),
  );
  // the launch activity as LAUNCH_OPTIONS has it: heartbeating, a 60 s heartbeat timeout
  expect(Number(launch.heartbeatTimeout?.seconds)).toBe(60);
  // with the seed the read would have used: its run, pass 1, attempt 1, the zone it claimed
  const input = payload(launch.input?.payloads?.[0]?.data) as { tokenSeed?: string; zone?: string };
  expect(input.zone).toBe(read.prepared?.zone);
  const { runId } = await handle.describe();
  expect(input.tokenSeed).toBe(launchTokenSeed({ workflowId, runId }, 1, 1, read.prepared!.zone!));
  expect(completed.length).toBeGreaterThanOrEqual(2);

  // the path that deferred it: withdrawn from its gathering batch (10 s window, 4 s budget),
  // not run out before the launch; one deferral on this worker, counted once
  const deferrals = logLines().filter(
    (l) => l.message === 'first read left its launch to an activity: its budget ran out',
  );
  expect(deferrals).toEqual([
    expect.objectContaining({
      level: 'DEBUG',
      model,
      machineId: id,
      zone: read.prepared?.zone,
      budgetMs: 4000,
      when: 'withdrawn from its batch',
    }),
  ]);
  expect(
    await eventually(
      () => Promise.resolve(deferralsCounted()),
      (n) => n >= 1,
      60_000,
      500,
    ),
  ).toBe(1);

  await recordHistory(stack, workflowId, runId, 'machine-launch-deferred.json');
}, 300_000);
