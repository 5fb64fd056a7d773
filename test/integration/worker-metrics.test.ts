import { SSMClient } from '@aws-sdk/client-ssm';
import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ssmActivities } from '../../activities/ssm';
import { provisioningTuning } from '../../config/env';
import { workerMetrics } from '../../config/worker-metrics';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import type { ManagedProcess } from '../../local/processes';
import { ContainerStore } from '../../state/containers';
import { Repository } from '../../state/repository';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { proxyAdmin, proxyCalls } from './ec2-test-kit';
import { apiClient, eventually, uniqueName } from './api-client';
import { pendingMachine } from './fixtures';
import { startPrivateWorker } from './private-worker';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * The worker's metric calls (activities/metrics.ts, each at the place it
 * happens) reach its EMF lines: a worker of this file's own (private task
 * queue, private EC2 proxy, its own log) launches a machine refused for
 * capacity in its only zone, one launched after EC2 throttled it, and tears
 * one down EC2 refuses to terminate; each metric is then read from the
 * worker's log. Deleting any one emission leaves its metric at 0 here.
 * The container path's `MachinesInError` (activities/ssm.ts) is driven in
 * this process with the real metrics object.
 */

const stack = loadTestStack();
const api = apiClient(stack);
const TASK_QUEUE = `provisioner-metrics-${randomUUID().slice(0, 8)}`;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-metrics-'));
const LOG = join(logDir, 'worker.log');
const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
let proxy: Ec2Proxy;
let connection: Connection;
let temporal: Client;
let worker: ManagedProcess | undefined;

interface Emf {
  _aws?: {
    CloudWatchMetrics: Array<{
      Namespace: string;
      Dimensions: string[][];
      Metrics: Array<{ Name: string }>;
    }>;
  };
  service?: string;
  Code?: string;
  [key: string]: unknown;
}

function emfLines(text: string): Emf[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"_aws"'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Emf];
      } catch {
        return [];
      }
    });
}

/** Distributions (config/worker-metrics.ts `sample`): each record holds samples, not a total. */
const DISTRIBUTIONS = new Set(['BatchSize']);

/**
 * The worker's own metrics over its EMF lines, by name, and by `name{Code}`
 * where the line has a code: a counter's totals summed; a distribution's
 * samples counted (one value written alone is one sample, whatever it is).
 */
function totals(records: Emf[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    const cw = r._aws?.CloudWatchMetrics[0];
    if (!cw || cw.Namespace !== 'Provisioner/local' || r.service !== 'provisioner-worker') continue;
    for (const { Name } of cw.Metrics) {
      const v = r[Name];
      const n = Array.isArray(v) ? v.length : DISTRIBUTIONS.has(Name) ? 1 : Number(v);
      const key = r.Code === undefined ? Name : `${Name}{${r.Code}}`;
      out[key] = (out[key] ?? 0) + n;
    }
  }
  return out;
}

const workerTotals = () => totals(emfLines(existsSync(LOG) ? readFileSync(LOG, 'utf8') : ''));

function admin(method: string, path: string, body?: unknown): Promise<any> {
  return proxyAdmin(proxy.url, method, path, body);
}

function calls(action: string): Promise<number> {
  return proxyCalls(proxy.url, action);
}

/** Records a machine as the API does and starts its workflow on the private queue. */
async function addMachine(model: string, constraints: string): Promise<string> {
  const [id] = await repo.allocateMachineIds(model, 1);
  await repo.putNewMachines([pendingMachine(model, id!, { base: 'ubuntu@24.04', constraints })]);
  await temporal.workflow.start('machine', {
    taskQueue: TASK_QUEUE,
    workflowId: machineWorkflowId(model, id!),
    args: [{ model, machineId: id! }],
  });
  return id!;
}

const machine = async (model: string, id: string) =>
  (await api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`)).body as Record<
    string,
    unknown
  >;

/** Waits for the worker's flush (every 10 s) to have written at least `want` of each metric. */
const flushed = (want: Record<string, number>) =>
  eventually(
    () => Promise.resolve(workerTotals()),
    (t) => Object.entries(want).every(([k, n]) => (t[k] ?? 0) >= n),
    90_000,
    500,
  ).catch(() => workerTotals());

beforeAll(async () => {
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  worker = await startPrivateWorker(stack, {
    name: 'worker-metrics',
    taskQueue: TASK_QUEUE,
    logFile: LOG,
    ec2Endpoint: proxy.url,
    env: { PROVISIONER_BLOCKED_HISTORY: '100' },
  });
}, 120_000);

afterEach(async () => {
  await admin('DELETE', '/_admin/faults');
});

afterAll(async () => {
  await worker?.stop();
  await connection?.close();
  ddb.destroy();
  await proxy?.close();
});

describe("the worker's metrics, from its EMF lines", () => {
  it("counts a distribution's samples, not their values; sums a counter's totals", () => {
    const record = (values: Record<string, unknown>): Emf => ({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: 'Provisioner/local',
            Dimensions: [['service']],
            Metrics: Object.keys(values).map((Name) => ({ Name })),
          },
        ],
      },
      service: 'provisioner-worker',
      ...values,
    });
    // one batch of 2 is one sample; two batches of 1 are two; a counter's total of 3 is 3
    expect(totals([record({ BatchSize: 2 })])).toEqual({ BatchSize: 1 });
    expect(totals([record({ BatchSize: [1, 1] })])).toEqual({ BatchSize: 2 });
    expect(totals([record({ Launches: 3 }), record({ BatchSize: 5 })])).toEqual({
      Launches: 3,
      BatchSize: 1,
    });
  });

  it('counts a capacity refusal, a throttled launch, a launch, a machine in error and a blocked teardown', async () => {
    const model = uniqueName('wmetrics');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);

    // one zone only, and EC2 has no capacity there: a launch error, a failover, a machine in error
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-east-1a': 'InsufficientInstanceCapacity' },
    });
    const refused = await addMachine(model, 'zones=us-east-1a');
    await eventually(
      () => machine(model, refused),
      (m) => m.status === 'error',
      120_000,
    );
    await admin('DELETE', '/_admin/faults');

    // EC2 throttles RunInstances for a while, then launches it
    await admin('PUT', '/_admin/faults', { errors: { runInstances: 'RequestLimitExceeded' } });
    const before = await calls('RunInstances');
    const launched = await addMachine(model, 'zones=us-east-1b');
    await eventually(
      () => calls('RunInstances'),
      (n) => n >= before + 2,
      90_000,
    );
    await admin('DELETE', '/_admin/faults');
    await eventually(
      () => machine(model, launched),
      (m) => m.status === 'running',
      120_000,
    );

    // EC2 refuses to terminate it: the teardown is blocked
    await admin('PUT', '/_admin/faults', {
      errors: { terminateInstances: 'UnauthorizedOperation' },
    });
    expect((await api.delete(`/v1/models/${model}/machines/${launched}`)).status).toBe(202);
    await eventually(
      () => machine(model, launched),
      (m) => typeof m.message === 'string' && m.message.startsWith('cannot terminate'),
      120_000,
    );

    const want = {
      'LaunchErrors{InsufficientInstanceCapacity}': 1,
      ZoneFailovers: 1,
      MachinesInError: 1,
      ThrottledCalls: 1,
      Launches: 1,
      BatchSize: 2,
      TeardownBlocked: 1,
    };
    const seen = await flushed(want);
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, seen[k] ?? 0]));
    for (const [k, n] of Object.entries(want)) {
      expect({ metric: k, atLeast: n, got: got[k]! >= n }).toEqual({
        metric: k,
        atLeast: n,
        got: true,
      });
    }
    // one machine launched, one refused: no launch is counted twice
    expect(seen.Launches).toBe(1);
    expect(seen.MachinesInError).toBe(1);
    // lets the teardown finish, and waits for it (this file's worker is the only one on its
    // queue: stopped earlier, it would leave an open workflow and a running instance behind)
    await admin('DELETE', '/_admin/faults');
    await eventually(
      () => api.get(`/v1/models/${model}/machines/${launched}`),
      (res) => res.status === 404,
      180_000,
    );
    // and the machine in error too: the model goes once it is empty
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
    await eventually(
      () => api.get(`/v1/models/${model}`),
      (res) => res.status === 404,
      180_000,
    );
  }, 900_000);

  it('counts a container put in error (the SSM path), with the real metrics object', async () => {
    const model = uniqueName('wmct');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    expect(
      (await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-m' })).status,
    ).toBe(201);
    expect((await api.post(`/v1/models/${model}/machines`, { placement: 'lxd:0' })).status).toBe(
      201,
    );
    const ssm = new SSMClient({ region: stack.region, endpoint: stack.ec2Endpoint });
    try {
      const activities = ssmActivities({
        repo,
        tuning: provisioningTuning({}),
        containers: new ContainerStore(ddb, stack.tableName),
        ssmForRegion: () => ssm,
      });
      const before = drain();
      expect(before.MachinesInError ?? 0).toBe(0);
      await activities.recordContainerError({
        model,
        machineId: '0/lxd/0',
        message: 'creating container failed',
      });
      expect(drain()).toEqual({ MachinesInError: 1 });
      expect((await machine(model, '0/lxd/0')).status).toBe('error');
    } finally {
      ssm.destroy();
    }
  });
});

/** What this process's worker metrics hold, flushed as EMF lines and summed. */
function drain(): Record<string, number> {
  const lines: string[] = [];
  const out = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
    lines.push(...String(chunk).split('\n'));
    return true;
  });
  try {
    workerMetrics.flush();
  } finally {
    out.mockRestore();
  }
  return totals(emfLines(lines.join('\n')));
}
