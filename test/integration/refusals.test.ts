import { apiClient, eventually, uniqueName } from './api-client';
import { Repository } from '../../state/repository';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Issue 29: what Juju refuses at the request is refused at the request here
 * too (an unknown zone, an unknown instance type, with Juju's wording), and a
 * refused request writes nothing and spends no machine number, so the next
 * machine gets the next id as in Juju.
 */
const stack = loadTestStack();
const api = apiClient(stack);

async function contents(model: string) {
  const status = await api.get(`/v1/models/${model}/status`);
  expect(status.status).toBe(200);
  return {
    machines: Object.keys(status.body.machines as object).sort(),
    applications: Object.keys(status.body.applications as object).sort(),
  };
}

describe('refused up front, nothing written, no machine number spent', () => {
  let model: string;
  beforeAll(async () => {
    model = uniqueName('refuse');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
  });

  it("the issue's sequence: refused deploys and add-machines leave no gap in the ids", async () => {
    const first = await api.post(`/v1/models/${model}/applications`, {
      name: 'wordpress',
      base: 'ubuntu@22.04',
    });
    expect(first.status).toBe(201);
    expect(first.body.units).toEqual([{ name: 'wordpress/0', machine: '0' }]);

    const refusals: Array<[string, unknown, number, string, string]> = [
      [
        'applications',
        { name: 'wordpress', base: 'ubuntu@22.04' },
        409,
        'conflict',
        'application "wordpress" already exists',
      ],
      [
        'applications',
        { name: 'wordpress', base: 'ubuntu@22.04', numUnits: 3 },
        409,
        'conflict',
        'application "wordpress" already exists',
      ],
      [
        'machines',
        { placement: 'zone=us-east-1z' },
        400,
        'invalid-placement',
        'availability zone "us-east-1z" not valid',
      ],
      [
        'machines',
        { constraints: 'instance-type=z9.huge' },
        400,
        'invalid-constraints',
        'invalid constraint value: instance-type=z9.huge',
      ],
      [
        'applications',
        { name: 'mysql', base: 'ubuntu@22.04', numUnits: 3, constraints: 'instance-type=z9.huge' },
        400,
        'invalid-constraints',
        'invalid constraint value: instance-type=z9.huge',
      ],
      [
        'applications',
        { name: 'mysql', base: 'ubuntu@22.04', numUnits: 2, to: ['zone=us-east-1z'] },
        400,
        'invalid-placement',
        'availability zone "us-east-1z" not valid',
      ],
      [
        'applications/wordpress/units',
        { count: 2, to: ['zone=us-east-1a', 'zone=us-east-1z'] },
        400,
        'invalid-placement',
        'availability zone "us-east-1z" not valid',
      ],
    ];
    for (const [path, body, status, code, message] of refusals) {
      const res = await api.post(`/v1/models/${model}/${path}`, body);
      expect({ path, body, status: res.status, answer: res.body }).toEqual({
        path,
        body,
        status,
        answer: { error: { code, message } },
      });
    }
    // nothing of them was written
    expect(await contents(model)).toEqual({ machines: ['0'], applications: ['wordpress'] });

    // the next machine is 1, not 1 + the ids the refusals would have spent
    const next = await api.post(`/v1/models/${model}/machines`, {});
    expect(next.status).toBe(201);
    expect(next.body).toEqual({ machines: [{ id: '1' }] });
    // what the region does offer is accepted: a zone it has and a type it offers
    const offered = await api.post(`/v1/models/${model}/machines`, {
      placement: 'zone=us-east-1b',
      constraints: 'instance-type=t3.micro',
    });
    expect(offered.status).toBe(201);
    expect(offered.body).toEqual({ machines: [{ id: '2' }] });
    const more = await api.post(`/v1/models/${model}/applications/wordpress/units`, { count: 2 });
    expect(more.status).toBe(201);
    expect(more.body).toEqual({
      units: [
        { name: 'wordpress/1', machine: '3' },
        { name: 'wordpress/2', machine: '4' },
      ],
    });
    expect(await contents(model)).toEqual({
      machines: ['0', '1', '2', '3', '4'],
      applications: ['wordpress'],
    });
  });

  it('zones= constraints and the constraints set on a model or an application are checked up front', async () => {
    const m = uniqueName('refuse-c');
    const zoneRefused = {
      error: { code: 'invalid-constraints', message: 'availability zone "us-east-1z" not valid' },
    };
    const typeRefused = {
      error: {
        code: 'invalid-constraints',
        message: 'invalid constraint value: instance-type=z9.huge',
      },
    };
    // a model whose constraints name a zone the region lacks is not created
    const created = await api.post('/v1/models', { name: m, constraints: 'zones=us-east-1z' });
    expect({ status: created.status, body: created.body }).toEqual({
      status: 400,
      body: zoneRefused,
    });
    expect((await api.get(`/v1/models/${m}`)).status).toBe(404);
    expect(
      (await api.post('/v1/models', { name: m, constraints: 'zones=us-east-1a' })).status,
    ).toBe(201);

    // set-model-constraints zones=us-east-1z: refused, the model's constraints unchanged
    const setModel = await api.put(`/v1/models/${m}/constraints`, {
      constraints: 'zones=us-east-1z',
    });
    expect({ status: setModel.status, body: setModel.body }).toEqual({
      status: 400,
      body: zoneRefused,
    });
    const setModelType = await api.put(`/v1/models/${m}/constraints`, {
      constraints: 'mem=4G instance-type=z9.huge',
    });
    expect({ status: setModelType.status, body: setModelType.body }).toEqual({
      status: 400,
      body: typeRefused,
    });
    expect((await api.get(`/v1/models/${m}/constraints`)).body).toEqual({
      constraints: 'zones=us-east-1a',
    });

    // deploy --constraints zones=us-east-1a,us-east-1z: refused, no application, no machine
    const deploy = await api.post(`/v1/models/${m}/applications`, {
      name: 'wordpress',
      base: 'ubuntu@22.04',
      constraints: 'zones=us-east-1a,us-east-1z',
    });
    expect({ status: deploy.status, body: deploy.body }).toEqual({
      status: 400,
      body: zoneRefused,
    });
    expect(await contents(m)).toEqual({ machines: [], applications: [] });

    // add-machine --constraints zones=us-east-1z: refused the same way
    const add = await api.post(`/v1/models/${m}/machines`, { constraints: 'zones=us-east-1z' });
    expect({ status: add.status, body: add.body }).toEqual({ status: 400, body: zoneRefused });

    // valid values still pass: every zone offered, a type the region offers
    expect(
      (
        await api.put(`/v1/models/${m}/constraints`, {
          constraints: 'zones=us-east-1a,us-east-1b',
        })
      ).body,
    ).toEqual({ constraints: 'zones=us-east-1a,us-east-1b' });
    const deployed = await api.post(`/v1/models/${m}/applications`, {
      name: 'wordpress',
      base: 'ubuntu@22.04',
      constraints: 'zones=us-east-1b',
      numUnits: 0,
    });
    expect(deployed.status).toBe(201);
    expect(deployed.body.application).toMatchObject({ constraints: 'zones=us-east-1b' });

    // set-constraints wordpress instance-type=z9.huge: refused, the application's unchanged
    const setApp = await api.put(`/v1/models/${m}/applications/wordpress/constraints`, {
      constraints: 'instance-type=z9.huge',
    });
    expect({ status: setApp.status, body: setApp.body }).toEqual({
      status: 400,
      body: typeRefused,
    });
    const setAppZone = await api.put(`/v1/models/${m}/applications/wordpress/constraints`, {
      constraints: 'zones=us-east-1z',
    });
    expect({ status: setAppZone.status, body: setAppZone.body }).toEqual({
      status: 400,
      body: zoneRefused,
    });
    expect((await api.get(`/v1/models/${m}/applications/wordpress/constraints`)).body).toEqual({
      constraints: 'zones=us-east-1b',
    });
    const setOffered = await api.put(`/v1/models/${m}/applications/wordpress/constraints`, {
      constraints: 'instance-type=t3.micro',
    });
    expect({ status: setOffered.status, body: setOffered.body }).toEqual({
      status: 200,
      body: { constraints: 'instance-type=t3.micro' },
    });
    expect(await contents(m)).toEqual({ machines: [], applications: ['wordpress'] });
  });

  it('retry-provisioning with constraints checks them up front: refused, the machine’s constraints unchanged, still in error', async () => {
    const m = uniqueName('refuse-r');
    expect((await api.post('/v1/models', { name: m })).status).toBe(201);
    // no instance type has 4096 cores: the machine goes to error
    const added = await api.post(`/v1/models/${m}/machines`, { constraints: 'cores=4096' });
    expect(added.body).toEqual({ machines: [{ id: '0' }] });
    const machine = () => api.get(`/v1/models/${m}/machines/0`);
    const failed = await eventually(
      machine,
      (r) => r.status === 200 && r.body.status === 'error',
      180_000,
      1_000,
    );
    const before = failed.body.constraints as string;
    expect(before).toMatch(/^cores=4096/);

    const retryType = await api.post(`/v1/models/${m}/machines/0/retry`, {
      constraints: 'instance-type=z9.huge',
    });
    expect({ status: retryType.status, body: retryType.body }).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-constraints',
          message: 'invalid constraint value: instance-type=z9.huge',
        },
      },
    });
    const retryZone = await api.post(`/v1/models/${m}/machines/0/retry`, {
      constraints: 'cores=2 zones=us-east-1a,us-east-1z',
    });
    expect({ status: retryZone.status, body: retryZone.body }).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid-constraints',
          message: 'availability zone "us-east-1z" not valid',
        },
      },
    });
    const after = await machine();
    expect({ status: after.body.status, constraints: after.body.constraints }).toEqual({
      status: 'error',
      constraints: before,
    });
    expect(await contents(m)).toEqual({ machines: ['0'], applications: [] });
  }, 240_000);

  it('retry-provisioning is refused for its own constraints, not for a zone stored on the model, unless the machine cannot launch with it', async () => {
    const m = uniqueName('refuse-s');
    expect((await api.post('/v1/models', { name: m })).status).toBe(201);
    const added = await api.post(`/v1/models/${m}/machines`, { constraints: 'cores=4096' });
    expect(added.body).toEqual({ machines: [{ id: '0' }] });
    const machine = () => api.get(`/v1/models/${m}/machines/0`);
    const inError = () =>
      eventually(machine, (r) => r.status === 200 && r.body.status === 'error', 180_000, 1_000);
    await inError();
    // a zone on the model that the region does not have (stored while EC2 could not be asked,
    // or before the up-front check existed: the API refuses it today), written as it is stored
    const ddb = dynamoClientFor(stack);
    const repo = new Repository(ddb, stack.tableName);
    const storedModel = async (constraints: string) => {
      await repo.setModelConstraints(m, constraints);
      expect((await api.get(`/v1/models/${m}/constraints`)).body).toEqual({ constraints });
    };
    try {
      // one stored zone gone, one there: the retry asks nothing about zones and is accepted
      await storedModel('zones=us-east-1a,us-east-1z');
      const accepted = await api.post(`/v1/models/${m}/machines/0/retry`, {
        constraints: 'cores=4095',
      });
      expect(accepted.status).toBeLessThan(300);
      expect((await machine()).body.constraints).toBe('cores=4095 zones=us-east-1a,us-east-1z');
      // back in error from this retry (its message names the retry's constraints)
      await eventually(
        machine,
        (r) => r.body.status === 'error' && String(r.body.message).includes('cores=4095'),
        180_000,
        1_000,
      );

      // a stored instance type the region does not offer, masked in the merge by the retry's
      // cores (EC2: instance-type conflicts with cores): not launched with, so accepted
      await storedModel('instance-type=z9.huge');
      const masked = await api.post(`/v1/models/${m}/machines/0/retry`, {
        constraints: 'cores=4093',
      });
      expect({ status: masked.status, body: masked.body }).toMatchObject({ status: 202 });
      expect((await machine()).body.constraints).toBe('cores=4093');
      await eventually(
        machine,
        (r) => r.body.status === 'error' && String(r.body.message).includes('cores=4093'),
        180_000,
        1_000,
      );
      // not masked (zones do not conflict with it): the machine would launch with it, refused
      const kept = await api.post(`/v1/models/${m}/machines/0/retry`, {
        constraints: 'zones=us-east-1a',
      });
      expect({ status: kept.status, body: kept.body }).toEqual({
        status: 400,
        body: {
          error: {
            code: 'invalid-constraints',
            message:
              "invalid constraint value: instance-type=z9.huge: from the model's constraints " +
              '"instance-type=z9.huge", which this retry does not replace (change them with ' +
              'set-model-constraints, or give the retry its own)',
          },
        },
      });
      expect((await machine()).body).toMatchObject({ status: 'error', constraints: 'cores=4093' });

      // every stored zone gone: the machine cannot launch, and the refusal says it is the model's
      await storedModel('zones=us-east-1z');
      const refused = await api.post(`/v1/models/${m}/machines/0/retry`, {
        constraints: 'cores=4094',
      });
      expect({ status: refused.status, body: refused.body }).toEqual({
        status: 400,
        body: {
          error: {
            code: 'invalid-constraints',
            message:
              'availability zone "us-east-1z" not valid: from the model\'s constraints ' +
              '"zones=us-east-1z", which this retry does not replace (change them with ' +
              'set-model-constraints, or give the retry its own)',
          },
        },
      });
      expect((await machine()).body).toMatchObject({ status: 'error', constraints: 'cores=4093' });
      // the retry's own zones replace the model's: accepted, and the machine launches there
      const own = await api.post(`/v1/models/${m}/machines/0/retry`, {
        constraints: 'cores=2 zones=us-east-1b',
      });
      expect(own.status).toBeLessThan(300);
      const up = await eventually(machine, (r) => r.body.status === 'running', 180_000, 1_000);
      expect(up.body).toMatchObject({
        zone: 'us-east-1b',
        constraints: 'cores=2 zones=us-east-1b',
      });
    } finally {
      ddb.destroy();
    }
  }, 600_000);
});
