import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeInstancesCommand,
  paginateDescribeInstances,
  type EC2Client,
  type Instance,
} from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InstanceOwners } from '../../activities/instance-owners';
import { TAG_MODEL } from '../../ec2/tags';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import type { ManagedProcess } from '../../local/processes';
import { machineSk, modelPk } from '../../state/keys';
import { Repository } from '../../state/repository';
import { provisioningStateQuery, type ProvisioningState } from '../../workflows/definitions';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { apiClient, eventually, uniqueName } from './api-client';
import { pendingMachine } from './fixtures';
import { startPrivateWorker } from './private-worker';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

/**
 * Provisioning under EC2 faults, throttling and a worker crash, isolated from
 * every other test file: this file runs its own EC2 proxy (in front of the
 * stack's moto, so the same EC2 state) and its own worker process polling a
 * task queue of its own (PROVISIONER_TASK_QUEUE). Faults and limits set here
 * exist only on the private proxy, so they can never touch the shared
 * worker's machines, and the worker can be killed without harming anyone.
 *
 * Machines are written to DynamoDB the way the API writes them (the API would
 * start their workflows on the shared queue), and their workflows are started
 * here on the private queue; everything after that — retry and destroy — goes
 * through the API, whose signals reach the running workflow wherever it runs.
 */

const stack = loadTestStack();
const api = apiClient(stack);
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const IN_ZONES = `zones=${ZONES.join(',')}`;
const TASK_QUEUE = `provisioner-isolated-${randomUUID().slice(0, 8)}`;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-isolated-'));

const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
const owners = InstanceOwners.ofTable(ddb, stack.tableName);
let proxy: Ec2Proxy;
let ec2: EC2Client;
let connection: Connection;
let temporal: Client;
let worker: ManagedProcess | undefined;
let workers = 0;

function timing(label: string, startedAt: number): void {
  process.stderr.write(`[timing] ${label}: ${Date.now() - startedAt} ms\n`);
}

/** Starts a worker process on the private queue and proxy; resolves once it polls. */
function startWorker(extraEnv: Record<string, string> = {}): Promise<ManagedProcess> {
  workers += 1;
  return startPrivateWorker(stack, {
    name: `worker-${workers}`,
    taskQueue: TASK_QUEUE,
    logFile: join(logDir, `worker-${workers}.log`),
    ec2Endpoint: proxy.url,
    env: extraEnv,
  });
}

function kill9(proc: ManagedProcess): Promise<unknown> {
  if (proc.child.pid !== undefined) process.kill(-proc.child.pid, 'SIGKILL');
  return proc.exited;
}

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${proxy.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

async function stats(): Promise<{
  calls: Record<string, number>;
  injected: Record<string, number>;
  throttled: number;
}> {
  return admin('GET', '/_admin/stats');
}

async function resetProxy(): Promise<void> {
  await admin('DELETE', '/_admin/faults');
  await admin('DELETE', '/_admin/limits');
  await admin('DELETE', '/_admin/latency');
}

/** Stops every launch: a RunInstances bucket of one token that never refills, spent at once. */
async function blockLaunches(): Promise<void> {
  await admin('PUT', '/_admin/limits', { runInstances: { burst: 1, refillPerSecond: 0 } });
  const res = await fetch(`${proxy.url}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${stack.region}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
    },
    // a dry run: takes the bucket's only token, launches nothing
    body: new URLSearchParams({
      Action: 'RunInstances',
      Version: '2016-11-15',
      ImageId: 'ami-00000000000000000',
      InstanceType: 't3.micro',
      MinCount: '1',
      MaxCount: '1',
      DryRun: 'true',
    }).toString(),
  });
  const body = await res.text();
  expect(body).toContain('DryRunOperation');
}

async function newModel(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  expect((await api.post('/v1/models', { name })).status).toBe(201);
  return name;
}

interface MachineSpec {
  applications?: string[];
  constraints?: string;
  /** A machine already running in a zone (no workflow): it only counts in its group. */
  runningIn?: string;
}

/** Records machines as the API does, then starts the workflows of those to provision on the private queue. */
async function addMachines(model: string, specs: MachineSpec[]): Promise<string[]> {
  const ids = await repo.allocateMachineIds(model, specs.length);
  const records = specs.map((spec, i) =>
    pendingMachine(model, ids[i]!, {
      constraints: spec.constraints ?? IN_ZONES,
      applications: spec.applications ?? [],
      // recorded as running elsewhere: counted in its zone, never launched here
      ...(spec.runningIn
        ? { status: 'running', zone: spec.runningIn, instanceId: `i-fake${i}` }
        : {}),
    }),
  );
  await repo.putNewMachines(records);
  const toProvision = records.filter((r) => !r.zone).map((r) => r.id);
  await Promise.all(
    toProvision.map((id) =>
      temporal.workflow.start('machineWorkflow', {
        taskQueue: TASK_QUEUE,
        workflowId: machineWorkflowId(model, id),
        args: [{ model, machineId: id }],
      }),
    ),
  );
  return toProvision;
}

async function machine(model: string, id: string): Promise<any> {
  return (await api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`)).body;
}

function untilStatus(model: string, id: string, wanted: string, timeoutMs = 60_000) {
  return eventually(
    () => machine(model, id),
    (m) => m?.status === wanted,
    timeoutMs,
  );
}

/** The workflow's own view, once it has caught up with the status it recorded (`phase`). */
function provisioningState(
  model: string,
  id: string,
  phase: ProvisioningState['phase'] = 'running',
): Promise<ProvisioningState> {
  return eventually(
    () => temporal.workflow.getHandle(machineWorkflowId(model, id)).query(provisioningStateQuery),
    (s) => s.phase === phase,
    20_000,
  );
}

/** Every instance EC2 holds tagged for the model (any state), by machine id. */
async function instancesByMachine(model: string): Promise<Map<string, Instance[]>> {
  const byMachine = new Map<string, Instance[]>();
  const pages = paginateDescribeInstances(
    { client: ec2 },
    { Filters: [{ Name: `tag:${TAG_MODEL}`, Values: [model] }] },
  );
  const all: Instance[] = [];
  for await (const page of pages) {
    all.push(...(page.Reservations ?? []).flatMap((r) => r.Instances ?? []));
  }
  // each instance's machine, from its launch batch's record (no per-machine tag)
  const machineOf = await owners.of(model, all);
  for (const instance of all) {
    const id = machineOf.get(instance.InstanceId!) ?? '';
    byMachine.set(id, [...(byMachine.get(id) ?? []), instance]);
  }
  return byMachine;
}

beforeAll(async () => {
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  ec2 = ec2ClientFor(stack, proxy.url);
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  worker = await startWorker();
}, 120_000);

afterEach(resetProxy);

afterAll(async () => {
  await worker?.stop();
  await connection?.close();
  ec2?.destroy();
  ddb.destroy();
  await proxy?.close();
});

describe('zone failover', () => {
  it('skips a zone faulted with InsufficientInstanceCapacity for the next least populous one, spending no attempt', async () => {
    const model = await newModel('failover');
    // the group already has one machine in b and two in c: a, then b, then c
    await addMachines(model, [
      { applications: ['web'], runningIn: 'us-east-1b' },
      { applications: ['web'], runningIn: 'us-east-1c' },
      { applications: ['web'], runningIn: 'us-east-1c' },
    ]);
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-east-1a': 'InsufficientInstanceCapacity' },
    });
    const before = await stats();
    const [id] = await addMachines(model, [{ applications: ['web'] }]);

    const m = await untilStatus(model, id!, 'running');
    expect(m.zone).toBe('us-east-1b');
    expect(await provisioningState(model, id!)).toMatchObject({
      phase: 'running',
      attempt: 1,
      failedZones: ['us-east-1a'],
      zone: 'us-east-1b',
      instanceId: m.instanceId,
    });
    const after = await stats();
    expect(
      (after.injected.InsufficientInstanceCapacity ?? 0) -
        (before.injected.InsufficientInstanceCapacity ?? 0),
    ).toBe(1);
    expect((after.calls.RunInstances ?? 0) - (before.calls.RunInstances ?? 0)).toBe(2);
    const instances = await instancesByMachine(model);
    expect(instances.get(id!)?.map((i) => i.Placement?.AvailabilityZone)).toEqual(['us-east-1b']);
  });

  it('never chooses an impaired zone', async () => {
    const model = await newModel('impaired');
    await admin('PUT', '/_admin/faults', { zoneStates: { 'us-east-1b': 'impaired' } });
    const ids = await addMachines(model, [{}, {}, {}, {}]);
    const zones: string[] = [];
    for (const id of ids) zones.push((await untilStatus(model, id, 'running')).zone);
    expect(zones.sort()).toEqual(['us-east-1a', 'us-east-1a', 'us-east-1c', 'us-east-1c']);
    for (const id of ids) expect((await provisioningState(model, id)).failedZones).toEqual([]);
    const placed = [...(await instancesByMachine(model)).values()]
      .flat()
      .map((i) => i.Placement?.AvailabilityZone);
    expect(placed).not.toContain('us-east-1b');
    expect(placed).toHaveLength(4);
  });

  it('puts a machine in error with the EC2 code and no instance after every zone failed every attempt; a retry once the fault clears runs it', async () => {
    const model = await newModel('allfail');
    await admin('PUT', '/_admin/faults', {
      zones: {
        'us-east-1a': 'InsufficientInstanceCapacity',
        'us-east-1b': 'InsufficientInstanceCapacity',
      },
    });
    const before = await stats();
    const started = Date.now();
    const [id] = await addMachines(model, [{ constraints: 'zones=us-east-1a,us-east-1b' }]);

    // every status message the machine shows on the way
    const seen = new Set<string>();
    const failed = await eventually(
      async () => {
        const m = await machine(model, id!);
        if (m?.status === 'allocating') seen.add(m.message as string);
        return m;
      },
      (m) => m?.status === 'error',
      60_000,
      20,
    );
    timing('2 zones x 3 attempts (500ms apart) to error', started);
    const messages = [...seen];
    const capacity = String.raw`InsufficientInstanceCapacity: We currently do not have sufficient \S+ capacity in the Availability Zone you requested \(us-east-1b\)[^)]*\.`;
    // a spent attempt, worded as Juju words it, while the machine waits to retry
    expect(messages).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^failed to start machine ${id!} \\(every zone tried failed \\(us-east-1a, us-east-1b\\); the last: ${capacity}\\), retrying in 500ms \\([12] more attempts\\)$`,
        ),
      ),
    );
    expect(messages.every((m) => /^(starting in zone|failed to start machine)/.test(m))).toBe(true);
    // the error names every zone tried, then the last zone's EC2 error
    expect(failed.message).toMatch(
      /^every zone tried failed \((us-east-1a, us-east-1b|us-east-1b, us-east-1a)\); the last: InsufficientInstanceCapacity: We currently do not have sufficient \S+ capacity in the Availability Zone you requested \(us-east-1[ab]\)/,
    );
    expect(failed.instanceId).toBeUndefined();
    expect(failed.zone).toBeUndefined();
    const after = await stats();
    // 3 attempts, each a pass over both zones
    expect(
      (after.injected.InsufficientInstanceCapacity ?? 0) -
        (before.injected.InsufficientInstanceCapacity ?? 0),
    ).toBe(6);
    expect(await provisioningState(model, id!, 'error')).toMatchObject({
      phase: 'error',
      attempt: 3,
      maxAttempts: 3,
      lastError: failed.message,
    });
    expect((await instancesByMachine(model)).get(id!)).toBeUndefined();

    await admin('DELETE', '/_admin/faults');
    expect((await api.post(`/v1/models/${model}/machines/${id!}/retry`, {})).status).toBe(202);
    const running = await untilStatus(model, id!, 'running');
    expect(['us-east-1a', 'us-east-1b']).toContain(running.zone);
    expect(running.message).toBe('');
    expect(await provisioningState(model, id!)).toMatchObject({
      phase: 'running',
      pass: 2,
      attempt: 1,
      failedZones: [],
    });
  });
});

describe('throttling and a worker crash', () => {
  it('leaves exactly one instance per machine when the worker is killed mid-provisioning and started again', async () => {
    const model = await newModel('crash');
    // slow launches down so the kill lands among them; throttling is retried, never a zone failure
    await admin('PUT', '/_admin/limits', { runInstances: { burst: 1, refillPerSecond: 1 } });
    const before = await stats();
    const started = Date.now();
    const ids = await addMachines(model, [{}, {}, {}, {}, {}, {}]);

    await eventually(
      () => instancesByMachine(model),
      (byMachine) => byMachine.size >= 2,
      60_000,
      50,
    );
    const running = Object.values<any>(
      (await api.get(`/v1/models/${model}/status`)).body.machines,
    ).filter((m) => m.status === 'running').length;
    expect(running).toBeLessThan(6); // killed mid-provisioning
    await kill9(worker!);
    worker = await startWorker();

    const status = await eventually(
      () => api.get(`/v1/models/${model}/status`),
      (res) => Object.values<any>(res.body.machines).every((m) => m.status === 'running'),
      120_000,
    );
    timing('6 throttled machines with a worker crash to all running', started);
    const byMachine = await instancesByMachine(model);
    expect([...byMachine.keys()].sort()).toEqual([...ids].sort());
    const zones: Record<string, number> = {};
    for (const id of ids) {
      const instances = byMachine.get(id) ?? [];
      expect(instances.map((i) => i.State?.Name)).toEqual(['running']);
      expect(status.body.machines[id].instanceId).toBe(instances[0]?.InstanceId);
      zones[status.body.machines[id].zone] = (zones[status.body.machines[id].zone] ?? 0) + 1;
      expect((await provisioningState(model, id)).failedZones).toEqual([]);
    }
    expect(zones).toEqual({ 'us-east-1a': 2, 'us-east-1b': 2, 'us-east-1c': 2 });
    expect((await stats()).throttled - before.throttled).toBeGreaterThan(0);
  }, 180_000);
});

/** Every machine running, each with exactly one live instance that it records, none untagged. */
async function expectOneInstanceEach(model: string, ids: string[]): Promise<any> {
  const status = await eventually(
    () => api.get(`/v1/models/${model}/status`),
    (res) => ids.every((id) => res.body.machines[id]?.status === 'running'),
    180_000,
  );
  const byMachine = await instancesByMachine(model);
  expect(byMachine.get('')).toBeUndefined(); // every instance ends tagged for its machine
  for (const id of ids) {
    const live = (byMachine.get(id) ?? []).filter((i) => i.State?.Name !== 'terminated');
    expect(live.map((i) => i.InstanceId)).toEqual([status.body.machines[id].instanceId]);
  }
  return status;
}

describe('launch batches', () => {
  it('launches machines of one spec arriving together in one RunInstances per zone', async () => {
    const model = await newModel('batch');
    const before = await stats();
    const ids = await addMachines(
      model,
      Array.from({ length: 9 }, () => ({ applications: ['web'] })),
    );
    const status = await expectOneInstanceEach(model, ids);
    const zones: Record<string, number> = {};
    for (const id of ids)
      zones[status.body.machines[id].zone] = (zones[status.body.machines[id].zone] ?? 0) + 1;
    expect(zones).toEqual({ 'us-east-1a': 3, 'us-east-1b': 3, 'us-east-1c': 3 });
    const calls = (await stats()).calls.RunInstances! - (before.calls.RunInstances ?? 0);
    process.stderr.write(`[batch] 9 machines over 3 zones: ${calls} RunInstances calls\n`);
    expect(calls).toBeGreaterThanOrEqual(3);
    expect(calls).toBeLessThan(9);
  }, 240_000);

  it('ends with exactly one instance per machine when the worker is killed between the batch call and the record', async () => {
    const model = await newModel('batchkill');
    // the launch happens and its answer is held: the kill lands between the call and the record
    await admin('PUT', '/_admin/latency', { runInstancesAnswer: 20_000 });
    const before = await stats();
    const ids = await addMachines(
      model,
      Array.from({ length: 6 }, () => ({ applications: ['db'] })),
    );
    // launched (tagged for the model and batch at launch), not yet recorded
    await eventually(
      () => instancesByMachine(model),
      (byMachine) => [...byMachine.values()].flat().length >= 6,
      120_000,
      100,
    );
    const statusBefore = (await api.get(`/v1/models/${model}/status`)).body;
    expect(ids.filter((id) => statusBefore.machines[id].status === 'running')).toEqual([]);
    await kill9(worker!);
    await admin('DELETE', '/_admin/latency');
    worker = await startWorker();
    await expectOneInstanceEach(model, ids);
    const after = await stats();
    // the restarted worker repeats the batch's call (EC2 answers the same reservation): no new launches
    const launched = await instancesByMachine(model);
    expect([...launched.values()].flat()).toHaveLength(6);
    process.stderr.write(
      `[batch] worker killed mid-batch: ${after.calls.RunInstances! - (before.calls.RunInstances ?? 0)} RunInstances calls for 6 machines\n`,
    );
  }, 300_000);

  it('ends with exactly one instance per machine when the answer to the batch call is lost', async () => {
    const model = await newModel('batchlost');
    await admin('PUT', '/_admin/faults', { loseResponses: { runInstances: 2 } });
    const ids = await addMachines(
      model,
      Array.from({ length: 6 }, () => ({ applications: ['cache'] })),
    );
    await expectOneInstanceEach(model, ids);
    const launched = await instancesByMachine(model);
    expect([...launched.values()].flat()).toHaveLength(6);
  }, 300_000);

  it('fails the members EC2 left out of a partial batch over to their next zone', async () => {
    // windows long enough that the six launches make one batch of three per zone, whatever the load
    await kill9(worker!);
    worker = await startWorker({
      PROVISIONER_LAUNCH_BATCH_IDLE: '4s',
      PROVISIONER_LAUNCH_BATCH_MAX: '8s',
    });
    try {
      const model = await newModel('batchpartial');
      // EC2's launched-instances bucket: 4 for the two batches of 3, then one every 2 s
      await admin('PUT', '/_admin/limits', {
        launchedInstances: { burst: 4, refillPerSecond: 0.5 },
      });
      const before = await stats();
      const ids = await addMachines(
        model,
        Array.from({ length: 6 }, () => ({
          applications: ['queue'],
          constraints: 'zones=us-east-1a,us-east-1b',
        })),
      );
      await expectOneInstanceEach(model, ids);
      const failedOver = [];
      for (const id of ids) {
        const state = await provisioningState(model, id);
        if (state.failedZones.length > 0) failedOver.push(id);
      }
      // one batch got 3 of 3, the other 1 of 3: its two unserved members failed over
      expect(failedOver).toHaveLength(2);
      const launched = await instancesByMachine(model);
      expect([...launched.values()].flat()).toHaveLength(6);
      const calls = (await stats()).calls.RunInstances! - (before.calls.RunInstances ?? 0);
      process.stderr.write(`[batch] partial batch: ${calls} RunInstances calls for 6 machines\n`);
    } finally {
      await kill9(worker);
      worker = await startWorker();
    }
  }, 300_000);
});

describe('teardown during a launch', () => {
  it('terminates the instance as soon as a launch in flight returns for a machine that went Dead', async () => {
    const model = await newModel('deadlaunch');
    await blockLaunches();
    const before = await stats();
    const [id] = await addMachines(model, [{}]);
    await eventually(
      () => machine(model, id!),
      (m) => m.status === 'allocating' && String(m.message).startsWith('starting in zone'),
    );
    // the launch is in flight: its RunInstances is being throttled
    await eventually(
      () => stats(),
      (s) => s.throttled > before.throttled,
      60_000,
      50,
    );
    expect((await api.delete(`/v1/models/${model}/machines/${id!}`)).status).toBe(202);
    await admin('DELETE', '/_admin/limits'); // the launch goes through now
    await eventually(
      () => api.get(`/v1/models/${model}/machines/${id!}`),
      (r) => r.status === 404,
      60_000,
    );
    const instances = (await instancesByMachine(model)).get(id!) ?? [];
    expect(instances).toHaveLength(1);
    expect(instances[0]?.State?.Name).toBe('terminated');
  });

  it('terminates an instance it cannot record (no orphan)', async () => {
    const model = await newModel('norecord');
    // the launch's answer is held: the record goes meanwhile
    await admin('PUT', '/_admin/latency', { runInstancesAnswer: 3000 });
    const [id] = await addMachines(model, [{}]);
    await eventually(
      () => instancesByMachine(model),
      (byMachine) => [...byMachine.values()].flat().length === 1,
      60_000,
      50,
    );
    // the record disappears under the launch: recording fails
    await ddb.send(
      new DeleteItemCommand({
        TableName: stack.tableName,
        Key: { pk: { S: modelPk(model) }, sk: { S: machineSk(id!) } },
      }),
    );
    const handle = temporal.workflow.getHandle(machineWorkflowId(model, id!));
    await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'COMPLETED',
      60_000,
    );
    const instances = (await instancesByMachine(model)).get(id!) ?? [];
    expect(instances).toHaveLength(1);
    const described = await ec2.send(
      new DescribeInstancesCommand({ InstanceIds: [instances[0]!.InstanceId!] }),
    );
    expect(described.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('terminated');
  });
});
