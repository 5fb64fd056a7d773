import { apiClient, eventually, uniqueName } from './api-client';
import { loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);

async function newModel(prefix: string, body: Record<string, unknown> = {}): Promise<string> {
  const name = uniqueName(prefix);
  const res = await api.post('/v1/models', { name, ...body });
  expect(res.status).toBe(201);
  return name;
}

async function status(model: string) {
  const res = await api.get(`/v1/models/${model}/status`);
  expect(res.status).toBe(200);
  return res.body;
}

describe('constraints', () => {
  it('sets and gets model constraints in canonical form, reporting keys EC2 cannot honour', async () => {
    const model = await newModel('mc');
    const put = await api.put(`/v1/models/${model}/constraints`, {
      constraints: 'mem=2G cores=2 tags=a,b',
    });
    expect(put).toEqual({
      status: 200,
      body: { constraints: 'cores=2 mem=2048M tags=a,b', unsupported: ['tags'] },
    });
    const got = await api.get(`/v1/models/${model}/constraints`);
    expect(got).toEqual({
      status: 200,
      body: { constraints: 'cores=2 mem=2048M tags=a,b', unsupported: ['tags'] },
    });
    const cleared = await api.put(`/v1/models/${model}/constraints`, { constraints: '' });
    expect(cleared).toEqual({ status: 200, body: { constraints: '' } });
  });

  it.each([
    ['cheese', 'malformed constraint "cheese"'],
    ['cheese=1', 'unknown constraint "cheese"'],
    ['mem=1G mem=2G', 'bad "mem" constraint: already set'],
    ['mem=lots', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    ['cores=-1', 'bad "cores" constraint: must be a non-negative integer'],
    ['arch=cheese', 'bad "arch" constraint: "cheese" not recognized'],
  ])("refuses %j with 400 invalid-constraints and Juju's text", async (constraints, message) => {
    const model = await newModel('bad');
    const res = await api.put(`/v1/models/${model}/constraints`, { constraints });
    expect(res).toEqual({ status: 400, body: { error: { code: 'invalid-constraints', message } } });
    const create = await api.post('/v1/models', { name: uniqueName('badc'), constraints });
    expect(create).toEqual({
      status: 400,
      body: { error: { code: 'invalid-constraints', message } },
    });
    const deploy = await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@22.04',
      constraints,
      numUnits: 0,
    });
    expect(deploy.body.error).toEqual({ code: 'invalid-constraints', message });
    expect((await api.get(`/v1/models/${model}/applications/app`)).status).toBe(404);
  });

  it('collapses model and application constraints into each unit when it is created, and never after', async () => {
    const model = await newModel('seq');
    const deployed = await api.post(`/v1/models/${model}/applications`, {
      name: 'wordpress',
      base: 'ubuntu@22.04',
      constraints: 'mem=2G',
    });
    expect(deployed.status).toBe(201);
    expect(deployed.body.application).toMatchObject({
      name: 'wordpress',
      base: 'ubuntu@22.04',
      constraints: 'mem=2048M',
      subordinate: false,
    });
    expect(deployed.body.units).toEqual([{ name: 'wordpress/0', machine: '0' }]);
    const set = await api.put(`/v1/models/${model}/applications/wordpress/constraints`, {
      constraints: 'mem=3G',
    });
    expect(set).toEqual({ status: 200, body: { constraints: 'mem=3072M' } });
    const added = await api.post(`/v1/models/${model}/applications/wordpress/units`, { count: 2 });
    expect(added).toEqual({
      status: 201,
      body: {
        units: [
          { name: 'wordpress/1', machine: '1' },
          { name: 'wordpress/2', machine: '2' },
        ],
      },
    });
    await api.put(`/v1/models/${model}/constraints`, { constraints: 'cores=4' });
    await api.put(`/v1/models/${model}/applications/wordpress/constraints`, {
      constraints: 'mem=8G',
    });
    const s = await status(model);
    expect(Object.values(s.machines).map((m: any) => m.constraints)).toEqual([
      'mem=2048M',
      'mem=3072M',
      'mem=3072M',
    ]);
    expect(s.applications.wordpress.constraints).toBe('mem=8192M');
  });

  it("gives a unit Juju's collapse of model and application constraints", async () => {
    const model = await newModel('collapse', {
      constraints: 'cores=42 arch=amd64 tags=foo mem=4G',
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@22.04',
      constraints: 'cores= arch= cpu-power=',
    });
    const machine = await api.get(`/v1/models/${model}/machines/0`);
    expect(machine.body.constraints).toBe('arch= cores= cpu-power= mem=4096M tags=foo');
  });

  it('gives a machine added on its own the model constraints under its own', async () => {
    const model = await newModel('own', { constraints: 'mem=4G cores=2' });
    const added = await api.post(`/v1/models/${model}/machines`, {
      constraints: 'mem=8G',
      placement: 'ssh:ubuntu@host-a',
    });
    expect(added).toEqual({ status: 201, body: { machines: [{ id: '0' }] } });
    expect((await api.get(`/v1/models/${model}/machines/0`)).body.constraints).toBe(
      'cores=2 mem=8192M',
    );
  });
});

describe('placement', () => {
  it('places units on an existing machine, a new container on it, a new host with a container and a zone', async () => {
    const model = await newModel('place');
    await api.post(`/v1/models/${model}/machines`, {
      base: 'ubuntu@22.04',
      placement: 'ssh:ubuntu@10.1.2.3',
    });
    const deployed = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      numUnits: 5,
      to: ['0', 'lxd:0', 'lxd', 'zone=us-east-1c'],
    });
    expect(deployed.status).toBe(201);
    expect(deployed.body.units).toEqual([
      { name: 'web/0', machine: '0' },
      { name: 'web/1', machine: '0/lxd/0' },
      { name: 'web/2', machine: '1/lxd/0' },
      { name: 'web/3', machine: '2' },
      { name: 'web/4', machine: '3' },
    ]);
    const s = await status(model);
    expect(s.machines['0']).toMatchObject({
      units: ['web/0'],
      containers: ['0/lxd/0'],
      status: 'running',
    });
    expect(s.machines['0/lxd/0']).toMatchObject({ units: ['web/1'], containers: [] });
    expect(s.machines['1']).toMatchObject({ units: [], containers: ['1/lxd/0'] });
    expect(s.machines['1/lxd/0']).toMatchObject({ units: ['web/2'] });
    expect(s.machines['2']).toMatchObject({ units: ['web/3'] });
    expect((await api.get(`/v1/models/${model}/machines/2`)).body.id).toBe('2');
    expect(Object.keys(s.applications.web.units)).toEqual([
      'web/0',
      'web/1',
      'web/2',
      'web/3',
      'web/4',
    ]);
    expect(s.applications.web.units['web/0']).toEqual({
      machine: '0',
      life: 'alive',
      status: 'deployed',
      subordinates: [],
    });
  });

  it('reaches a container by its URL-encoded id', async () => {
    const model = await newModel('enc');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-b' });
    const c = await api.post(`/v1/models/${model}/machines`, { placement: 'lxd:0' });
    expect(c).toEqual({ status: 201, body: { machines: [{ id: '0/lxd/0' }] } });
    const got = await api.get(`/v1/models/${model}/machines/${encodeURIComponent('0/lxd/0')}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: '0/lxd/0', base: 'ubuntu@24.04' });
  });

  /*
   * The same answers on both paths: on the sources path the encoded id is one
   * segment of the documented routes; on the shipped path the emulated HTTP
   * API decodes the path first (as it is reported to in the cloud), so these
   * arrive as `…/machines/0/lxd/0[/retry]` on the greedy routes
   * (functions/routes.ts GATEWAY_ROUTES) and must still answer as documented.
   */
  it('gets, retries, reprovisions and destroys a container by its encoded id, as documented', async () => {
    const model = await newModel('encops');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-e' });
    const c = await api.post(`/v1/models/${model}/machines`, { placement: 'lxd:0' });
    expect(c).toEqual({ status: 201, body: { machines: [{ id: '0/lxd/0' }] } });
    const path = `/v1/models/${model}/machines/${encodeURIComponent('0/lxd/0')}`;
    const got = await api.get(path);
    expect([got.status, got.body.id, got.body.base]).toEqual([200, '0/lxd/0', 'ubuntu@24.04']);
    // retry reads the container itself: one that does not exist is named in the 404
    const missing = `/v1/models/${model}/machines/${encodeURIComponent('0/lxd/7')}`;
    expect(await api.post(`${missing}/retry`, {})).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'machine 0/lxd/7 not found' } },
    });
    // and the body is the retry route's own (its schema refuses an unknown field)
    expect(await api.post(`${path}/retry`, { cheese: 1 })).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'unknown field "cheese"' } },
    });
    const reprovision = await api.post(`${path}/reprovision`);
    expect(reprovision).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'machine 0/lxd/0 is not provisioned by the provisioner',
        },
      },
    });
    // a POST with no action, and an id that is not a machine id, answer as on a one-segment id
    const bare = await fetch(`${stack.apiUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.token}` },
    });
    expect([bare.status, bare.headers.get('allow')]).toEqual([405, 'GET, DELETE']);
    const odd = await api.get(`/v1/models/${model}/machines/${encodeURIComponent('0/lxd/x')}`);
    expect(odd).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'invalid machine id "0/lxd/x"' } },
    });
    // a wrong method on a sub-path only POST has: 405 naming POST, not a 400 for id "0/retry"
    for (const [method, sub] of [
      ['GET', '0/retry'],
      ['DELETE', '0/reprovision'],
      ['GET', `${encodeURIComponent('0/lxd/0')}/retry`],
    ] as const) {
      const wrong = await fetch(`${stack.apiUrl}/v1/models/${model}/machines/${sub}`, {
        method,
        headers: { authorization: `Bearer ${stack.token}` },
      });
      expect([method, sub, wrong.status, wrong.headers.get('allow')]).toEqual([
        method,
        sub,
        405,
        'POST',
      ]);
    }
    // a sub-path no route has: 404, as without the greedy routes
    const unknown = await api.get(`/v1/models/${model}/machines/0/foo`);
    expect(unknown).toEqual({
      status: 404,
      body: {
        error: {
          code: 'not-found',
          message: `no route for GET /v1/models/${model}/machines/0/foo`,
        },
      },
    });
    const removed = await api.delete(path);
    expect(removed.status).toBe(202);
    await eventually(
      () => api.get(path),
      (res) => res.status === 404,
      120_000,
    );
    const gone = await api.get(path);
    expect(gone).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'machine 0/lxd/0 not found' } },
    });
  });

  it('refuses a unit on a machine of another base with base-mismatch', async () => {
    const model = await newModel('base');
    await api.post(`/v1/models/${model}/machines`, {
      base: 'ubuntu@20.04',
      placement: 'ssh:host-c',
    });
    const res = await api.post(`/v1/models/${model}/applications`, {
      name: 'db',
      base: 'ubuntu@22.04',
      to: ['0'],
    });
    expect(res).toEqual({
      status: 400,
      body: {
        error: {
          code: 'base-mismatch',
          message: 'base does not match: unit has "ubuntu@22.04", machine has "ubuntu@20.04"',
        },
      },
    });
    // refused before anything was recorded
    expect((await api.get(`/v1/models/${model}/applications/db`)).status).toBe(404);
    await api.post(`/v1/models/${model}/applications`, {
      name: 'db',
      base: 'ubuntu@22.04',
      numUnits: 0,
    });
    const add = await api.post(`/v1/models/${model}/applications/db/units`, { to: ['0'] });
    expect(add.body.error.code).toBe('base-mismatch');
    expect((await status(model)).applications.db.units).toEqual({});
  });

  it.each([
    [{ to: ['lxd:x'] }, 'invalid value "x" for "lxd" scope: expected machine-id'],
    [{ to: ['ssh:me@host'] }, 'placement "ssh:me@host" is only valid when adding a machine'],
    [
      { to: ['zone=eu-west-1a'] },
      'zone "eu-west-1a" is not an availability zone of region us-east-1',
    ],
  ])('refuses add-unit %j with invalid-placement', async (body, message) => {
    const model = await newModel('badplace');
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@22.04',
      numUnits: 0,
    });
    const res = await api.post(`/v1/models/${model}/applications/app/units`, body);
    expect(res).toEqual({ status: 400, body: { error: { code: 'invalid-placement', message } } });
  });

  it('refuses add-machine -n with a directive and a machine id as placement', async () => {
    const model = await newModel('addm');
    const n = await api.post(`/v1/models/${model}/machines`, {
      count: 2,
      placement: 'zone=us-east-1a',
    });
    expect(n).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-placement',
          message: 'cannot use -n when specifying a placement directive',
        },
      },
    });
    const id = await api.post(`/v1/models/${model}/machines`, { placement: '3' });
    expect(id).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-placement',
          message: 'machine-id cannot be specified when adding machines',
        },
      },
    });
  });

  it('answers 404 for a placement on a machine that does not exist', async () => {
    const model = await newModel('nom');
    const res = await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@22.04',
      to: ['7'],
    });
    expect(res).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'machine 7 not found' } },
    });
  });
});

describe('subordinates and relations', () => {
  it('puts one subordinate unit beside each principal unit, now and later', async () => {
    const model = await newModel('sub');
    await api.post(`/v1/models/${model}/applications`, {
      name: 'wordpress',
      base: 'ubuntu@22.04',
      numUnits: 2,
    });
    const sub = await api.post(`/v1/models/${model}/applications`, {
      name: 'telegraf',
      base: 'ubuntu@22.04',
      subordinate: true,
    });
    expect(sub).toMatchObject({ status: 201, body: { units: [] } });
    const rel = await api.post(`/v1/models/${model}/relations`, {
      endpoints: ['wordpress', 'telegraf'],
    });
    expect(rel).toEqual({ status: 201, body: { endpoints: ['telegraf', 'wordpress'] } });
    await api.post(`/v1/models/${model}/applications/wordpress/units`, {});
    const s = await status(model);
    expect(s.applications.telegraf).toMatchObject({ subordinate: true, constraints: '' });
    expect(
      Object.fromEntries(
        Object.entries(s.applications.telegraf.units).map(([n, u]: [string, any]) => [
          n,
          u.machine,
        ]),
      ),
    ).toEqual({
      'telegraf/0': '0',
      'telegraf/1': '1',
      'telegraf/2': '2',
    });
    expect(s.applications.wordpress.units['wordpress/2'].subordinates).toEqual(['telegraf/2']);
    expect(s.machines['2'].units).toEqual(['wordpress/2']);

    const again = await api.post(`/v1/models/${model}/relations`, {
      endpoints: ['telegraf', 'wordpress'],
    });
    expect(again).toEqual({
      status: 409,
      body: {
        error: { code: 'conflict', message: 'relation "telegraf wordpress" already exists' },
      },
    });
    const direct = await api.delete(`/v1/models/${model}/units/telegraf/0`);
    expect(direct.status).toBe(409);
    expect(direct.body.error.message).toBe(
      'unit "telegraf/0" is a subordinate: remove its principal or the relation',
    );
  });

  it('refuses constraints and units on a subordinate application', async () => {
    const model = await newModel('subc');
    const withConstraints = await api.post(`/v1/models/${model}/applications`, {
      name: 'tg',
      base: 'ubuntu@22.04',
      subordinate: true,
      constraints: 'mem=1G',
    });
    expect(withConstraints).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'constraints do not apply to subordinate applications',
        },
      },
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'tg',
      base: 'ubuntu@22.04',
      subordinate: true,
    });
    expect((await api.get(`/v1/models/${model}/applications/tg/constraints`)).status).toBe(409);
    const put = await api.put(`/v1/models/${model}/applications/tg/constraints`, {
      constraints: 'mem=1G',
    });
    expect(put).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'constraints do not apply to subordinate applications',
        },
      },
    });
    const units = await api.post(`/v1/models/${model}/applications/tg/units`, {});
    expect(units).toEqual({
      status: 409,
      body: {
        error: { code: 'conflict', message: 'cannot add units to subordinate application "tg"' },
      },
    });
  });

  it('refuses to relate a subordinate to a principal of another base', async () => {
    const model = await newModel('subb');
    await api.post(`/v1/models/${model}/applications`, {
      name: 'db',
      base: 'ubuntu@20.04',
      numUnits: 0,
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'tg',
      base: 'ubuntu@22.04',
      subordinate: true,
    });
    const res = await api.post(`/v1/models/${model}/relations`, { endpoints: ['db', 'tg'] });
    expect(res).toEqual({
      status: 400,
      body: {
        error: {
          code: 'base-mismatch',
          message: 'base does not match: unit has "ubuntu@22.04", machine has "ubuntu@20.04"',
        },
      },
    });
  });
});

describe('removal', () => {
  it('removes a unit and its subordinates; its machine, left empty, goes Dead', async () => {
    const model = await newModel('rmu');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-d' });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 2,
      to: ['0'],
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'tg',
      base: 'ubuntu@24.04',
      subordinate: true,
    });
    await api.post(`/v1/models/${model}/relations`, { endpoints: ['app', 'tg'] });
    expect((await api.delete(`/v1/models/${model}/units/app/1`)).status).toBe(202);
    const s = await status(model);
    expect(Object.keys(s.applications.app.units)).toEqual(['app/0']);
    expect(Object.keys(s.applications.tg.units)).toEqual(['tg/0']);
    // machine 1 was created for app/1 and had nothing else: Dead (then torn down by its workflow)
    expect(s.machines['1'] === undefined || s.machines['1'].life === 'dead').toBe(true);
    // the manual machine keeps app/0
    expect(s.machines['0'].units).toEqual(['app/0']);
    const missing = await api.delete(`/v1/models/${model}/units/app/9`);
    expect(missing).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'unit "app/9" not found' } },
    });
  });

  it("refuses to destroy a machine with units or containers unless forced, with Juju's texts", async () => {
    const model = await newModel('rmm');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-e' });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      to: ['0'],
    });
    await api.post(`/v1/models/${model}/machines`, { placement: 'lxd:0' });
    const refused = await api.delete(`/v1/models/${model}/machines/0`);
    expect(refused).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: 'machine 0 has unit "app/0" assigned' } },
    });
    await api.delete(`/v1/models/${model}/units/app/0`);
    const containers = await api.delete(`/v1/models/${model}/machines/0`);
    expect(containers).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: 'machine 0 is hosting containers "0/lxd/0"' } },
    });
    expect((await api.delete(`/v1/models/${model}/machines/0?force=true`)).status).toBe(202);
    // the container's workflow removes it, and then its (manual) host, which waited for it
    const s = await eventually(
      () => status(model),
      (st) => Object.keys(st.machines).length === 0,
      120_000,
    );
    expect(s.machines).toEqual({});
  });

  it('force-destroys a machine with units, removing them', async () => {
    const model = await newModel('force');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-f' });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      to: ['0'],
    });
    expect((await api.delete(`/v1/models/${model}/machines/0?force=true`)).status).toBe(202);
    const s = await status(model);
    expect(s.applications.app.units).toEqual({});
    expect(s.machines).toEqual({});
  });

  it('removes an application with its units and relations', async () => {
    const model = await newModel('rma');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-g' });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      to: ['0'],
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'tg',
      base: 'ubuntu@24.04',
      subordinate: true,
    });
    await api.post(`/v1/models/${model}/relations`, { endpoints: ['app', 'tg'] });
    expect((await api.delete(`/v1/models/${model}/applications/app`)).status).toBe(202);
    expect((await api.get(`/v1/models/${model}/applications/app`)).status).toBe(404);
    const s = await status(model);
    expect(Object.keys(s.applications)).toEqual(['tg']);
    expect(s.applications.tg.units).toEqual({});
    // relating again works: the old relation is gone
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 0,
    });
    expect(
      (await api.post(`/v1/models/${model}/relations`, { endpoints: ['app', 'tg'] })).status,
    ).toBe(201);
  });

  it('destroys an empty model at once and a model with machines once they are gone', async () => {
    const empty = await newModel('rmmodel');
    expect((await api.delete(`/v1/models/${empty}`)).status).toBe(202);
    expect((await api.get(`/v1/models/${empty}`)).status).toBe(404);

    const model = await newModel('rmmodel');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-h' });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      to: ['0'],
    });
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
    // manual machines have nothing to tear down, so the model goes at once
    expect((await api.get(`/v1/models/${model}`)).status).toBe(404);
  });

  it('refuses new work in a model being destroyed', async () => {
    const model = await newModel('dying');
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 1,
    });
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
    const res = await api.post(`/v1/models/${model}/machines`, {});
    // gone already, or dying until its machine is torn down
    expect([404, 409]).toContain(res.status);
  });
});

describe('retry-provisioning', () => {
  it("refuses a machine not in error with Juju's text", async () => {
    const model = await newModel('retry');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-i' });
    const res = await api.post(`/v1/models/${model}/machines/0/retry`, {});
    expect(res).toEqual({
      status: 409,
      body: {
        error: { code: 'conflict', message: 'machine 0 is not in an error state (running)' },
      },
    });
    const missing = await api.post(`/v1/models/${model}/machines/5/retry`, {});
    expect(missing.status).toBe(404);
    const bad = await api.post(`/v1/models/${model}/machines/0/retry`, { constraints: 'mem=x' });
    expect(bad.body.error.code).toBe('invalid-constraints');
  });
});

describe('not found and bad requests', () => {
  it.each([
    ['GET', '/v1/models/none-here/status', 'model "none-here" not found'],
    ['GET', '/v1/models/none-here/constraints', 'model "none-here" not found'],
    ['DELETE', '/v1/models/none-here', 'model "none-here" not found'],
  ])('%s %s → 404', async (method, path, message) => {
    const res = await api.call(method, path);
    expect(res).toEqual({ status: 404, body: { error: { code: 'not-found', message } } });
  });

  it('answers 404 for an application, unit or machine that does not exist', async () => {
    const model = await newModel('nf');
    expect((await api.get(`/v1/models/${model}/applications/ghost`)).body).toEqual({
      error: { code: 'not-found', message: 'application "ghost" not found' },
    });
    expect((await api.post(`/v1/models/${model}/applications/ghost/units`, {})).status).toBe(404);
    expect((await api.delete(`/v1/models/${model}/machines/3`)).body).toEqual({
      error: { code: 'not-found', message: 'machine 3 not found' },
    });
    expect(
      (await api.post(`/v1/models/${model}/relations`, { endpoints: ['a', 'b'] })).status,
    ).toBe(404);
  });

  it('refuses bad names, unknown fields, bad bases and a taken application name', async () => {
    const model = await newModel('br');
    const badName = await api.post(`/v1/models/${model}/applications`, {
      name: 'Web',
      base: 'ubuntu@22.04',
    });
    expect(badName).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'invalid application name "Web"' } },
    });
    const unknown = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      series: 'jammy',
    });
    expect(unknown.body.error).toEqual({ code: 'bad-request', message: 'unknown field "series"' });
    const badBase = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'jammy',
    });
    expect(badBase).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad-request',
          message: "expected base string to contain os and channel separated by '@'",
        },
      },
    });
    expect(
      (
        await api.post(`/v1/models/${model}/applications`, {
          name: 'web',
          base: 'ubuntu@22.04',
          numUnits: 0,
        })
      ).status,
    ).toBe(201);
    const taken = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      numUnits: 0,
    });
    expect(taken).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: 'application "web" already exists' } },
    });
    const force = await api.delete(`/v1/models/${model}/machines/0?force=maybe`);
    expect(force).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad-request',
          message: 'query parameter force must be true or false, got "maybe"',
        },
      },
    });
  });
});

describe('concurrency', () => {
  it('makes 50 distinct units and machines from 50 concurrent add-unit calls', async () => {
    const model = await newModel('conc');
    // manual machines as targets would share; new machines must each be distinct
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 0,
      constraints: 'cores=9999',
    });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => api.post(`/v1/models/${model}/applications/app/units`, {})),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    const units = results.flatMap((r) => r.body.units as { name: string; machine: string }[]);
    expect(new Set(units.map((u) => u.name)).size).toBe(50);
    expect(new Set(units.map((u) => u.machine)).size).toBe(50);
    const s = await status(model);
    expect(Object.keys(s.applications.app.units)).toHaveLength(50);
    expect(Object.keys(s.machines)).toHaveLength(50);
  });

  it('adds 20 concurrent units to one existing machine without losing any', async () => {
    const model = await newModel('conc1');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-j' });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 0,
    });
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post(`/v1/models/${model}/applications/app/units`, { to: ['0'] }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const s = await eventually(
      () => status(model),
      (st) => st.machines['0'].units.length === 20,
      5000,
    );
    expect(s.machines['0'].units).toHaveLength(20);
  });
});

describe('races and malformed input found in review', () => {
  it('refuses bad placement at deploy without leaving the application behind', async () => {
    const model = await newModel('halfapp');
    const bad = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      to: ['zone=eu-west-1a'],
    });
    expect(bad.status).toBe(400);
    expect((await api.get(`/v1/models/${model}/applications/web`)).status).toBe(404);
    const good = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@22.04',
      numUnits: 0,
    });
    expect(good.status).toBe(201);
  });

  it('never leaves a unit on a machine destroyed at the same moment', async () => {
    const model = await newModel('racedm');
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 0,
    });
    for (let round = 0; round < 8; round++) {
      const { body } = await api.post(`/v1/models/${model}/machines`, {
        placement: `ssh:host-${round}`,
      });
      const id = body.machines[0].id as string;
      const [destroyed, added] = await Promise.all([
        api.delete(`/v1/models/${model}/machines/${id}`),
        api.post(`/v1/models/${model}/applications/app/units`, { to: [id] }),
      ]);
      // exactly one of them wins
      expect([destroyed.status, added.status].filter((s) => s === 202 || s === 201)).toHaveLength(
        1,
      );
      const s = await status(model);
      for (const [name, unit] of Object.entries<any>(s.applications.app.units)) {
        expect({ name, machineExists: s.machines[unit.machine] !== undefined }).toEqual({
          name,
          machineExists: true,
        });
      }
    }
  });

  it('gives every principal unit its subordinate when relate races add-unit', async () => {
    const model = await newModel('racerel');
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 0,
      constraints: 'cores=9999',
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'tg',
      base: 'ubuntu@24.04',
      subordinate: true,
    });
    const results = await Promise.all([
      ...Array.from({ length: 6 }, () =>
        api.post(`/v1/models/${model}/applications/app/units`, {}),
      ),
      api.post(`/v1/models/${model}/relations`, { endpoints: ['app', 'tg'] }),
    ]);
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201, 201]);
    const s = await status(model);
    const principals = Object.values<any>(s.applications.app.units);
    expect(principals).toHaveLength(6);
    for (const u of principals) expect(u.subordinates).toHaveLength(1);
    expect(Object.keys(s.applications.tg.units)).toHaveLength(6);
  });

  it.each([
    ['/v1/models/BAD/status', 'invalid model name "BAD"'],
    [`/v1/models/${'x'.repeat(300)}/status`, `invalid model name "${'x'.repeat(100)}"`],
    ['/v1/models/ok/applications/Nope', 'invalid application name "Nope"'],
    ['/v1/models/ok/machines/01', 'invalid machine id "01"'],
    ['/v1/models/ok/machines/0%2Fkvm%2F1', 'invalid machine id "0/kvm/1"'],
  ])('answers a malformed path parameter in %s with 400', async (path, message) => {
    const res = await api.get(path);
    expect(res).toEqual({ status: 400, body: { error: { code: 'bad-request', message } } });
  });

  it('refuses a container inside a container', async () => {
    const model = await newModel('nest');
    await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:host-n' });
    await api.post(`/v1/models/${model}/machines`, { placement: 'lxd:0' });
    const res = await api.post(`/v1/models/${model}/machines`, { placement: 'lxd:0/lxd/0' });
    expect(res).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-placement',
          message: 'cannot place a container on container "0/lxd/0"',
        },
      },
    });
    await api.post(`/v1/models/${model}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      numUnits: 0,
    });
    const unit = await api.post(`/v1/models/${model}/applications/app/units`, {
      to: ['lxd:0/lxd/0'],
    });
    expect(unit.body.error).toEqual({
      code: 'invalid-placement',
      message: 'cannot place a container on container "0/lxd/0"',
    });
  });
});
