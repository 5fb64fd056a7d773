import { IdempotencyStore } from '../../state/idempotency';
import { Repository } from '../../state/repository';
import { newMachine } from '../../service/records';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);

afterAll(() => ddb.destroy());

interface StatusMachine {
  status: string;
  instanceId?: string;
  units: string[];
}

async function machinesOf(model: string): Promise<Record<string, StatusMachine>> {
  const res = await api.get<{ machines: Record<string, StatusMachine> }>(
    `/v1/models/${model}/status`,
  );
  expect(res.status).toBe(200);
  return res.body.machines;
}

async function allRunning(model: string, count: number, timeoutMs = 240_000) {
  return eventually(
    () => machinesOf(model),
    (ms) =>
      Object.values(ms).length === count && Object.values(ms).every((m) => m.status === 'running'),
    timeoutMs,
    1_000,
  );
}

/** POST with an Idempotency-Key, sending exactly `text` as the body. */
function postWithKey(path: string, key: string, body: unknown) {
  return api.call('POST', path, undefined, JSON.stringify(body), { 'idempotency-key': key });
}

describe('bulk requests', () => {
  it('records 40 machines in one request, answers every id, and provisions each (bulk starter)', async () => {
    const model = uniqueName('bulk');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    const res = await api.post<{ machines: { id: string }[] }>(`/v1/models/${model}/machines`, {
      count: 40,
    });
    expect(res.status).toBe(201);
    expect(res.body.machines.map((m) => m.id)).toEqual(
      Array.from({ length: 40 }, (_, i) => String(i)),
    );
    const machines = await allRunning(model, 40);
    const instances = new Set(Object.values(machines).map((m) => m.instanceId));
    expect(instances.size).toBe(40);
  }, 300_000);

  it('writes 50 units with their machines and subordinates together, in unit order', async () => {
    const model = uniqueName('bulku');
    await api.post('/v1/models', { name: model });
    expect(
      (
        await api.post(`/v1/models/${model}/applications`, {
          name: 'tel',
          base: 'ubuntu@22.04',
          subordinate: true,
        })
      ).status,
    ).toBe(201);
    await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      numUnits: 0,
    });
    expect(
      (await api.post(`/v1/models/${model}/relations`, { endpoints: ['web', 'tel'] })).status,
    ).toBe(201);
    // one placed unit first (a new machine by zone), then 49 on new machines of their own
    const added = await api.post<{ units: { name: string; machine: string }[] }>(
      `/v1/models/${model}/applications/web/units`,
      { count: 50, to: ['zone=us-east-1a'] },
    );
    expect(added.status).toBe(201);
    expect(added.body.units.map((u) => u.name)).toEqual(
      Array.from({ length: 50 }, (_, i) => `web/${i}`),
    );
    expect(new Set(added.body.units.map((u) => u.machine)).size).toBe(50);
    const status = await api.get(`/v1/models/${model}/status`);
    const units = status.body.applications.web.units as Record<
      string,
      { machine: string; subordinates: string[] }
    >;
    expect(Object.keys(units)).toHaveLength(50);
    for (const u of added.body.units) {
      expect(units[u.name]?.machine).toBe(u.machine);
      expect(units[u.name]?.subordinates).toHaveLength(1);
      expect(status.body.machines[u.machine].units).toEqual(expect.arrayContaining([u.name]));
    }
    expect(Object.keys(status.body.applications.tel.units)).toHaveLength(50);
    await allRunning(model, 50);
  }, 300_000);

  it('provisions machines a cut-off request recorded but never started (the sweep starts them)', async () => {
    const model = uniqueName('cutoff');
    await api.post('/v1/models', { name: model });
    const ids = await repo.allocateMachineIds(model, 3);
    const now = new Date().toISOString();
    await repo.putNewMachines(
      ids.map((id) => newMachine({ model, id, base: 'ubuntu@24.04', constraints: '', now })),
    );
    const machines = await allRunning(model, 3, 120_000);
    expect(Object.keys(machines).sort()).toEqual(['0', '1', '2']);
  }, 180_000);
});

describe('Idempotency-Key', () => {
  it('answers a retried request with the first answer and creates nothing new', async () => {
    const model = uniqueName('idem');
    await api.post('/v1/models', { name: model });
    const path = `/v1/models/${model}/machines`;
    const first = await postWithKey(path, 'retry-1', { count: 3 });
    expect(first).toEqual({
      status: 201,
      body: { machines: [{ id: '0' }, { id: '1' }, { id: '2' }] },
    });
    const again = await postWithKey(path, 'retry-1', { count: 3 });
    expect(again).toEqual(first);
    expect(Object.keys(await machinesOf(model)).sort()).toEqual(['0', '1', '2']);
    // the same key with another body
    const other = await postWithKey(path, 'retry-1', { count: 4 });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency-key-reused');
    // a new key is a new request
    const fresh = await postWithKey(path, 'retry-2', { count: 1 });
    expect(fresh).toEqual({ status: 201, body: { machines: [{ id: '3' }] } });
  });

  it('replays a 4xx answer too, and refuses a malformed key', async () => {
    const model = uniqueName('idem4');
    await api.post('/v1/models', { name: model });
    const path = `/v1/models/${model}/machines`;
    const bad = await postWithKey(path, 'bad-1', { constraints: 'mem=1G mem=2G' });
    expect(bad.status).toBe(400);
    expect(await postWithKey(path, 'bad-1', { constraints: 'mem=1G mem=2G' })).toEqual(bad);
    const tooLong = await postWithKey(path, 'x'.repeat(256), {});
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toEqual({
      code: 'bad-request',
      message: 'header "Idempotency-Key" must be 1 to 255 visible ASCII characters',
    });
    const spaced = await postWithKey(path, 'has space', {});
    expect(spaced.status).toBe(400);
  });

  it('answers 409 while the first request with the key is still running', async () => {
    const model = uniqueName('idem409');
    await api.post('/v1/models', { name: model });
    const path = `/v1/models/${model}/machines`;
    const body = { count: 2 };
    const store = new IdempotencyStore(ddb, stack.tableName);
    const claim = await store.claim(
      'running-1',
      IdempotencyStore.fingerprint('POST', path, JSON.stringify(body)),
    );
    expect(claim.kind).toBe('run');
    const res = await postWithKey(path, 'running-1', body);
    expect(res.status).toBe(409);
    expect(res.body.error).toEqual({
      code: 'conflict',
      message: 'a request with this Idempotency-Key is still running',
    });
    expect(Object.keys(await machinesOf(model))).toEqual([]);
  });

  it('completes a cut-off request with the ids it reserved, never reserving new ones', async () => {
    const model = uniqueName('idemcut');
    await api.post('/v1/models', { name: model });
    const path = `/v1/models/${model}/machines`;
    const body = { count: 2 };
    // The first request reserved two ids, then was cut off (its lease ran out two minutes ago).
    const reserved = await repo.allocateMachineIds(model, 2);
    const past = new IdempotencyStore(ddb, stack.tableName, () => Date.now() - 120_000);
    const fp = IdempotencyStore.fingerprint('POST', path, JSON.stringify(body));
    expect((await past.claim('cut-1', fp)).kind).toBe('run');
    await past.remember('cut-1', 'machineIds', reserved);
    const res = await postWithKey(path, 'cut-1', body);
    expect(res).toEqual({ status: 201, body: { machines: reserved.map((id) => ({ id })) } });
    expect(Object.keys(await machinesOf(model)).sort()).toEqual([...reserved].sort());
    // the next request gets the next ids: nothing was reserved twice
    const next = await api.post(path, {});
    expect(next.body).toEqual({ machines: [{ id: '2' }] });
  });
});
