import {
  DescribeInstancesCommand,
  TerminateInstancesCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import { freePort, spawnManaged, type ManagedProcess } from '../../local/processes';
import { PROJECT_ROOT, tsEntry } from '../../local/stack';
import { ZoneCountStore } from '../../state/zone-counts';
import {
  machineWorkflowId,
  SWEEPER_WORKFLOW_TYPE,
  sweeperWorkflowId,
} from '../../temporal/search-attributes';
import { instanceStateSignal, provisioningStateQuery } from '../../workflows/definitions';
import { startTcpFaultProxy, type TcpFaultProxy } from '../support/tcp-fault-proxy';
import { proxyAdmin, proxyCalls } from './ec2-test-kit';
import { apiClient, eventually, uniqueName, type ApiResult } from './api-client';
import { startPrivateWorker } from './private-worker';
import {
  dynamoClientFor,
  ec2ClientFor,
  loadTestStack,
  privateTable,
  type StackInfo,
} from './stack';

/**
 * Reprovision under faults (issue 23, items 2 and 3), through an API server
 * of this file's own: its Temporal is reached through a TCP forwarder the
 * test takes down and brings back, its EC2 is a private proxy (which can
 * leave an instance out of its listings, as EC2 does for moments after a
 * launch), and its table is a private one, served by a private worker on a
 * private task queue. No sweeper runs for that table (its id is held by a
 * workflow no worker polls), so nothing but the requests here changes a
 * machine: a just-launched instance stays recorded `pending`.
 */
const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const table = privateTable(ddb, 'reprovision-faults');
const TASK_QUEUE = `provisioner-reprov-${randomUUID().slice(0, 8)}`;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-reprov-'));
const counts = new ZoneCountStore(ddb, table.tableName);
const IN_ZONES = 'zones=us-east-1a,us-east-1b,us-east-1c';

let proxy: Ec2Proxy;
let ec2: EC2Client;
let forwarder: TcpFaultProxy;
let connection: Connection;
let temporal: Client;
let worker: ManagedProcess | undefined;
let apiProcess: ManagedProcess | undefined;
let api: ReturnType<typeof apiClient>;

function admin(method: string, path: string, body?: unknown): Promise<any> {
  return proxyAdmin(proxy.url, method, path, body);
}

function calls(action: string): Promise<number> {
  return proxyCalls(proxy.url, action);
}

/** The API server: the stack's own entry point, on this file's table, EC2 proxy and Temporal forwarder. */
async function startApi(): Promise<{ process: ManagedProcess; info: StackInfo }> {
  const port = await freePort();
  const token = randomBytes(16).toString('hex');
  const [command, args] = tsEntry('local/api-server-main.ts');
  const logFile = join(logDir, 'api.log');
  const proc = spawnManaged('api-reprov', command, args, {
    cwd: PROJECT_ROOT,
    logFile,
    env: {
      ...process.env,
      AWS_REGION: stack.region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_EC2_METADATA_DISABLED: 'true',
      PROVISIONER_TABLE: table.tableName,
      DYNAMODB_ENDPOINT: stack.dynamodbEndpoint,
      EC2_ENDPOINT: proxy.url,
      TEMPORAL_ADDRESS: forwarder.address,
      TEMPORAL_NAMESPACE: stack.temporalNamespace,
      PROVISIONER_TASK_QUEUE: TASK_QUEUE,
      PROVISIONER_API_TOKEN: token,
      PROVISIONER_API_PORT: String(port),
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
  });
  const info: StackInfo = { ...stack, apiUrl: `http://127.0.0.1:${port}`, token };
  // a busy machine takes its time to compile and start a server: a generous bound
  await eventually(
    async () => {
      try {
        const res = await fetch(`${info.apiUrl}/v1/models`, {
          headers: { authorization: `Bearer ${token}` },
        });
        return res.status;
      } catch {
        return 0;
      }
    },
    (status) => status === 200,
    90_000,
    250,
  );
  return { process: proc, info };
}

beforeAll(async () => {
  await table.create();
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  ec2 = ec2ClientFor(stack, proxy.url);
  forwarder = await startTcpFaultProxy(stack.temporalAddress);
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  // the API starts the sweeper of its task queue; one already there, on a queue no worker
  // polls, is left be: no sweep changes the machines behind the test's back
  await temporal.workflow.start(SWEEPER_WORKFLOW_TYPE, {
    taskQueue: `${TASK_QUEUE}-unpolled`,
    workflowId: sweeperWorkflowId(TASK_QUEUE),
    args: [{}],
  });
  worker = await startPrivateWorker(stack, {
    name: 'worker-reprov',
    taskQueue: TASK_QUEUE,
    logFile: join(logDir, 'worker.log'),
    ec2Endpoint: proxy.url,
    env: { PROVISIONER_TABLE: table.tableName },
  });
  const started = await startApi();
  apiProcess = started.process;
  api = apiClient(started.info);
}, 240_000);

afterEach(async () => {
  forwarder.up();
  await admin('DELETE', '/_admin/faults');
  await admin('DELETE', '/_admin/latency');
});

afterAll(async () => {
  await apiProcess?.stop();
  await worker?.stop();
  await temporal?.workflow
    .getHandle(sweeperWorkflowId(TASK_QUEUE))
    .terminate('test over')
    .catch(() => undefined);
  await connection?.close();
  await forwarder?.close();
  ec2?.destroy();
  await proxy?.close();
  await table.drop();
  ddb.destroy();
});

function timing(what: string, since: number): void {
  process.stderr.write(`[reprovision] ${what}: ${Date.now() - since} ms\n`);
}

function machine(model: string, id: string): Promise<ApiResult<any>> {
  return api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`);
}

async function runningMachine(model: string, id: string): Promise<any> {
  const res = await eventually(
    () => machine(model, id),
    (r) => r.body?.status === 'running' && typeof r.body?.instanceId === 'string',
    120_000,
  );
  return res.body;
}

/** A model with one unit of `web` on machine 0, running. */
async function modelWithRunningMachine(prefix: string): Promise<{ model: string; m: any }> {
  const model = uniqueName(prefix);
  expect((await api.post('/v1/models', { name: model, constraints: IN_ZONES })).status).toBe(201);
  const deployed = await api.post(`/v1/models/${model}/applications`, {
    name: 'web',
    base: 'ubuntu@24.04',
  });
  expect(deployed.status).toBe(201);
  return { model, m: await runningMachine(model, '0') };
}

function workflowState(model: string, id: string) {
  return temporal.workflow.getHandle(machineWorkflowId(model, id)).query(provisioningStateQuery);
}

describe('reprovision while Temporal is unreachable', () => {
  it('fails 503 mid-request with nothing changed, and the same request completes it once Temporal is back', async () => {
    const { model, m } = await modelWithRunningMachine('reprovtemporal');
    const old = m.instanceId as string;
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [old] }));
    const launches = await calls('RunInstances');
    const spread = await counts.counts(model, 'web');
    expect(spread).toEqual({ [m.zone]: 1 });

    // EC2's answer takes 3 s; Temporal goes away while the request waits for it
    await admin('PUT', '/_admin/latency', { describeInstances: 3000 });
    const asked = await calls('DescribeInstances');
    const request = api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    await eventually(
      () => calls('DescribeInstances'),
      (n) => n > asked,
      30_000,
      50,
    );
    forwarder.down();
    const cut = Date.now();
    const refused = await request;
    timing('Temporal cut mid-request → 503', cut);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({
      error: {
        code: 'unavailable',
        message: 'cannot reach the workflow service to reprovision machine 0; try again',
      },
    });
    await admin('DELETE', '/_admin/latency');

    // nothing changed: the machine, its zone counts, its workflow, EC2
    const after = (await machine(model, '0')).body;
    expect(after).toMatchObject({ status: 'running', instanceId: old, zone: m.zone });
    expect(await counts.counts(model, 'web')).toEqual(spread);
    expect(await workflowState(model, '0')).toMatchObject({ phase: 'running', instanceId: old });
    // a repeat while Temporal is still away is refused the same way
    const repeated = Date.now();
    const again = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    timing('a repeat while Temporal is away → 503', repeated);
    expect(again.status).toBe(503);
    expect(again.body.error.code).toBe('unavailable');
    expect((await machine(model, '0')).body).toMatchObject({ status: 'running', instanceId: old });
    expect(await calls('RunInstances')).toBe(launches);

    // Temporal back: the same request, repeated until the API's connection recovers, completes it
    forwarder.up();
    const back = Date.now();
    let tries = 0;
    const accepted = await eventually(
      async () => {
        tries += 1;
        const res = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
        // every answer before it succeeds is the same clean refusal
        if (res.status !== 202) expect(res.status).toBe(503);
        return res;
      },
      (res) => res.status === 202,
      90_000,
      1000,
    );
    timing(`Temporal back → reprovision accepted (${tries} requests)`, back);
    expect(accepted.body).toBeUndefined();
    const replaced = await eventually(
      () => machine(model, '0'),
      (r) => r.body?.status === 'running' && r.body?.instanceId && r.body.instanceId !== old,
      120_000,
    );
    expect(replaced.body.units).toEqual(['web/0']);
    expect(await calls('RunInstances')).toBe(launches + 1);
    // counted once, in the new instance's zone
    expect(await counts.counts(model, 'web')).toEqual({ [replaced.body.zone]: 1 });
  });
});

describe('reprovision of an instance EC2 does not list yet', () => {
  it('refuses 409 for a just-launched instance (recorded pending) and launches nothing; once seen running, its absence is gone', async () => {
    const { model, m } = await modelWithRunningMachine('reprovyoung');
    const young = m.instanceId as string;
    // launched moments ago as far as the provisioner knows: no liveness has seen it yet
    expect(m.instanceStatus).toBe('pending');
    await admin('PUT', '/_admin/faults', { unlisted: [young] });
    const launches = await calls('RunInstances');

    const refused = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: {
        code: 'conflict',
        message: `cannot confirm instance "${young}" is gone: EC2 does not list it yet (launched moments ago)`,
      },
    });
    // no second instance, the machine as it was, its instance still running at EC2
    await new Promise((r) => setTimeout(r, 2000));
    expect(await calls('RunInstances')).toBe(launches);
    expect((await machine(model, '0')).body).toMatchObject({
      status: 'running',
      instanceId: young,
      instanceStatus: 'pending',
    });
    const moto = ec2ClientFor(stack, stack.motoEndpoint);
    try {
      const seen = await moto.send(new DescribeInstancesCommand({ InstanceIds: [young] }));
      expect(seen.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('running');
    } finally {
      moto.destroy();
    }

    // liveness saw it running (what the sweep tells the workflow); EC2 not listing it now means gone
    await temporal.workflow
      .getHandle(machineWorkflowId(model, '0'))
      .signal(instanceStateSignal, { instanceId: young, state: 'running' });
    await eventually(
      () => machine(model, '0'),
      (r) => r.body?.instanceStatus === 'running',
      60_000,
    );
    const accepted = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    expect(accepted.status).toBe(202);
    const back = await eventually(
      () => machine(model, '0'),
      (r) => r.body?.status === 'running' && r.body?.instanceId && r.body.instanceId !== young,
      120_000,
    );
    expect(back.body.units).toEqual(['web/0']);
    expect(await calls('RunInstances')).toBe(launches + 1);
    // the instance it replaced is not the machine's any more (a stray for the sweep's harvest modes)
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [young] }));
  });
});
