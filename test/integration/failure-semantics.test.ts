import {
  DescribeInstancesCommand,
  TerminateInstancesCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { DeleteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import type { ManagedProcess } from '../../local/processes';
import { machineKey } from '../../state/items';
import { Repository } from '../../state/repository';
import { instanceStateSignal, provisioningStateQuery } from '../../workflows/definitions';
import { startDynamoFaultProxy, type DynamoFaultProxy } from '../support/dynamodb-fault-proxy';
import {
  MACHINE_WORKFLOW_TYPE,
  machineStartOptions,
  machineWorkflowId,
} from '../../temporal/search-attributes';
import { recordHistory as recordRunHistory } from './histories';
import { proxyAdmin, proxyCalls } from './ec2-test-kit';
import { apiClient, eventually, uniqueName } from './api-client';
import { pendingMachine } from './fixtures';
import { startPrivateWorker } from './private-worker';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

/**
 * Failure semantics (issue 11): an EC2 error no retry can fix ends, in the
 * machine's `error` with EC2's code, or in a teardown that says what blocks
 * it and goes on once the cause is fixed. Like provisioning-isolated, this
 * file runs its own EC2 proxy (same moto behind it) and its own worker on a
 * private task queue, so the faults it sets touch no other file's machines.
 */

const stack = loadTestStack();
const api = apiClient(stack);
const TASK_QUEUE = `provisioner-failsem-${randomUUID().slice(0, 8)}`;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-failsem-'));
const IN_ZONES = 'zones=us-east-1a,us-east-1b,us-east-1c';

const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
let proxy: Ec2Proxy;
/** The worker's DynamoDB: DynamoDB Local behind a proxy that can refuse chosen writes. */
let dynamo: DynamoFaultProxy;
let ec2: EC2Client;
let connection: Connection;
let temporal: Client;
let worker: ManagedProcess | undefined;

function startWorker(): Promise<ManagedProcess> {
  return startPrivateWorker(stack, {
    name: 'worker-failsem',
    taskQueue: TASK_QUEUE,
    logFile: join(logDir, 'worker.log'),
    ec2Endpoint: proxy.url,
    env: {
      DYNAMODB_ENDPOINT: dynamo.url,
      // a blocked teardown tries again every 6 × 500 ms = 3 s
      PROVISIONER_RETRY_DELAY: '500ms',
      // a blocked teardown continues as new after a few tries (the default is hours of them)
      PROVISIONER_BLOCKED_HISTORY: '100',
    },
  });
}

function admin(method: string, path: string, body?: unknown): Promise<any> {
  return proxyAdmin(proxy.url, method, path, body);
}

function calls(action: string): Promise<number> {
  return proxyCalls(proxy.url, action);
}

async function newModel(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  expect((await api.post('/v1/models', { name })).status).toBe(201);
  return name;
}

/**
 * Records machines as the API does and starts their workflows on the private queue, with
 * the API's start options (its workflow-task timeout among them: without them the server's
 * default 10 s applied, and this file never ran machines as the product starts them).
 */
async function addMachines(model: string, count: number, base = 'ubuntu@24.04'): Promise<string[]> {
  const ids = await repo.allocateMachineIds(model, count);
  await repo.putNewMachines(
    ids.map((id) => pendingMachine(model, id, { base, constraints: IN_ZONES })),
  );
  await Promise.all(
    ids.map((id) =>
      temporal.workflow.start(MACHINE_WORKFLOW_TYPE, machineStartOptions(model, id, TASK_QUEUE)),
    ),
  );
  return ids;
}

function recordHistory(workflowId: string, runId: string, file: string): Promise<void> {
  return recordRunHistory(stack, workflowId, runId, file);
}

async function machine(model: string, id: string): Promise<any> {
  return (await api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`)).body;
}

async function instanceState(id: string): Promise<string | undefined> {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

beforeAll(async () => {
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  dynamo = await startDynamoFaultProxy(stack.dynamodbEndpoint);
  ec2 = ec2ClientFor(stack, proxy.url);
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  worker = await startWorker();
}, 120_000);

afterEach(async () => {
  dynamo.clear();
  await admin('DELETE', '/_admin/faults');
  await admin('DELETE', '/_admin/latency');
});

afterAll(async () => {
  await worker?.stop();
  await connection?.close();
  ec2?.destroy();
  ddb.destroy();
  await proxy?.close();
  await dynamo?.close();
});

describe('EC2 errors no retry can fix', () => {
  it('puts a machine whose launch is unauthorized in error at once, with the EC2 code, after one RunInstances', async () => {
    const model = await newModel('unauth');
    await admin('PUT', '/_admin/faults', { errors: { runInstances: 'UnauthorizedOperation' } });
    const before = await calls('RunInstances');
    const [id] = await addMachines(model, 1);

    const failed = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'error',
      60_000,
    );
    expect(failed.message).toBe(
      'UnauthorizedOperation: You are not authorized to perform this operation.',
    );
    expect(failed.instanceId).toBeUndefined();
    expect(failed.zone).toBeUndefined();
    // no other zone, no other attempt: a refusal is the same everywhere
    expect((await calls('RunInstances')) - before).toBe(1);

    // fixed (the permissions granted): a retry runs it
    await admin('DELETE', '/_admin/faults');
    expect((await api.post(`/v1/models/${model}/machines/${id!}/retry`, {})).status).toBe(202);
    const running = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'running',
      60_000,
    );
    expect(running.message).toBe('');
    expect(running.instanceId).toMatch(/^i-/);
  });

  it('launches and records a machine where tags are allowed only at launch (no CreateTags after it)', async () => {
    const model = await newModel('notag');
    await admin('PUT', '/_admin/faults', { errors: { createTags: 'UnauthorizedOperation' } });
    const before = await calls('RunInstances');
    const tagsBefore = await calls('CreateTags');
    const [id] = await addMachines(model, 1);
    const running = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'running' || m?.status === 'error',
      60_000,
    );
    expect(running.status).toBe('running');
    expect(running.instanceId).toMatch(/^i-/);
    expect(await instanceState(running.instanceId)).toMatch(/^(pending|running)$/);
    // one launch, tagged by it (issue 30): no tagging call the policy would refuse
    expect((await calls('RunInstances')) - before).toBe(1);
    expect((await calls('CreateTags')) - tagsBefore).toBe(0);
  });

  it('puts a machine whose planning EC2 refuses (no credentials for DescribeImages) in error, not in retries', async () => {
    const model = await newModel('authfail');
    await admin('PUT', '/_admin/faults', { errors: { describeImages: 'AuthFailure' } });
    const before = await calls('DescribeImages');
    // a base no other machine of this worker asked for yet: its image is looked up now
    const [id] = await addMachines(model, 1, 'ubuntu@20.04');

    const failed = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'error',
      60_000,
    );
    expect(failed.message).toBe(
      'AuthFailure: AWS was not able to validate the provided access credentials',
    );
    // asked once: neither the SDK nor the activity retried it
    expect((await calls('DescribeImages')) - before).toBe(1);
  });
});

describe('teardown that EC2 refuses', () => {
  it('says what blocks it (termination protection), tries again slowly, and finishes once fixed', async () => {
    const model = await newModel('protected');
    const [id] = await addMachines(model, 1);
    const running = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'running',
      60_000,
    );
    const instanceId = running.instanceId as string;
    // the run that provisioned it tears it down (a smooth provisioning does not continue as new)
    const workflowId = machineWorkflowId(model, id!);
    const blockedRun = (await temporal.workflow.getHandle(workflowId).describe()).runId;
    await admin('PUT', '/_admin/faults', {
      errors: { terminateInstances: 'OperationNotPermitted' },
    });
    const before = await calls('TerminateInstances');
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);

    const blocked = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'stopping' && /^cannot terminate/.test(m.message ?? ''),
      60_000,
    );
    expect(blocked.message).toBe(
      `cannot terminate instance ${instanceId}: OperationNotPermitted: ` +
        `The instance '${instanceId}' may not be terminated. Modify its 'disableApiTermination' ` +
        `instance attribute and try again. (trying again every 3s)`,
    );
    // the model, dying, is still there and its status says why
    const status = await api.get(`/v1/models/${model}/status`);
    expect(status.status).toBe(200);
    expect(status.body.machines[id!]).toMatchObject({
      status: 'stopping',
      message: blocked.message,
    });

    // slowly: a try every 3 s, not a retry storm (generous bound for a busy machine)
    const firstTries = (await calls('TerminateInstances')) - before;
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const laterTries = (await calls('TerminateInstances')) - before;
    expect(laterTries).toBeGreaterThan(firstTries);
    expect(laterTries).toBeLessThanOrEqual(firstTries + 4);
    expect(await instanceState(instanceId)).toBe('running');

    // the status is written once, not at every try; the run continues as new before its
    // history grows long (PROVISIONER_BLOCKED_HISTORY=100 here) and the next run keeps it
    const later = await eventually(
      () => temporal.workflow.getHandle(workflowId).describe(),
      (d) => d.runId !== blockedRun,
      120_000,
    );
    expect(later.status.name).toBe('RUNNING');
    const continued = await temporal.workflow.getHandle(workflowId, blockedRun).describe();
    expect(continued.status.name).toBe('CONTINUED_AS_NEW');
    expect(continued.historyLength).toBeLessThan(100 + 20);
    const triesThen = await calls('TerminateInstances');
    await eventually(
      () => calls('TerminateInstances'),
      (n) => n >= triesThen + 2,
      60_000,
    );
    expect((await machine(model, id!)).message).toBe(blocked.message);
    // the continued run tried many times and wrote its status twice: `terminating …`, then the block
    const steps = (
      await temporal.workflow.getHandle(workflowId, blockedRun).fetchHistory()
    ).events!.flatMap((e) => {
      const type = e.activityTaskScheduledEventAttributes?.activityType?.name;
      return type ? [type] : [];
    });
    expect(steps.filter((t) => t === 'terminateInstances').length).toBeGreaterThanOrEqual(4);
    expect(steps.filter((t) => t === 'recordStatus')).toHaveLength(2);
    expect(await instanceState(instanceId)).toBe('running');
    await recordHistory(workflowId, blockedRun, 'machine-teardown-blocked-continued.json');

    // protection lifted: teardown finishes, the instance terminates and the model goes
    await admin('DELETE', '/_admin/faults');
    await eventually(
      () => api.get(`/v1/models/${model}`),
      (res) => res.status === 404,
      60_000,
    );
    expect(['shutting-down', 'terminated']).toContain(await instanceState(instanceId));
    const handle = temporal.workflow.getHandle(machineWorkflowId(model, id!));
    const done = await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'COMPLETED',
      30_000,
    );
    // (machine-teardown-blocked.json is this story's history before runs continued as new)
    await recordHistory(handle.workflowId, done.runId, 'machine-teardown-blocked-resumed.json');
  });
});

describe('a destroy during provisioning', () => {
  it('cancels planning that is waiting on EC2 and removes the machine at once', async () => {
    const model = await newModel('cancelplan');
    // the image lookup answers only after a minute
    await admin('PUT', '/_admin/latency', { describeImages: 60_000 });
    const [id] = await addMachines(model, 1, 'ubuntu@22.04');
    await eventually(
      () =>
        temporal.workflow.getHandle(machineWorkflowId(model, id!)).query(provisioningStateQuery),
      (s) => s.phase === 'planning',
      30_000,
    );
    const asked = Date.now();
    expect((await api.delete(`/v1/models/${model}/machines/${id!}`)).status).toBe(202);
    await eventually(
      () => api.get(`/v1/models/${model}/machines/${id!}`),
      (res) => res.status === 404,
      50_000,
    );
    // well before the lookup could have answered (a minute after it was asked)
    expect(Date.now() - asked).toBeLessThan(45_000);
    const handle = temporal.workflow.getHandle(machineWorkflowId(model, id!));
    // the workflow ends right after the removal it made
    const done = await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'COMPLETED',
      30_000,
    );
    await recordHistory(handle.workflowId, done.runId, 'machine-destroyed-while-planning.json');
  });
});

/**
 * A destroy while the first read's launch is under way (LAUNCH_IN_READ): the
 * workflow hears the destroy only once the step has outlasted a workflow
 * task (the SDK heartbeats the task at 80 % of its minute), cancels the step
 * and waits for its answer; the step's launch went out (RunInstances asked,
 * held 70 s by the proxy before EC2 launches), so the step does not give it
 * up: it answers the instance, recorded on the Dead machine, and the
 * teardown terminates it. Had the workflow dropped the step's answer, the
 * teardown would have found nothing (EC2 had not launched yet) and the
 * instance launched after it would be a stray.
 */
describe('a destroy during the first read that launches', () => {
  it('keeps the launch that went out, records it and terminates it: no stray', async () => {
    const model = await newModel('destroylaunch');
    await admin('PUT', '/_admin/latency', { runInstances: 70_000 });
    const before = await calls('RunInstances');
    const [id] = await addMachines(model, 1);
    const handle = temporal.workflow.getHandle(machineWorkflowId(model, id!));
    // the batch went out (the proxy counts a call as it arrives)
    await eventually(
      () => calls('RunInstances'),
      (n) => n > before,
      60_000,
      200,
    );
    // still in the run's first workflow task: the launch is the first read's
    const early = await handle.fetchHistory();
    expect((early.events ?? []).some((e) => e.workflowTaskCompletedEventAttributes)).toBe(false);
    expect((await api.delete(`/v1/models/${model}/machines/${id!}`)).status).toBe(202);
    await eventually(
      () => api.get(`/v1/models/${model}/machines/${id!}`),
      (res) => res.status === 404,
      200_000,
      1_000,
    );
    const history = await handle.fetchHistory();
    // the first read answered the instance it launched, the destroy notwithstanding
    const firstRead = (history.events ?? []).find(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    const answer = JSON.parse(
      Buffer.from(
        firstRead?.markerRecordedEventAttributes?.details?.result?.payloads?.[0]?.data ??
          new Uint8Array(),
      ).toString('utf8'),
    ) as { prepared?: { launched?: { instanceId?: string; recorded?: string } } } | null;
    const instanceId = answer?.prepared?.launched?.instanceId;
    expect(instanceId).toMatch(/^i-/);
    expect(answer?.prepared?.launched?.recorded).toBe('dead');
    // the destroy reached the workflow while the step ran: after the first task, before the
    // step's answer
    const signalled = (history.events ?? []).findIndex(
      (e) => e.workflowExecutionSignaledEventAttributes,
    );
    expect(signalled).toBeGreaterThan(-1);
    expect(signalled).toBeLessThan(history.events!.indexOf(firstRead!));
    // terminated, and no other instance of the model's is alive
    expect(await instanceState(instanceId!)).toMatch(/^(shutting-down|terminated)$/);
    const out = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: 'tag:provisioner:model', Values: [model] }],
      }),
    );
    const alive = (out.Reservations ?? [])
      .flatMap((r) => r.Instances ?? [])
      .filter((i) => !['shutting-down', 'terminated'].includes(i.State?.Name ?? ''));
    expect(alive.map((i) => i.InstanceId)).toEqual([]);
    await recordHistory(
      handle.workflowId,
      (await handle.describe()).runId,
      'machine-launch-in-read-destroyed.json',
    );
  }, 300_000);
});

describe('a machine that settles after a long provisioning', () => {
  it('continues as new carrying its state, and a retry still works from the fresh run', async () => {
    const model = await newModel('settle');
    await admin('PUT', '/_admin/faults', {
      zones: {
        'us-east-1a': 'InsufficientInstanceCapacity',
        'us-east-1b': 'InsufficientInstanceCapacity',
        'us-east-1c': 'InsufficientInstanceCapacity',
      },
    });
    const [id] = await addMachines(model, 1);
    const workflowId = machineWorkflowId(model, id!);
    const first = (await temporal.workflow.getHandle(workflowId).describe()).runId;
    const failed = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'error',
      90_000,
    );
    // every zone was tried: the machine's error names them, then the last zone's refusal
    expect(failed.message).toMatch(
      /^every zone tried failed \(us-east-1[a-f](, us-east-1[a-f])+\); the last: InsufficientInstanceCapacity: /,
    );

    // 3 attempts over 3 zones: far more than 40 events, so the settled run started afresh
    const latest = await eventually(
      () => temporal.workflow.getHandle(workflowId).describe(),
      (d) => d.runId !== first && d.status.name === 'RUNNING',
      30_000,
    );
    const firstRun = await temporal.workflow.getHandle(workflowId, first).describe();
    expect(firstRun.status.name).toBe('CONTINUED_AS_NEW');
    expect(firstRun.historyLength).toBeGreaterThan(40);
    expect(latest.historyLength).toBeLessThan(20);
    const state = await temporal.workflow.getHandle(workflowId).query(provisioningStateQuery);
    expect(state).toMatchObject({ phase: 'error', attempt: 3, lastError: failed.message });
    await recordHistory(workflowId, first, 'machine-error-continued-as-new.json');

    await admin('DELETE', '/_admin/faults');
    expect((await api.post(`/v1/models/${model}/machines/${id!}/retry`, {})).status).toBe(202);
    const running = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'running',
      60_000,
    );
    expect(running.instanceId).toMatch(/^i-/);
    expect((await temporal.workflow.getHandle(workflowId).query(provisioningStateQuery)).pass).toBe(
      2,
    );
  });
});

describe('an instance launched and never recorded', () => {
  it('is terminated before its machine is in error, or said to be kept when EC2 refuses, and terminated by the retry', async () => {
    const model = await newModel('unrecorded');
    // recording the launch fails (a DynamoDB error no retry fixes), and EC2 refuses to terminate
    // (sent with others as one BatchExecuteStatement: state/statement-batch.ts; its statement
    // names the attributes in PartiQL's quotes, escaped in the JSON body)
    dynamo.set({
      action: 'BatchExecuteStatement',
      bodyIncludes: ['SET \\"imageId\\"', 'SET \\"instanceStatus\\"', model],
      errorType: 'ValidationException',
      message: 'injected: the record of the launch is refused',
    });
    await admin('PUT', '/_admin/faults', {
      errors: { terminateInstances: 'UnauthorizedOperation' },
    });
    const launchesBefore = await calls('RunInstances');
    const refusedBefore = dynamo.refused();
    const [id] = await addMachines(model, 1);
    const workflowId = machineWorkflowId(model, id!);
    const firstRun = (await temporal.workflow.getHandle(workflowId).describe()).runId;

    // the record is tried 8 times (about 90 s) before the workflow gives up on it
    const failed = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'error',
      240_000,
    );
    expect(dynamo.refused() - refusedBefore).toBeGreaterThanOrEqual(8);
    expect((await calls('RunInstances')) - launchesBefore).toBe(1);
    const kept = /^cannot record instance (i-[0-9a-f]+) for machine (\d+): /.exec(failed.message);
    expect(kept?.[2]).toBe(id);
    const instanceId = kept![1]!;
    expect(failed.message).toBe(
      `cannot record instance ${instanceId} for machine ${id!}: ` +
        'injected: the record of the launch is refused; ' +
        `instance ${instanceId} launched for it could not be terminated ` +
        '(UnauthorizedOperation: You are not authorized to perform this operation.): ' +
        'it is terminated when the machine is retried or destroyed',
    );
    expect(failed.instanceId).toBeUndefined();
    expect(await instanceState(instanceId)).toMatch(/^(pending|running)$/);

    // a retry while EC2 still refuses: the instance is tried first, and nothing more launched
    dynamo.clear();
    const launchesThen = await calls('RunInstances');
    const terminatesThen = await calls('TerminateInstances');
    expect((await api.post(`/v1/models/${model}/machines/${id!}/retry`, {})).status).toBe(202);
    await eventually(
      () => calls('TerminateInstances'),
      (n) => n > terminatesThen,
      60_000,
    );
    // the retry's own error replaces the first one (EC2's terminate call is seen before the
    // machine's record is written: wait for the record, not just the status)
    const still = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'error' && m.message !== failed.message,
      60_000,
    );
    expect(still.message).toBe(
      `instance ${instanceId} launched for it could not be terminated ` +
        '(UnauthorizedOperation: You are not authorized to perform this operation.): ' +
        'it is terminated when the machine is retried or destroyed',
    );
    expect(await calls('RunInstances')).toBe(launchesThen);

    // fixed: the retry terminates the instance left over, then launches the machine's own
    await admin('DELETE', '/_admin/faults');
    expect((await api.post(`/v1/models/${model}/machines/${id!}/retry`, {})).status).toBe(202);
    const running = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'running',
      90_000,
    );
    expect(running.instanceId).toMatch(/^i-/);
    expect(running.instanceId).not.toBe(instanceId);
    expect(['shutting-down', 'terminated']).toContain(await instanceState(instanceId));
    // every run of the story: the one that kept it, and those it was carried to (settled
    // machines with long histories continue as new)
    const runs: Array<{ runId: string; startTime: Date }> = [];
    for await (const run of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      runs.push({ runId: run.runId, startTime: run.startTime });
    }
    runs.sort((x, y) => x.startTime.getTime() - y.startTime.getTime());
    expect(runs[0]?.runId).toBe(firstRun);
    for (const [n, run] of runs.entries()) {
      await recordHistory(workflowId, run.runId, `machine-unrecorded-instance-run${n + 1}.json`);
    }
  });

  it('is terminated, and the workflow ends, when its machine was removed meanwhile even if EC2 refuses', async () => {
    const model = await newModel('removedmid');
    // the launch takes 15 s: the machine is removed while it is in flight, however busy the machine
    await admin('PUT', '/_admin/latency', { runInstances: 15_000 });
    await admin('PUT', '/_admin/faults', {
      errors: { terminateInstances: 'UnauthorizedOperation' },
    });
    const launchesBefore = await calls('RunInstances');
    const [id] = await addMachines(model, 1);
    const workflowId = machineWorkflowId(model, id!);
    // the proxy counts a call when it arrives, then waits out its latency
    await eventually(
      () => calls('RunInstances'),
      (n) => n > launchesBefore,
      60_000,
    );
    // removed behind the provisioner's back (as a force removal racing the launch would)
    await DynamoDBDocumentClient.from(ddb).send(
      new DeleteCommand({ TableName: stack.tableName, Key: machineKey(model, id!) }),
    );
    const done = await eventually(
      () => temporal.workflow.getHandle(workflowId).describe(),
      (d) => d.status.name !== 'RUNNING',
      90_000,
    );
    // before: the refused termination failed the workflow
    expect(done.status.name).toBe('COMPLETED');
    expect((await calls('RunInstances')) - launchesBefore).toBe(1);
    // workflow log lines reach the worker's log through the SDK's logger, a moment after the run ends
    const log = await eventually(
      () => Promise.resolve(readFileSync(join(logDir, 'worker.log'), 'utf8')),
      (text) => text.includes('machine removed; its launched instance could not be terminated'),
      60_000,
    );
    expect(log).toContain('machine removed; its launched instance could not be terminated');
  });
});

describe('liveness', () => {
  it("records news of a running machine's instance from the write alone, without reading the machine", async () => {
    const model = await newModel('observe');
    const [id] = await addMachines(model, 1);
    const running = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'running',
      60_000,
    );
    const instanceId = running.instanceId as string;
    const handle = temporal.workflow.getHandle(machineWorkflowId(model, id!));
    await handle.signal(instanceStateSignal, { instanceId, state: 'running' });
    await eventually(
      () => machine(model, id!),
      (m) => m?.instanceStatus === 'running',
      30_000,
    );
    // gone behind our back (really: the stack's own sweeper, which sweeps every model, must
    // see what the signal says, or it tells the machine otherwise): down, from the same one write
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    await handle.signal(instanceStateSignal, { instanceId, state: 'terminated' });
    const down = await eventually(
      () => machine(model, id!),
      (m) => m?.status === 'down',
      30_000,
    );
    expect(down.message).toBe(`instance "${instanceId}" is terminated`);
    expect(down.instanceStatus).toBe('terminated');
    await eventually(
      () => handle.query(provisioningStateQuery),
      (s) => s.instanceStatus === 'terminated',
      30_000,
    );

    // the steps after each signal: the write, and no read of the machine
    const { events } = await handle.fetchHistory();
    const steps: string[] = [];
    for (const e of events ?? []) {
      if (e.workflowExecutionSignaledEventAttributes) steps.push('signal');
      const marker = e.markerRecordedEventAttributes;
      const data = marker?.details?.data?.payloads?.[0]?.data;
      if (marker?.markerName === 'core_local_activity' && data) {
        const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string };
        steps.push(parsed.activity_type ?? '?');
      }
    }
    // (the stack's sweeper may have told it too: more signals, each handled the same way)
    const afterSignals = steps.slice(steps.indexOf('signal'));
    expect(afterSignals.filter((s) => s !== 'signal')).toEqual(
      afterSignals.filter((s) => s === 'observeInstance'),
    );
    expect(afterSignals.filter((s) => s === 'observeInstance').length).toBeGreaterThanOrEqual(2);
    const { runId } = await handle.describe();
    await recordHistory(handle.workflowId, runId, 'machine-observed-without-read.json');
  });
});
