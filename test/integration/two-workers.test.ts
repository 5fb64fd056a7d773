import { DescribeInstancesCommand, EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InstanceOwners } from '../../activities/instance-owners';
import { TAG_MODEL } from '../../activities/tags';
import { auditInstances } from '../../bench/audit';
import { readStats, resetStats } from '../../bench/proxy-admin';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import type { ManagedProcess } from '../../local/processes';
import { newMachine } from '../../service/records';
import { TemporalMachineWorkflows } from '../../service/workflows';
import { Repository } from '../../state/repository';
import type { MachineRecord } from '../../state/types';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { apiClient, eventually, uniqueName } from './api-client';
import { startPrivateWorker } from './private-worker';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Two worker processes polling one task queue launch one request's
 * machines together (prod runs two workers): launch batches, zone-claim
 * coalescing and capacity memory are per process, so this checks that what
 * must be exact across them is: a machine claimed once and the zone counts
 * exact (spread ±1), no instance launched twice, nothing left unowned; and,
 * with a worker killed mid-launch, that the survivor's retries replay the
 * dead worker's batches by their client tokens instead of launching again.
 *
 * The workers, their queue and the EC2 proxy are this file's own (the proxy
 * in front of the stack's moto, so its call counts are ours alone). The
 * machines are written and their workflows started by the code the API runs
 * for a `count: N` request (service/records.ts, service/workflows.ts
 * startMany: one bulk starter workflow), on this file's queue.
 */

const stack = loadTestStack();
const api = apiClient(stack);
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const TASK_QUEUE = `provisioner-two-${randomUUID().slice(0, 8)}`;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-two-workers-'));

const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
const owners = InstanceOwners.ofTable(ddb, stack.tableName);
const moto = new EC2Client({
  region: stack.region,
  endpoint: stack.motoEndpoint,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  maxAttempts: 3,
});
let proxy: Ec2Proxy;
let connection: Connection;
let temporal: Client;
const workers: ManagedProcess[] = [];
let started = 0;

function startWorker(): Promise<ManagedProcess> {
  started += 1;
  return startPrivateWorker(stack, {
    name: `two-workers-${started}`,
    taskQueue: TASK_QUEUE,
    logFile: join(logDir, `worker-${started}.log`),
    ec2Endpoint: proxy.url,
    // the defaults of a deployed worker, not the helper's short test tuning
    env: { PROVISIONER_START_ATTEMPTS: '10', PROVISIONER_RETRY_DELAY: '2s' },
  });
}

beforeAll(async () => {
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  workers.push(...(await Promise.all([startWorker(), startWorker()])));
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await connection?.close();
  moto.destroy();
  ddb.destroy();
  await proxy?.close();
});

/** What a `count: n` request does, on this file's queue: the machines written, then one bulk start. */
async function request(n: number): Promise<{ model: string; ids: string[] }> {
  const model = uniqueName('two');
  expect((await api.post('/v1/models', { name: model })).status).toBe(201);
  const ids = await repo.allocateMachineIds(model, n);
  const now = new Date().toISOString();
  await repo.putNewMachines(
    ids.map((id) =>
      newMachine({ model, id, base: 'ubuntu@24.04', constraints: `zones=${ZONES.join(',')}`, now }),
    ),
  );
  const starter = new TemporalMachineWorkflows(() => Promise.resolve(temporal), TASK_QUEUE);
  await starter.startMany(model, ids);
  return { model, ids };
}

/** Every instance moto holds tagged for the model (any state), each with the machine its batch launched it for. */
async function instancesOf(model: string) {
  const all: Instance[] = [];
  let token: string | undefined;
  do {
    const out = await moto.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: `tag:${TAG_MODEL}`, Values: [model] }],
        MaxResults: 1000,
        NextToken: token,
      }),
    );
    all.push(...(out.Reservations ?? []).flatMap((r) => r.Instances ?? []));
    token = out.NextToken;
  } while (token);
  const machineOf = await owners.of(model, all);
  return all.map((i) => ({
    instanceId: i.InstanceId!,
    machine: machineOf.get(i.InstanceId!),
    state: i.State?.Name ?? 'unknown',
  }));
}

function allRunning(model: string, n: number, timeoutMs: number): Promise<MachineRecord[]> {
  return eventually(
    () => repo.listMachines(model),
    (ms) => {
      // a machine in error fails at once, saying why (a wait would hide it until the timeout)
      const failed = ms.find((m) => m.status === 'error');
      if (failed) throw new Error(`machine ${failed.id} is in error: ${failed.message}`);
      return ms.length === n && ms.every((m) => m.status === 'running' && m.instanceId);
    },
    timeoutMs,
    2_000,
  );
}

/** Zone → machines in it. */
function spread(machines: readonly MachineRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of machines) out[m.zone ?? 'none'] = (out[m.zone ?? 'none'] ?? 0) + 1;
  return out;
}

/** Workflow tasks each worker process took for the machines (by its identity, `<pid>@host`). */
async function tasksByWorker(model: string, ids: readonly string[]): Promise<Map<number, number>> {
  const byPid = new Map<number, number>();
  for (const id of ids) {
    const history = await temporal.workflow.getHandle(machineWorkflowId(model, id)).fetchHistory();
    for (const e of history.events ?? []) {
      const identity = e.workflowTaskStartedEventAttributes?.identity;
      if (!identity) continue;
      const pid = Number(identity.split('@')[0]);
      byPid.set(pid, (byPid.get(pid) ?? 0) + 1);
    }
  }
  return byPid;
}

describe('two workers on one task queue', () => {
  it(
    'launch a 300-machine request together: spread ±1 per zone, each machine one instance, no stray',
    async () => {
      await resetStats(proxy.url);
      const { model, ids } = await request(300);
      const machines = await allRunning(model, 300, 12 * 60_000);

      // spread: the zone counters are exact across both workers' claims
      const zones = spread(machines);
      expect(Object.keys(zones).sort()).toEqual(ZONES);
      const counts = Object.values(zones);
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
      expect(counts.reduce((a, b) => a + b, 0)).toBe(300);

      // every machine its own instance, every live instance of the model a machine's
      expect(new Set(machines.map((m) => m.instanceId)).size).toBe(300);
      const instances = await instancesOf(model);
      expect(auditInstances(machines, instances)).toEqual({
        launched: 300,
        inError: 0,
        duplicates: 0,
        strays: 0,
      });
      expect(instances.filter((i) => i.state !== 'terminated')).toHaveLength(300);

      // both workers did the work (each took workflow tasks of these machines)
      const byPid = await tasksByWorker(model, ids);
      for (const w of workers) expect(byPid.get(w.child.pid!) ?? 0).toBeGreaterThan(0);
      const stats = await readStats(proxy.url);
      process.stderr.write(
        `[two workers] 300 machines: zones ${JSON.stringify(zones)}, RunInstances ${stats.calls.RunInstances ?? 0}, workflow tasks by pid ${JSON.stringify([...byPid])}\n`,
      );
      // batches from both workers: far fewer calls than machines
      expect(stats.calls.RunInstances ?? 0).toBeLessThan(150);
    },
    15 * 60_000,
  );

  it(
    'a worker killed mid-launch: the other finishes its machines, replaying its batches, and nothing is launched twice',
    async () => {
      const n = 120;
      const { model } = await request(n);
      // kill one worker once launches are under way (some machines have an instance, not all)
      await eventually(
        () => repo.listMachines(model),
        (ms) => ms.filter((m) => m.instanceId).length >= 10,
        5 * 60_000,
        500,
      );
      const victim = workers.shift()!;
      await victim.kill('SIGKILL');
      const machines = await allRunning(model, n, 12 * 60_000);
      const instances = await instancesOf(model);
      expect(auditInstances(machines, instances)).toEqual({
        launched: n,
        inError: 0,
        duplicates: 0,
        strays: 0,
      });
      // no machine's launch left a second instance anywhere, live or not
      const perMachine = new Map<string, number>();
      for (const i of instances) {
        if (i.machine) perMachine.set(i.machine, (perMachine.get(i.machine) ?? 0) + 1);
      }
      expect([...perMachine.values()].filter((c) => c > 1)).toEqual([]);
      const zones = Object.values(spread(machines));
      expect(Math.max(...zones) - Math.min(...zones)).toBeLessThanOrEqual(1);
      // a worker again, for afterAll's sake and the next file's
      workers.push(await startWorker());
    },
    15 * 60_000,
  );
});
