import { EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InstanceOwners } from '../../activities/instance-owners';
import { freePort } from '../../local/processes';
import { startStack, type RunningStack } from '../../local/stack';
import { apiClient, eventually, uniqueName } from '../integration/api-client';
import { modelInstances } from '../integration/ec2-test-kit';
import { workflowBundlerOptions } from '../../worker/preload';

/**
 * The fault suite (`npm run test:faults`): a private stack, machines launched
 * while the worker is killed, EC2 is unavailable, launch answers are lost and
 * Temporal restarts; each scenario ends with exactly one live instance per
 * machine and nothing in error, and every history replays against this code.
 * Figures go to stderr as `[faults] …` lines.
 */
const WORKER_ENV = {
  PROVISIONER_START_ATTEMPTS: '10',
  PROVISIONER_RETRY_DELAY: '2s',
  PROVISIONER_SWEEP_INTERVAL: '5s',
  PROVISIONER_STRAY_GRACE: '5s',
};
/** Generous: the machine is small and shared; conditions are polled, never timed. */
const SETTLE_MS = 15 * 60_000;
jest.setTimeout(SETTLE_MS + 5 * 60_000);

let stack: RunningStack;
let api: ReturnType<typeof apiClient>;
let moto: EC2Client;
let proxyUrl: string;
const models: string[] = [];

const figure = (line: string) => process.stderr.write(`[faults] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const dir = mkdtempSync(join(tmpdir(), 'provisioner-faults-'));
  stack = await startStack({
    ports: {
      api: await freePort(),
      temporal: await freePort(),
      temporalUi: await freePort(),
      dynamodb: await freePort(),
      ec2: await freePort(),
      moto: await freePort(),
    },
    token: randomBytes(16).toString('hex'),
    dataDir: join(dir, 'data'),
    workerEnv: WORKER_ENV,
    log: (line) => process.stderr.write(`[stack] ${line}\n`),
  });
  api = apiClient(stack.info);
  proxyUrl = stack.info.ec2Endpoint;
  // moto itself: what really exists, whatever faults the proxy is injecting
  moto = new EC2Client({
    region: stack.info.region,
    endpoint: stack.info.motoEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
}, 300_000);

afterAll(async () => {
  moto?.destroy();
  await stack?.stop();
}, 120_000);

async function admin(method: string, path: string, body?: unknown): Promise<void> {
  const res = await fetch(`${proxyUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
}

interface ProxyStats {
  calls: Record<string, number>;
  injected: Record<string, number>;
  throttled: number;
}

async function proxyStats(): Promise<ProxyStats> {
  const res = await fetch(`${proxyUrl}/_admin/stats`);
  if (!res.ok) throw new Error(`GET /_admin/stats: ${res.status} ${await res.text()}`);
  return (await res.json()) as ProxyStats;
}

/** What changed in the proxy's counts between two snapshots (calls and injected faults). */
function statsDelta(before: ProxyStats, after: ProxyStats) {
  const diff = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(b)
        .map(([k, v]) => [k, v - (a[k] ?? 0)] as const)
        .filter(([, v]) => v > 0),
    );
  return {
    calls: diff(before.calls, after.calls),
    injected: diff(before.injected, after.injected),
  };
}

async function runningCount(model: string): Promise<number> {
  return (await machinesOf(model)).filter((m) => m.status === 'running').length;
}

interface MachineView {
  id: string;
  status: string;
  message: string;
  instanceId?: string;
}

async function machinesOf(model: string): Promise<MachineView[]> {
  const res = await api.get<{ machines: Record<string, MachineView> }>(
    `/v1/models/${model}/status`,
  );
  if (res.status !== 200) throw new Error(`status of ${model}: ${res.status}`);
  return Object.values(res.body.machines);
}

/** Each instance's machine, from its launch batch's record in the stack's table. */
function owners(): InstanceOwners {
  const ddb = new DynamoDBClient({
    region: stack.info.region,
    endpoint: stack.info.dynamodbEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  return InstanceOwners.ofTable(ddb, stack.info.tableName);
}

function liveInstancesOf(model: string): Promise<Instance[]> {
  return modelInstances(moto, model, ['pending', 'running', 'stopping', 'stopped']);
}

/** Every instance of the model, in any state (terminated ones too), from moto itself. */
function allInstancesOf(model: string): Promise<Instance[]> {
  return modelInstances(moto, model);
}

/** Whether the API still knows the model (a destroyed one is gone once its last machine is). */
async function modelExists(model: string): Promise<boolean> {
  const res = await api.get(`/v1/models/${model}`);
  if (res.status !== 200 && res.status !== 404) throw new Error(`model ${model}: ${res.status}`);
  return res.status === 200;
}

/**
 * A model of `count` machines, each running with exactly one instance: the
 * machines' instance ids.
 */
async function runningModel(
  prefix: string,
  count: number,
): Promise<{ model: string; instanceIds: string[] }> {
  const model = await createModel(prefix);
  const started = Date.now();
  const ids = await addMachines(model, count);
  await expectExactlyOneInstanceEach(model, ids, started);
  const instanceIds = (await machinesOf(model)).map((m) => m.instanceId!);
  return { model, instanceIds };
}

/**
 * Waits until the destroyed model is gone, then checks what it leaves in
 * EC2: every instance it ever had is terminated, and they are exactly the
 * machines' (nothing launched during the teardown, nothing left behind).
 */
async function expectTornDown(model: string, instanceIds: string[], requested: number) {
  await eventually(
    () => modelExists(model),
    (exists) => !exists,
    SETTLE_MS,
    1000,
  );
  const goneAfter = Date.now() - requested;
  const instances = await allInstancesOf(model);
  expect(instances.map((i) => i.InstanceId).sort()).toEqual([...instanceIds].sort());
  // moto moves a terminated instance through shutting-down on the next describe
  const settled = await eventually(
    () => allInstancesOf(model),
    (list) => list.every((i) => i.State?.Name === 'terminated'),
    60_000,
    1000,
  );
  expect(settled.filter((i) => i.State?.Name !== 'terminated').map((i) => i.InstanceId)).toEqual(
    [],
  );
  return goneAfter;
}

async function createModel(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  const res = await api.post('/v1/models', { name });
  expect(res.status).toBe(201);
  models.push(name);
  return name;
}

async function addMachines(model: string, count: number): Promise<string[]> {
  const res = await api.post<{ machines: Array<{ id: string }> }>(`/v1/models/${model}/machines`, {
    count,
  });
  expect(res.status).toBe(201);
  return res.body.machines.map((m) => m.id);
}

/**
 * Waits until every machine is running, then until the live instances are
 * exactly one per machine: each machine's recorded instance exists, no
 * instance is shared, none is left over. The models keep the default harvest
 * mode (`destroyed`), so the sweep terminates no stray: a duplicate launch
 * would stay, and fail this.
 */
async function expectExactlyOneInstanceEach(model: string, ids: string[], started: number) {
  const machines = await eventually(
    () => machinesOf(model),
    (ms) =>
      ms.length === ids.length && ms.every((m) => m.status === 'running' || m.status === 'error'),
    SETTLE_MS,
    1000,
  );
  const allRunning = Date.now() - started;
  expect(machines.filter((m) => m.status === 'error').map((m) => `${m.id}: ${m.message}`)).toEqual(
    [],
  );
  const recorded = machines.map((m) => m.instanceId);
  expect(recorded.every((id) => typeof id === 'string')).toBe(true);
  expect(new Set(recorded).size).toBe(ids.length);

  const first = await liveInstancesOf(model);
  // a launch still being recorded may show an instance more for a moment; a duplicate stays for ever
  const settled = await eventually(
    () => liveInstancesOf(model),
    (list) => list.length === ids.length,
    120_000,
    2000,
  );
  const byMachine = new Map<string, string[]>();
  const machineOf = await owners().of(model, settled);
  for (const i of settled) {
    const machine = machineOf.get(i.InstanceId!) ?? '?';
    byMachine.set(machine, [...(byMachine.get(machine) ?? []), i.InstanceId!]);
  }
  for (const m of machines) expect(byMachine.get(m.id)).toEqual([m.instanceId]);
  figure(
    `${model}: ${ids.length} machines running after ${(allRunning / 1000).toFixed(1)} s; ` +
      `${first.length} live instances when they all ran, ${settled.length} live instances in the end`,
  );
}

describe('fault suite', () => {
  it('50 machines while the worker is SIGKILLed and restarted 10 times', async () => {
    const model = await createModel('kill');
    const started = Date.now();
    const ids = await addMachines(model, 50);
    // The first worker lives 0.5–2 s (it dies with every machine mid-plan or mid-claim),
    // each restarted one 0.5–20 s after it polls again, so kills land mid-claim, mid-launch
    // and mid-record too (a killed worker's workflow tasks come back after their 1-minute
    // timeout, its launches after their 60 s heartbeat timeout).
    const before = await proxyStats();
    const atKill: string[] = [];
    let runningAtFirstKill = -1;
    for (let kill = 0; kill < 10; kill++) {
      await sleep(500 + Math.floor(Math.random() * (kill === 0 ? 1500 : 19_500)));
      const [running, launched] = await Promise.all([
        runningCount(model),
        liveInstancesOf(model).then((list) => list.length),
      ]);
      if (runningAtFirstKill < 0) runningAtFirstKill = running;
      atKill.push(`${launched}/${running}`);
      await stack.restart('worker', 'SIGKILL');
    }
    const during = statsDelta(before, await proxyStats());
    figure(
      `${model}: worker SIGKILLed and restarted 10 times in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `instances launched/machines running at each kill: ${atKill.join(', ')}; ` +
        `${during.calls.RunInstances ?? 0} RunInstances calls meanwhile`,
    );
    // the kills came while machines were still launching
    expect(runningAtFirstKill).toBeLessThan(ids.length);
    await expectExactlyOneInstanceEach(model, ids, started);
  });

  it('20 machines while EC2 answers 503 Unavailable for 30 s', async () => {
    const model = await createModel('unavail');
    const started = Date.now();
    const ids = await addMachines(model, 20);
    await sleep(1000);
    const before = await proxyStats();
    await admin('PUT', '/_admin/faults', { unavailable: true });
    const runningAtFault = await runningCount(model);
    await sleep(30_000);
    await admin('DELETE', '/_admin/faults');
    const during = statsDelta(before, await proxyStats());
    figure(
      `${model}: EC2 unavailable for 30 s from ${runningAtFault} of ${ids.length} running; ` +
        `${during.injected.Unavailable ?? 0} calls answered 503 (${JSON.stringify(during.calls)}); ` +
        `${await runningCount(model)} running when it came back`,
    );
    // the outage met the burst: machines still launching, and the worker's EC2 calls refused
    expect(runningAtFault).toBeLessThan(ids.length);
    expect(during.injected.Unavailable ?? 0).toBeGreaterThan(0);
    await expectExactlyOneInstanceEach(model, ids, started);
  });

  it('RunInstances answers lost after the launch', async () => {
    const model = await createModel('lost');
    const before = await proxyStats();
    await admin('PUT', '/_admin/faults', { loseResponses: { runInstances: 3 } });
    try {
      const started = Date.now();
      const ids = await addMachines(model, 10);
      await expectExactlyOneInstanceEach(model, ids, started);
      const delta = statsDelta(before, await proxyStats());
      figure(
        `${model}: ${delta.injected.LostResponse ?? 0} RunInstances answers lost after the launch, ` +
          `${delta.calls.RunInstances ?? 0} RunInstances calls in all`,
      );
      // every lost answer was a launch carried out: three, then the calls were answered
      expect(delta.injected.LostResponse).toBe(3);
      expect(delta.calls.RunInstances).toBeGreaterThan(3);
    } finally {
      await admin('DELETE', '/_admin/faults');
    }
  });

  it('20 machines while the Temporal server restarts (same database)', async () => {
    const model = await createModel('temporal');
    const started = Date.now();
    const ids = await addMachines(model, 20);
    // a second after the answer: the launch batch alone waits 1 s after its latest member
    await sleep(1000);
    const runningAtKill = await runningCount(model);
    const killedAt = Date.now();
    await stack.restart('temporal', 'SIGKILL');
    figure(
      `${model}: Temporal SIGKILLed ${((killedAt - started) / 1000).toFixed(1)} s after the request ` +
        `with ${runningAtKill} of ${ids.length} running, answering again ${((Date.now() - killedAt) / 1000).toFixed(1)} s later`,
    );
    expect(runningAtKill).toBeLessThan(ids.length);
    await expectExactlyOneInstanceEach(model, ids, started);
  });

  it('teardown of 40 machines while the worker is SIGKILLed and restarted mid-teardown', async () => {
    const { model, instanceIds } = await runningModel('tdkill', 40);
    const before = await proxyStats();
    const requested = Date.now();
    expect((await api.call('DELETE', `/v1/models/${model}`)).status).toBe(202);
    // Three kills: the first 1-3 s after the request (every machine Dead and mid-search:
    // the search window alone holds a batch 0.5-3 s); the second as soon as EC2 shows
    // instances shutting down (terminated, not yet polled or removed); the third 2-10 s on.
    const atKill: string[] = [];
    let machinesAtFirstKill = -1;
    const kill = async () => {
      let exists = await modelExists(model);
      let left = 0;
      if (exists) {
        // the model may be removed between the two reads: that is the teardown finishing
        const res = await api.get<{ machines: Record<string, MachineView> }>(
          `/v1/models/${model}/status`,
        );
        if (res.status === 404) exists = false;
        else if (res.status !== 200) throw new Error(`status of ${model}: ${res.status}`);
        else left = Object.keys(res.body.machines).length;
      }
      const live = (await liveInstancesOf(model)).length;
      if (machinesAtFirstKill < 0) machinesAtFirstKill = left;
      atKill.push(`${live}/${left}`);
      if (exists) await stack.restart('worker', 'SIGKILL');
      return exists;
    };
    await sleep(1000 + Math.random() * 2000);
    if (await kill()) {
      await eventually(
        async () => (await modelExists(model)) && (await liveInstancesOf(model)).length,
        (live) => live === false || live < instanceIds.length,
        SETTLE_MS,
        250,
      );
      if (await kill()) {
        await sleep(2000 + Math.random() * 8000);
        await kill();
      }
    }
    const goneAfter = await expectTornDown(model, instanceIds, requested);
    const delta = statsDelta(before, await proxyStats());
    figure(
      `${model}: 40 machines torn down with the worker SIGKILLed up to 3 times ` +
        `(live instances/machines left at each: ${atKill.join(', ')}); model gone after ` +
        `${(goneAfter / 1000).toFixed(1)} s, EC2 calls ${JSON.stringify(delta.calls)}`,
    );
    // the first kill met the teardown under way
    expect(machinesAtFirstKill).toBeGreaterThan(0);
    // nothing was launched for the model while it went away
    expect(delta.calls.RunInstances ?? 0).toBe(0);
  });

  it('teardown of 20 machines while EC2 answers 503 Unavailable for 30 s', async () => {
    const { model, instanceIds } = await runningModel('tdunavail', 20);
    const before = await proxyStats();
    const requested = Date.now();
    expect((await api.call('DELETE', `/v1/models/${model}`)).status).toBe(202);
    await sleep(500);
    await admin('PUT', '/_admin/faults', { unavailable: true });
    let machinesAtFault = -1;
    try {
      machinesAtFault = (await machinesOf(model)).length;
      await sleep(30_000);
    } finally {
      await admin('DELETE', '/_admin/faults');
    }
    const during = statsDelta(before, await proxyStats());
    const liveWhenBack = (await liveInstancesOf(model)).length;
    const goneAfter = await expectTornDown(model, instanceIds, requested);
    figure(
      `${model}: EC2 unavailable for 30 s from 0.5 s after the destroy (${machinesAtFault} of 20 ` +
        `machines left); ${during.injected.Unavailable ?? 0} calls answered 503 ` +
        `(${JSON.stringify(during.calls)}); ${liveWhenBack} live instances when it came back; ` +
        `model gone after ${(goneAfter / 1000).toFixed(1)} s`,
    );
    // the outage met the teardown: machines left, and their EC2 calls refused
    expect(machinesAtFault).toBeGreaterThan(0);
    expect(during.injected.Unavailable ?? 0).toBeGreaterThan(0);
  });

  it('every machine workflow history replays against the current code', async () => {
    // In process: these histories come over gRPC as protobuf objects, so the SDK's JSON
    // decoder (which fails here on two protobufjs copies, test/support/replay-histories.ts)
    // is never used.
    const connection = await Connection.connect({ address: stack.info.temporalAddress });
    try {
      const client = new Client({ connection, namespace: stack.info.temporalNamespace });
      const query = models.map((m) => `ProvisionerModel = "${m}"`).join(' OR ');
      // per scenario, the work a fault made Temporal hand out again: workflow tasks that timed
      // out or failed, and activity attempts after the first (the attempt a completed one took)
      const redone = new Map<string, { workflowTasks: number; activityRetries: number }>();
      const histories = (async function* () {
        for await (const h of client.workflow
          .list({ query: query || 'ProvisionerModel = "none"' })
          .intoHistories()) {
          const model = models.find((m) => h.workflowId.startsWith(`machine:${m}:`)) ?? '?';
          const counts = redone.get(model) ?? { workflowTasks: 0, activityRetries: 0 };
          const { events } = (h.history ?? {}) as temporal.api.history.v1.IHistory;
          for (const e of events ?? []) {
            if (e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes) {
              counts.workflowTasks += 1;
            }
            const attempt = e.activityTaskStartedEventAttributes?.attempt ?? 1;
            if (attempt > 1) counts.activityRetries += attempt - 1;
          }
          redone.set(model, counts);
          yield h;
        }
      })();
      let replayed = 0;
      const failures: string[] = [];
      for await (const result of Worker.runReplayHistories(
        {
          workflowsPath: require.resolve('../../workflows'),
          bundlerOptions: workflowBundlerOptions(),
        },
        histories,
      )) {
        replayed += 1;
        if (result.error) failures.push(`${result.workflowId}: ${String(result.error)}`);
      }
      figure(`${replayed} workflow histories replayed, ${failures.length} failed`);
      figure(
        `handed out again (workflow tasks timed out or failed / activity retries): ${[...redone]
          .map(([model, c]) => `${model} ${c.workflowTasks}/${c.activityRetries}`)
          .join(', ')}`,
      );
      expect(failures).toEqual([]);
      expect(replayed).toBeGreaterThanOrEqual(100);
    } finally {
      await connection.close();
    }
  });
});
