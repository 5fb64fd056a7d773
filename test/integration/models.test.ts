import { apiClient, eventually, uniqueName } from './api-client';
import { loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);

/**
 * Every model a paged list answers, following its cursor (a summary is paged by
 * default: the shared stack holds more models than one page), and each page.
 */
async function allPages(query: string) {
  const models: Array<Record<string, unknown> & { name: string }> = [];
  const pages: Array<{ status: number; names: string[]; cursor?: string }> = [];
  let cursor: string | undefined;
  do {
    const res = await api.get(
      `/v1/models?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    const names = ((res.body?.models ?? []) as Array<{ name: string }>).map((m) => m.name);
    pages.push({
      status: res.status,
      names,
      ...(res.body?.cursor ? { cursor: res.body.cursor } : {}),
    });
    if (res.status !== 200) break;
    models.push(...(res.body.models as typeof models));
    cursor = res.body.cursor as string | undefined;
  } while (cursor);
  return { models, pages };
}

async function patch(model: string, body: unknown) {
  return api.call('PATCH', `/v1/models/${model}`, body);
}

describe('model settings', () => {
  it('takes availabilitySets and reprovisionLost at creation', async () => {
    const name = uniqueName('settings');
    const created = await api.post('/v1/models', {
      name,
      availabilitySets: true,
      reprovisionLost: true,
      harvestMode: 'none',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name,
      harvestMode: 'none',
      availabilitySets: true,
      reprovisionLost: true,
    });
    expect((await api.get(`/v1/models/${name}`)).body).toEqual(created.body);
  });

  it('refuses a region EC2 does not offer, and a region of the wrong shape', async () => {
    const missing = await api.post('/v1/models', { name: uniqueName('r'), region: 'us-east-9' });
    expect(missing).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'region "us-east-9" not found' } },
    });
    const shape = await api.post('/v1/models', { name: uniqueName('r'), region: 'mars' });
    expect(shape.status).toBe(400);
    expect(shape.body.error.message).toBe('invalid region "mars"');
    const other = await api.post('/v1/models', { name: uniqueName('r'), region: 'eu-west-1' });
    expect(other.status).toBe(201);
    expect(other.body.region).toBe('eu-west-1');
  });

  it('PATCH changes harvest mode and reprovision-lost, never availability sets', async () => {
    const name = uniqueName('patch');
    await api.post('/v1/models', { name });
    const changed = await patch(name, { harvestMode: 'all', reprovisionLost: true });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      name,
      harvestMode: 'all',
      reprovisionLost: true,
      availabilitySets: false,
    });
    expect((await api.get(`/v1/models/${name}`)).body).toEqual(changed.body);
    // the same value is no change and is accepted
    expect((await patch(name, { availabilitySets: false })).status).toBe(200);
    const refused = await patch(name, { availabilitySets: true, harvestMode: 'none' });
    expect(refused).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'availability-sets-enabled cannot be changed after the model is created',
        },
      },
    });
    // nothing of the refused request was written
    expect((await api.get(`/v1/models/${name}`)).body.harvestMode).toBe('all');
    const unknown = await patch(name, { region: 'eu-west-1' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toEqual({ code: 'bad-request', message: 'unknown field "region"' });
    const badMode = await patch(name, { harvestMode: 'sometimes' });
    expect(badMode.status).toBe(400);
    expect(badMode.body.error.code).toBe('bad-request');
    const missing = await patch(uniqueName('nope'), { harvestMode: 'none' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not-found');
  });
});

describe('models list with summaries (issue 29: one request for the CLI’s models table)', () => {
  it('?summary=true adds machine and unit counts, last change and access; without it, the plain list', async () => {
    const name = uniqueName('summary');
    expect((await api.post('/v1/models', { name })).status).toBe(201);
    const deployed = await api.post(`/v1/models/${name}/applications`, {
      name: 'wordpress',
      base: 'ubuntu@22.04',
      numUnits: 2,
    });
    expect(deployed.status).toBe(201);
    expect((await api.post(`/v1/models/${name}/machines`, { count: 1 })).status).toBe(201);
    // the latest of the model's creation and its machines' changes, as status shows them
    // (the worker may change a machine meanwhile: read before and after the list)
    const lastOf = async () => {
      const status = await api.get(`/v1/models/${name}/status`);
      const created = (await api.get(`/v1/models/${name}`)).body.createdAt as string;
      return Math.max(
        Date.parse(created),
        ...Object.values(status.body.machines as Record<string, { updatedAt?: string }>).map((m) =>
          Date.parse(m.updatedAt ?? created),
        ),
      );
    };
    const before = await lastOf();
    const listed = await allPages('summary=true');
    const after = await lastOf();
    expect(listed.pages.every((p) => p.status === 200)).toBe(true);
    const entry = (
      listed.models as Array<{
        name: string;
        summary?: { lastChange: string; machines: number };
      }>
    ).find((m) => m.name === name);
    expect(entry?.summary).toEqual({
      machines: 3,
      units: 2,
      lastChange: expect.any(String),
      access: 'admin',
    });
    const last = Date.parse(entry?.summary?.lastChange ?? '');
    expect(last).toBeGreaterThanOrEqual(before);
    expect(last).toBeLessThanOrEqual(after);
    // empty means true, as `force`
    const empty = await allPages('summary=');
    expect(
      (empty.models as Array<{ name: string; summary?: unknown }>).find((m) => m.name === name)
        ?.summary,
    ).toMatchObject({ machines: 3, units: 2, access: 'admin' });

    for (const path of ['/v1/models', '/v1/models?summary=false']) {
      const plain = await api.get(path);
      expect(plain.status).toBe(200);
      expect(
        (plain.body.models as Array<Record<string, unknown>>).every((m) => !('summary' in m)),
      ).toBe(true);
    }
    const bad = await api.get('/v1/models?summary=yes');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('bad-request');
    expect(bad.body.error.message).toMatch(/^query parameter "summary": /);
  });

  it('pages the list by name with limit and cursor: more models than one page, each once', async () => {
    const prefix = uniqueName('page');
    const mine = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`, `${prefix}-d`, `${prefix}-e`];
    for (const name of mine) expect((await api.post('/v1/models', { name })).status).toBe(201);
    // every model the stack has, two to a page, with their summaries
    const paged = await allPages('summary=true&limit=2');
    expect(paged.pages.length).toBeGreaterThanOrEqual(3);
    expect(paged.pages.every((p) => p.status === 200 && p.names.length <= 2)).toBe(true);
    expect(paged.pages.slice(0, -1).every((p) => p.names.length === 2 && p.cursor)).toBe(true);
    expect(paged.pages.at(-1)?.cursor).toBeUndefined();
    const names = paged.models.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual([...names].sort());
    for (const name of mine) expect(names).toContain(name);
    expect(paged.models.find((m) => m.name === mine[2])?.summary).toEqual({
      machines: 0,
      units: 0,
      lastChange: expect.any(String),
      access: 'admin',
    });
    // the plain list pages too when asked, and the same models are there
    const plain = await allPages('limit=500');
    expect(plain.models.map((m) => m.name)).toEqual(expect.arrayContaining(mine));
    expect(plain.models.every((m) => !('summary' in m))).toBe(true);
    // without summary, limit or cursor: every model at once, no cursor (as before paging)
    const all = await api.get('/v1/models');
    expect(all.body.cursor).toBeUndefined();
    expect((all.body.models as Array<{ name: string }>).map((m) => m.name)).toEqual(
      expect.arrayContaining(mine),
    );
    // the default page of a summary is 100
    const first = await api.get('/v1/models?summary=true');
    expect((first.body.models as unknown[]).length).toBeLessThanOrEqual(100);
    expect(first.body.cursor === undefined).toBe(names.length <= 100);

    for (const [query, message] of [
      ['limit=0', /^query parameter "limit": must be a whole number from 1 to 500/],
      ['limit=501', /^query parameter "limit": must be a whole number from 1 to 500/],
      ['summary=true&cursor=bm9wZQ', /^invalid cursor$/],
      [
        `cursor=${Buffer.from(JSON.stringify({ after: 'x', y: 1 })).toString('base64url')}`,
        /^invalid cursor$/,
      ],
    ] as const) {
      const res = await api.get(`/v1/models?${query}`);
      expect([query, res.status, res.body.error?.code]).toEqual([query, 400, 'bad-request']);
      expect(res.body.error.message).toMatch(message);
    }
  });

  it('ignores an unknown query parameter (a cache-buster), as the list did before `summary`', async () => {
    const name = uniqueName('extra-query');
    expect((await api.post('/v1/models', { name })).status).toBe(201);
    for (const path of ['/v1/models?_=123', '/v1/models?cheese=1&summary=false']) {
      const plain = await api.get(path);
      expect({ path, status: plain.status }).toEqual({ path, status: 200 });
      const mine = (plain.body.models as Array<Record<string, unknown>>).find(
        (m) => m.name === name,
      );
      expect(mine).toBeDefined();
      expect(mine).not.toHaveProperty('summary');
    }
    // an extra parameter beside a valid summary leaves the summary in place
    const summed = await allPages('summary=true&_=1');
    expect(summed.pages.every((p) => p.status === 200)).toBe(true);
    expect(
      (summed.models as Array<{ name: string; summary?: unknown }>).find((m) => m.name === name)
        ?.summary,
    ).toMatchObject({ machines: 0, units: 0, access: 'admin' });
    // a known parameter is still checked
    expect((await api.get('/v1/models?summary=yes&_=1')).status).toBe(400);
  });
});

describe('availability-set mode', () => {
  it('refuses unit placement and add-machine with Juju’s words, and deploys without placement', async () => {
    const name = uniqueName('avset');
    await api.post('/v1/models', { name, availabilitySets: true });
    const placed = await api.post(`/v1/models/${name}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      to: ['zone=us-east-1a'],
    });
    expect(placed).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-placement',
          message: 'unit placement is not supported with availability-sets-enabled',
        },
      },
    });
    // refused before anything was recorded
    expect((await api.get(`/v1/models/${name}/applications/web`)).status).toBe(404);
    const deployed = await api.post(`/v1/models/${name}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      numUnits: 2,
    });
    expect(deployed.status).toBe(201);
    expect(deployed.body.units).toHaveLength(2);
    const addUnit = await api.post(`/v1/models/${name}/applications/web/units`, {
      count: 1,
      to: ['0'],
    });
    expect(addUnit.status).toBe(400);
    expect(addUnit.body.error.message).toBe(
      'unit placement is not supported with availability-sets-enabled',
    );
    const machine = await api.post(`/v1/models/${name}/machines`, {});
    expect(machine).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'add-machine is not supported with availability-sets-enabled',
        },
      },
    });
  });
});

describe('containers', () => {
  it('numbers the next container of a host made by add-machine lxd after the first (no collision)', async () => {
    const name = uniqueName('lxd');
    await api.post('/v1/models', { name });
    const first = await api.post(`/v1/models/${name}/machines`, { placement: 'lxd' });
    expect(first).toEqual({ status: 201, body: { machines: [{ id: '0/lxd/0' }] } });
    const second = await api.post(`/v1/models/${name}/machines`, { placement: 'lxd:0' });
    expect(second).toEqual({ status: 201, body: { machines: [{ id: '0/lxd/1' }] } });
    const host = await api.get(`/v1/models/${name}/machines/0`);
    expect(host.body.containers).toEqual(['0/lxd/0', '0/lxd/1']);
  });
});

describe('removing containers', () => {
  it('keeps the host alive when its last container goes, as Juju does', async () => {
    const name = uniqueName('lxdrm');
    await api.post('/v1/models', { name });
    await api.post(`/v1/models/${name}/machines`, { placement: 'lxd' });
    const removed = await api.delete(
      `/v1/models/${name}/machines/${encodeURIComponent('0/lxd/0')}`,
    );
    expect(removed.status).toBe(202);
    // its workflow deletes it on the host (if created there), then removes it
    await eventually(
      () => api.get(`/v1/models/${name}/machines/${encodeURIComponent('0/lxd/0')}`),
      (res) => res.status === 404,
      120_000,
    );
    const host = await api.get(`/v1/models/${name}/machines/0`);
    expect(host.status).toBe(200);
    expect(host.body).toMatchObject({ id: '0', life: 'alive', containers: [] });
  });

  it('keeps the host when the last unit of its last container is removed', async () => {
    const name = uniqueName('lxdunit');
    await api.post('/v1/models', { name });
    const deployed = await api.post(`/v1/models/${name}/applications`, {
      name: 'redis',
      base: 'ubuntu@22.04',
      to: ['lxd'],
    });
    expect(deployed.body.units).toEqual([{ name: 'redis/0', machine: '0/lxd/0' }]);
    const removed = await api.delete(`/v1/models/${name}/units/redis/0`);
    expect(removed.status).toBe(202);
    const status = await eventually(
      () => api.get(`/v1/models/${name}/status`),
      (res) => Object.keys(res.body?.machines ?? {}).length === 1,
      120_000,
    );
    expect(Object.keys(status.body.machines)).toEqual(['0']);
    expect(status.body.machines['0']).toMatchObject({ life: 'alive', containers: [] });
  });
});
