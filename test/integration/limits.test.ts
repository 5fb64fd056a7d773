import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROUTES } from '../../functions/routes';
import { deploy, relate } from '../../service/applications';
import type { ServiceContext } from '../../service/context';
import { EntityNotFoundError, TransactionTooLargeError } from '../../state/errors';
import { Repository, type Transaction } from '../../state/repository';
import { apiClient, uniqueName } from './api-client';
import { seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);
const client = dynamoClientFor(stack);

afterAll(() => client.destroy());

async function newModel(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  const res = await api.post('/v1/models', { name });
  expect(res.status).toBe(201);
  return name;
}

const badRequest = (message: string) => ({
  status: 400,
  body: { error: { code: 'bad-request', message } },
});

describe('input sizes', () => {
  const charm = 'c'.repeat(500 * 1024);
  const constraints = `tags=${'t'.repeat(450 * 1024)}`;

  it('refuses a 500 KB charm with 400 naming the field and limit, and records nothing', async () => {
    const model = await newModel('big-charm');
    const res = await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@22.04',
      charm,
      numUnits: 0,
    });
    expect(res).toEqual(badRequest('field "charm": must be at most 1024 characters'));
    expect((await api.get(`/v1/models/${model}/applications/app`)).status).toBe(404);
  });

  it('refuses 450 KB of constraints on every route that takes them with 400', async () => {
    const model = await newModel('big-cons');
    const message = 'field "constraints": must be at most 4096 characters';
    expect(await api.post('/v1/models', { name: uniqueName('bc'), constraints })).toEqual(
      badRequest(message),
    );
    expect(await api.put(`/v1/models/${model}/constraints`, { constraints })).toEqual(
      badRequest(message),
    );
    expect(
      await api.post(`/v1/models/${model}/applications`, {
        name: 'app',
        base: 'ubuntu@22.04',
        constraints,
        numUnits: 0,
      }),
    ).toEqual(badRequest(message));
    expect(await api.post(`/v1/models/${model}/machines`, { constraints })).toEqual(
      badRequest(message),
    );
    expect((await api.get(`/v1/models/${model}/constraints`)).body).toEqual({ constraints: '' });
  });

  it('refuses a body over 512 KiB with 400 naming the limit', async () => {
    const model = await newModel('big-body');
    const res = await api.call(
      'POST',
      `/v1/models/${model}/applications`,
      undefined,
      JSON.stringify({ name: 'app', base: 'ubuntu@22.04', charm: 'x'.repeat(600 * 1024) }),
    );
    expect(res).toEqual(badRequest('request body must be at most 524288 bytes'));
  });

  it('refuses a 1,001-entry to list and an over-long placement', async () => {
    const model = await newModel('big-to');
    expect(
      await api.post(`/v1/models/${model}/applications`, {
        name: 'app',
        base: 'ubuntu@22.04',
        to: Array.from({ length: 1001 }, () => 'lxd'),
      }),
    ).toEqual(badRequest('field "to": must have at most 1000 items'));
    expect(
      await api.post(`/v1/models/${model}/machines`, { placement: `zone=${'z'.repeat(300)}` }),
    ).toEqual(badRequest('field "placement": must be at most 256 characters'));
  });
});

/** A repository whose transactions fail while they write a unit and `failUnitWrites` is set. */
class UnitWritesFail extends Repository {
  failUnitWrites = true;
  override async commit(tx: Transaction): Promise<void> {
    const writesUnit = tx.items.some((i) => i.Put?.Item?.type === 'unit');
    if (this.failUnitWrites && writesUnit) throw new Error('injected: unit write failed');
    return super.commit(tx);
  }
}

describe('deploy is all or nothing', () => {
  const repo = new UnitWritesFail(client, stack.tableName);
  const started: string[] = [];
  const ctx: ServiceContext = {
    repo,
    workflows: {
      start: () => Promise.resolve(),
      startMany: (_model, ids) => {
        started.push(...ids);
        return Promise.resolve();
      },
      signal: () => Promise.resolve(),
      ensureSweep: () => Promise.resolve(),
    },
    defaultRegion: stack.region,
    now: () => new Date(),
    log: { warn: () => undefined, info: () => undefined, error: () => undefined },
  };

  function model(): Promise<string> {
    return seedModel(repo, 'aon');
  }

  it.each([
    ['a few units (one transaction)', 3, [] as string[]],
    ['more units than one transaction holds', 60, []],
    ['units with placement directives', 2, ['lxd', 'zone=us-east-1a']],
  ])(
    'leaves no application behind when the unit write fails: %s; the retry then succeeds',
    async (_what, numUnits, to) => {
      const name = await model();
      repo.failUnitWrites = true;
      await expect(
        deploy(ctx, name, { name: 'app', base: 'ubuntu@22.04', numUnits, to }),
      ).rejects.toThrow('injected: unit write failed');
      await expect(repo.getApplication(name, 'app')).rejects.toBeInstanceOf(EntityNotFoundError);
      expect(await repo.listUnits(name, 'app')).toEqual([]);
      expect((await repo.listMachines(name)).filter((m) => m.life === 'alive')).toEqual([]);

      repo.failUnitWrites = false;
      const done = await deploy(ctx, name, { name: 'app', base: 'ubuntu@22.04', numUnits, to });
      expect(done.units).toHaveLength(numUnits);
      expect((await repo.listUnits(name, 'app')).length).toBe(numUnits);
      expect(done.units.map((u) => u.name)).toEqual(
        Array.from({ length: numUnits }, (_, i) => `app/${i}`),
      );
    },
  );
});

/** A repository whose subordinate-unit writes fail after `allow` of them succeeded, while `failing`. */
class FanOutFails extends Repository {
  failing = true;
  allow = 1;
  override async commit(tx: Transaction): Promise<void> {
    const writesSubordinate = tx.items.some(
      (i) => i.Put?.Item?.type === 'unit' && i.Put.Item.principal !== undefined,
    );
    if (this.failing && writesSubordinate && this.allow-- <= 0)
      throw new Error('injected: fan-out write failed');
    return super.commit(tx);
  }
}

describe('relate fan-out', () => {
  it('is written in bounded sequential transactions; a cut-off one is completed by relating again, then 409', async () => {
    const repo = new FanOutFails(client, stack.tableName);
    const ctx: ServiceContext = {
      repo,
      workflows: {
        start: () => Promise.resolve(),
        startMany: () => Promise.resolve(),
        signal: () => Promise.resolve(),
        ensureSweep: () => Promise.resolve(),
      },
      defaultRegion: stack.region,
      now: () => new Date(),
      log: { warn: () => undefined, info: () => undefined, error: () => undefined },
    };
    const model = await seedModel(repo, 'fan');
    const base = 'ubuntu@22.04';
    await deploy(ctx, model, { name: 'p', base, numUnits: 100 });
    await deploy(ctx, model, { name: 'tel', base, subordinate: true });

    await expect(relate(ctx, model, ['p', 'tel'])).rejects.toThrow(
      'injected: fan-out write failed',
    );
    const half = await repo.listUnits(model, 'tel');
    expect(half.length).toBe(40); // the first transaction of 40 went through, the second did not

    repo.failing = false;
    expect(await relate(ctx, model, ['tel', 'p'])).toEqual({ endpoints: ['p', 'tel'] });
    const principals = await repo.listUnits(model, 'p');
    expect(principals).toHaveLength(100);
    for (const u of principals)
      expect(u.subordinates.filter((s) => s.startsWith('tel/'))).toHaveLength(1);
    const subs = await repo.listUnits(model, 'tel');
    expect(subs).toHaveLength(100);
    expect(new Set(subs.map((s) => s.principal)).size).toBe(100);

    await expect(relate(ctx, model, ['p', 'tel'])).rejects.toThrow(
      'relation "p tel" already exists',
    );
  });
});

describe('transactions over 100 items', () => {
  it('are refused whole as a conflict saying why, never sent', async () => {
    const repo = new Repository(client, stack.tableName);
    const tx = repo.transaction();
    for (let i = 0; i < 101; i++) tx.delete({ pk: `nothing#${i}`, sk: 'x' });
    const err = await repo.commit(tx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionTooLargeError);
    expect(err).toMatchObject({
      code: 'conflict',
      message: "this change needs 101 writes in one transaction, more than DynamoDB's 100",
    });
  });

  it('a principal takes 47 subordinate applications, and its units are still written; the 48th relation is a 409 saying why', async () => {
    const model = await newModel('subs');
    const base = 'ubuntu@22.04';
    expect(
      (await api.post(`/v1/models/${model}/applications`, { name: 'p', base, numUnits: 1 })).status,
    ).toBe(201);
    for (let i = 0; i < 48; i++) {
      const res = await api.post(`/v1/models/${model}/applications`, {
        name: `s${i}`,
        base,
        subordinate: true,
      });
      expect(res.status).toBe(201);
    }
    for (let i = 0; i < 47; i++) {
      const res = await api.post(`/v1/models/${model}/relations`, { endpoints: ['p', `s${i}`] });
      expect(res.status).toBe(201);
    }
    const refused = await api.post(`/v1/models/${model}/relations`, { endpoints: ['p', 's47'] });
    expect(refused).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message:
            'application "p" already has 47 subordinate applications related, the most one principal may have (each of its units is written with all of its subordinate units in one transaction)',
        },
      },
    });
    // the largest unit write there is: a container on a new host, with 47 subordinate units
    const added = await api.post(`/v1/models/${model}/applications/p/units`, { to: ['lxd'] });
    expect(added.status).toBe(201);
    const status = (await api.get(`/v1/models/${model}/status`)).body;
    expect(status.applications.p.units['p/1'].subordinates).toHaveLength(47);
    expect(status.applications.p.units['p/0'].subordinates).toHaveLength(47);
    expect(Object.keys(status.applications.s47.units)).toEqual([]);
    await api.delete(`/v1/models/${model}`);
  });

  it('a subordinate related to 120 principals is removed with all its relations', async () => {
    const model = await newModel('rel120');
    const base = 'ubuntu@22.04';
    await api.post(`/v1/models/${model}/applications`, { name: 'tel', base, subordinate: true });
    for (let i = 0; i < 120; i++) {
      const app = `p${i}`;
      expect(
        (await api.post(`/v1/models/${model}/applications`, { name: app, base, numUnits: 0 }))
          .status,
      ).toBe(201);
      expect(
        (await api.post(`/v1/models/${model}/relations`, { endpoints: [app, 'tel'] })).status,
      ).toBe(201);
    }
    expect((await api.delete(`/v1/models/${model}/applications/tel`)).status).toBe(202);
    expect((await api.get(`/v1/models/${model}/applications/tel`)).status).toBe(404);
    // its relations went too: the name can be deployed and related afresh
    await api.post(`/v1/models/${model}/applications`, { name: 'tel', base, subordinate: true });
    expect(
      (await api.post(`/v1/models/${model}/relations`, { endpoints: ['p0', 'tel'] })).status,
    ).toBe(201);
  });
});

describe('authentication', () => {
  const sample: Record<string, string> = { model: 'm', app: 'a', id: '0', n: '0' };
  const wrong = `wrong-${randomUUID()}`;
  // every route but GET /v1/auth, which tells anyone how to log in (API.md)
  const routes = ROUTES.filter((r) => r.access.kind !== 'none').map((r) => ({
    method: r.method,
    path: r.path.replace(/\{(\w+)\}/g, (_m, p: string) => sample[p] ?? 'x'),
  }));

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s answers 401 without a token and with a wrong one',
    async (_key, route) => {
      for (const authorization of [undefined, `Bearer ${wrong}`, wrong, `Basic ${stack.token}`]) {
        const res = await fetch(`${stack.apiUrl}${route.path}`, {
          method: route.method,
          headers: {
            'content-type': 'application/json',
            ...(authorization ? { authorization } : {}),
          },
          ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { body: '{}' }),
        });
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({
          error: { code: 'unauthorized', message: 'missing or invalid bearer token' },
        });
      }
    },
  );

  it('never writes the token, right or wrong, to a log line', async () => {
    // some traffic that logs: errors, refusals, a request that works
    await api.get('/v1/models');
    await api.post('/v1/models', { name: 'BAD NAME' });
    await fetch(`${stack.apiUrl}/v1/models`, { headers: { authorization: `Bearer ${wrong}` } });
    const file = process.env.PROVISIONER_TEST_STACK_FILE!;
    const logs = join(dirname(file), 'data', 'logs');
    for (const name of ['api.log', 'worker.log']) {
      const text = readFileSync(join(logs, name), 'utf8');
      expect(text.length).toBeGreaterThan(0);
      expect(text.includes(stack.token)).toBe(false);
      expect(text.includes(wrong)).toBe(false);
    }
  });
});
