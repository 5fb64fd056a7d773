import type { Instance } from '@aws-sdk/client-ec2';
import { loadavg } from 'node:os';
import { TAG_LAUNCH_BATCH, TAG_MACHINE } from '../../ec2/tags';
import { EC2_REQUEST_LIMITS } from '../../bench/proxy-admin';
import { Repository } from '../../state/repository';
import { apiClient, eventually, uniqueName } from './api-client';
import { modelInstances } from './ec2-test-kit';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

/**
 * Issue 30: a 300-machine model destroyed under EC2's published request
 * limits (the bench's: RunInstances 5 then 2/s, TerminateInstances 100 then
 * 5/s, CreateTags 100 then 10/s, Describe* 100 then 20/s) goes away with
 * every instance terminated, in a few EC2 calls: the machines' teardowns
 * share one tag search of the model, TerminateInstances calls of up to
 * 1,000 ids and describes by id.
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
// moto itself: what exists, without the proxy (and without counting in its stats)
const moto = ec2ClientFor(stack, stack.motoEndpoint);
const MACHINES = 300;

interface Stats {
  calls: Record<string, number>;
  throttled: number;
  /** The same calls per caller (the worker's x-provisioner-caller header, ec2/caller.ts). */
  byCaller: Record<string, Record<string, number>>;
}

const sum = (counts: Record<string, number> | undefined): number =>
  Object.values(counts ?? {}).reduce((a, b) => a + b, 0);

/**
 * Every call but the sweeper's: the machines' teardowns and anything else
 * (review 1: an allow-list of `teardown:` callers let a call outside
 * `asCaller` leave the bound). Only the sweeper's listings, measured as the
 * test stack's 5 s noise, are left out; calls naming no caller are counted.
 */
function teardownCalls(stats: Stats): number {
  return sum(stats.calls) - sum(stats.byCaller.sweep);
}

/** The instances in `instances` that are not in `expected`, each as what tells where it came from. */
function extras(instances: Instance[], expected: Set<string>) {
  return instances
    .filter((i) => !expected.has(i.InstanceId!))
    .map((i) => ({
      id: i.InstanceId,
      state: i.State?.Name,
      launchTime: i.LaunchTime?.toISOString(),
      batch: i.Tags?.find((t) => t.Key === TAG_LAUNCH_BATCH)?.Value,
      machine: i.Tags?.find((t) => t.Key === TAG_MACHINE)?.Value,
    }));
}

/** Fails naming every instance of `model` beyond `expected` (review 2: where did they come from). */
async function expectOnly(model: string, expected: Set<string>, when: string): Promise<void> {
  const instances = await instancesOf(model);
  const more = extras(instances, expected);
  if (more.length > 0) {
    process.stderr.write(
      `[teardown-scale] ${when}: instances beyond the machines' ${JSON.stringify(more)}\n`,
    );
  }
  expect({ when, more }).toEqual({ when, more: [] });
}

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${stack.ec2Endpoint}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

function instancesOf(model: string): Promise<Instance[]> {
  return modelInstances(moto, model);
}

beforeAll(async () => {
  await admin('PUT', '/_admin/limits', EC2_REQUEST_LIMITS);
});

afterAll(async () => {
  await admin('DELETE', '/_admin/limits').catch(() => undefined);
  moto.destroy();
  ddb.destroy();
});

describe('destroying a 300-machine model under EC2’s limits', () => {
  it('terminates every instance and removes the model in under 0.1 EC2 calls per machine', async () => {
    const model = uniqueName('big');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    const other = uniqueName('keep');
    expect((await api.post('/v1/models', { name: other })).status).toBe(201);
    expect((await api.post(`/v1/models/${model}/machines`, { count: MACHINES })).status).toBe(201);
    // another model's machine, which must outlive the teardown
    expect((await api.post(`/v1/models/${other}/machines`, { count: 1 })).status).toBe(201);
    const launched = await eventually(
      () => repo.listMachines(model),
      (ms) => ms.length === MACHINES && ms.every((m) => m.instanceId),
      600_000,
      2_000,
    );
    const kept = await eventually(
      () => repo.listMachines(other),
      (ms) => ms.length === 1 && ms.every((m) => m.instanceId),
      300_000,
      2_000,
    );
    const ids = new Set(launched.map((m) => m.instanceId!));
    expect(ids.size).toBe(MACHINES);
    // the model holds its machines' instances and nothing more before the DELETE
    await expectOnly(model, ids, 'after launch');

    await admin('DELETE', '/_admin/stats');
    const started = Date.now();
    const res = await api.call('DELETE', `/v1/models/${model}`);
    expect(res.status).toBe(202);
    await eventually(
      () =>
        repo.getModel(model).then(
          () => false,
          (err: unknown) => (err as Error).name === 'EntityNotFoundError',
        ),
      (gone) => gone,
      600_000,
      1_000,
    );
    const goneAfter = (Date.now() - started) / 1000;
    const stats = await admin<Stats>('GET', '/_admin/stats');
    const instances = await instancesOf(model);
    // every instance the model had, and nothing more, is terminated
    expect(new Set(instances.map((i) => i.InstanceId))).toEqual(ids);
    expect(
      instances.filter((i) => i.State?.Name !== 'terminated').map((i) => i.InstanceId),
    ).toEqual([]);
    const [keptInstance] = await instancesOf(other);
    expect(keptInstance?.InstanceId).toBe(kept[0]!.instanceId);
    expect(keptInstance?.State?.Name).toBe('running');
    const total = sum(stats.calls);
    const own = teardownCalls(stats);
    process.stderr.write(
      `[teardown-scale] ${MACHINES} machines: model gone after ${goneAfter.toFixed(1)} s; ` +
        `EC2 calls ${total} (${(total / MACHINES).toFixed(3)} per machine; the teardowns' ` +
        `${own}, ${(own / MACHINES).toFixed(3)}) ${JSON.stringify(stats.calls)}, by caller ` +
        `${JSON.stringify(stats.byCaller)}, throttled ${stats.throttled}; load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}\n`,
    );
    expect(stats.calls.CreateTags ?? 0).toBe(0);
    expect(stats.calls.RunInstances ?? 0).toBe(0);
    expect(stats.throttled).toBe(0);
    // every call of the worker names its caller: nothing escapes the bound below unnamed
    expect(stats.byCaller.unnamed ?? {}).toEqual({});
    // Issue 30's bound (< 0.1 a machine) is on every call but the sweeper's. Measured by
    // caller at load 18-21: the teardowns' 22 (0.073) in a 131.7 s teardown. The test stack's
    // sweeper (every 5 s here, a minute by default) lists the deployment once per sweep to
    // watch the other model's machine, whatever the teardown does: 5-10 calls over the same
    // 130-140 s. The total, with that share, is bounded at 0.15: a relaxation of the issue's
    // wording for the test stack's sweep interval only (README, issue 30).
    expect(own / MACHINES).toBeLessThan(0.1);
    expect(total / MACHINES).toBeLessThan(0.15);
  }, 1_200_000);
});

/**
 * Issue 30's `remove-application` case at a smaller N (the bench's figure is
 * 500 of 1,000): 150 units of one application removed from a 300-machine
 * model. The removed units' machines go Dying, then Dead, and are torn down
 * together as a destroyed model's are; the other application's 150 machines
 * and instances are untouched, and the model stays.
 */
describe('removing an application of 150 units from a 300-machine model under EC2’s limits', () => {
  const UNITS = 150;

  it('terminates exactly its machines’ instances, in few EC2 calls per machine', async () => {
    const model = uniqueName('apps');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    for (const name of ['gone', 'stays']) {
      const res = await api.post(`/v1/models/${model}/applications`, {
        name,
        base: 'ubuntu@22.04',
        numUnits: UNITS,
      });
      expect(res.status).toBe(201);
    }
    const launched = await eventually(
      () => repo.listMachines(model),
      (ms) => ms.length === 2 * UNITS && ms.every((m) => m.instanceId),
      900_000,
      2_000,
    );
    const of = (app: string) => launched.filter((m) => m.applications.includes(app));
    const removed = new Set(of('gone').map((m) => m.instanceId!));
    const kept = new Set(of('stays').map((m) => m.instanceId!));
    expect([removed.size, kept.size]).toEqual([UNITS, UNITS]);
    // the model holds its machines' instances and nothing more before the DELETE (review 2:
    // a run once found 302 after the teardown and could not tell when the two came)
    await expectOnly(model, new Set([...removed, ...kept]), 'after launch');

    await admin('DELETE', '/_admin/stats');
    const started = Date.now();
    expect((await api.call('DELETE', `/v1/models/${model}/applications/gone`)).status).toBe(202);
    const left = await eventually(
      () => repo.listMachines(model),
      (ms) => ms.length === UNITS,
      600_000,
      1_000,
    );
    const goneAfter = (Date.now() - started) / 1000;
    const stats = await admin<Stats>('GET', '/_admin/stats');
    expect(new Set(left.map((m) => m.instanceId))).toEqual(kept);
    expect(left.every((m) => m.life === 'alive' && m.status === 'running')).toBe(true);
    const instances = await instancesOf(model);
    const state = new Map(instances.map((i) => [i.InstanceId!, i.State?.Name]));
    expect([...removed].filter((id) => state.get(id) !== 'terminated')).toEqual([]);
    expect([...kept].filter((id) => state.get(id) !== 'running')).toEqual([]);
    // nothing was launched for the model meanwhile: no RunInstances first, then no extra
    // instance (named with its state, launch time and batch), least of all a live one
    expect(stats.calls.RunInstances ?? 0).toBe(0);
    const more = extras(instances, new Set([...removed, ...kept]));
    expect(more.filter((i) => i.state === 'pending' || i.state === 'running')).toEqual([]);
    expect(more).toEqual([]);
    expect(instances).toHaveLength(2 * UNITS);
    expect((await api.get(`/v1/models/${model}`)).status).toBe(200);
    const total = sum(stats.calls);
    const own = teardownCalls(stats);
    process.stderr.write(
      `[teardown-scale] remove-application of ${UNITS} units in a ${2 * UNITS}-machine model: ` +
        `its machines gone after ${goneAfter.toFixed(1)} s; EC2 calls ${total} ` +
        `(${(total / UNITS).toFixed(3)} per removed machine; all but the sweeper's ${own}, ` +
        `${(own / UNITS).toFixed(3)}) ${JSON.stringify(stats.calls)}, ` +
        `by caller ${JSON.stringify(stats.byCaller)}, ` +
        `throttled ${stats.throttled}; load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}\n`,
    );
    expect(stats.calls.CreateTags ?? 0).toBe(0);
    expect(stats.throttled).toBe(0);
    expect(stats.byCaller.unnamed ?? {}).toEqual({});
    // as the destroy's: every call but the sweeper's under 0.1 a removed machine; the stack's
    // 5 s sweeper lists the deployment's instances meanwhile, and counts in the total
    expect(own / UNITS).toBeLessThan(0.1);
    expect(total / UNITS).toBeLessThan(0.2);
    expect((await api.call('DELETE', `/v1/models/${model}`)).status).toBe(202);
  }, 1_800_000);
});
