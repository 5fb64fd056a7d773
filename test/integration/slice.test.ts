import {
  DescribeInstancesCommand,
  DescribeSubnetsCommand,
  DescribeVolumesCommand,
} from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiClient, eventually, uniqueName } from './api-client';
import { TASK_QUEUE, sweeperWorkflowId } from '../../temporal/search-attributes';
import { Repository } from '../../state/repository';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);
const ec2 = ec2ClientFor(stack);
let connection: Connection;
let temporal: Client;

beforeAll(async () => {
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
});
afterAll(async () => {
  await connection.close();
  ec2.destroy();
});

interface ImageFixture {
  ami_id: string;
  name: string;
  creation_date: string;
}
const images = JSON.parse(
  readFileSync(join(__dirname, '../../local/ubuntu-amis.json'), 'utf8'),
) as ImageFixture[];

describe('authentication', () => {
  it('refuses a request without a token with 401 in the contract shape', async () => {
    const res = await apiClient(stack, null).get('/v1/models');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { code: 'unauthorized', message: 'missing or invalid bearer token' },
    });
  });

  it('refuses a wrong token', async () => {
    const res = await apiClient(stack, `${stack.token}x`).get('/v1/models');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  it('answers an unknown path with an authenticated 404', async () => {
    expect((await apiClient(stack, null).get('/v1/nothing')).status).toBe(401);
    const res = await api.get('/v1/nothing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: { code: 'not-found', message: 'no route for GET /v1/nothing' },
    });
  });

  it('answers a known path asked with a method it lacks with 405 and Allow', async () => {
    const raw = (method: string, path: string, token: string | null = stack.token) =>
      fetch(`${stack.apiUrl}${path}`, {
        method,
        headers: token === null ? {} : { authorization: `Bearer ${token}` },
      });
    const put = await raw('PUT', '/v1/models');
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(await put.json()).toEqual({
      error: {
        code: 'method-not-allowed',
        message: 'method PUT not allowed for /v1/models (allowed: GET, POST)',
      },
    });
    const patch = await raw('PATCH', '/v1/models/demo/machines/0');
    expect([patch.status, patch.headers.get('allow')]).toEqual([405, 'GET, DELETE']);
    // what the server answers is what the document allows (api-client's check)
    expect((await api.call('DELETE', '/v1/openapi.json')).status).toBe(405);
    // still a login first, and an unknown path still 404
    expect((await raw('PUT', '/v1/models', null)).status).toBe(401);
    expect((await api.call('PUT', '/v1/nothing')).status).toBe(404);
  });
});

describe('models', () => {
  it('creates a model with defaults, lists it and gets it', async () => {
    const name = uniqueName('slice');
    const created = await api.post('/v1/models', { name });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      name,
      region: 'us-east-1',
      constraints: '',
      harvestMode: 'destroyed',
      availabilitySets: false,
      reprovisionLost: false,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const list = await api.get('/v1/models');
    expect(list.status).toBe(200);
    expect(list.body.models).toContainEqual(created.body);
    const got = await api.get(`/v1/models/${name}`);
    expect(got).toEqual({ status: 200, body: created.body });
  });

  it('refuses a taken name with 409', async () => {
    const name = uniqueName('dup');
    expect((await api.post('/v1/models', { name })).status).toBe(201);
    const again = await api.post('/v1/models', { name });
    expect(again).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: `model "${name}" already exists` } },
    });
  });

  it.each([
    [{ name: 'Bad_Name' }, 'invalid model name "Bad_Name"'],
    [{ name: 'ok', colour: 'blue' }, 'unknown field "colour"'],
    [{ name: 7 }, expect.stringContaining('field "name"')],
    [{ name: 'ok', harvestMode: 'sometimes' }, expect.stringContaining('field "harvestMode"')],
  ])('refuses %j with 400 bad-request', async (body, message) => {
    const res = await api.post('/v1/models', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'bad-request', message });
  });

  it('refuses malformed JSON with 400', async () => {
    const res = await api.call('POST', '/v1/models', undefined, '{"name":');
    expect(res).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'malformed JSON in request body' } },
    });
  });

  it('answers 404 for a model that does not exist', async () => {
    const res = await api.get('/v1/models/nope-never');
    expect(res).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'model "nope-never" not found' } },
    });
    const add = await api.post('/v1/models/nope-never/machines', {});
    expect(add.status).toBe(404);
  });
});

describe('model sweep', () => {
  it('sweeps every model with the one sweeper, and creates no schedule per model', async () => {
    const model = uniqueName('sweep');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    const sweeper = await temporal.workflow.getHandle(sweeperWorkflowId(TASK_QUEUE)).describe();
    expect(sweeper.type).toBe('sweeperWorkflow');
    expect(sweeper.status.name).toBe('RUNNING');
    expect(await sweeper.staticSummary()).toBe(
      `Sweeps every model (stray instances, missing machine workflows, liveness) on ${TASK_QUEUE}`,
    );
    const schedules: string[] = [];
    for await (const s of temporal.schedule.list()) schedules.push(s.scheduleId);
    expect(schedules.filter((id) => id.startsWith('sweep:'))).toEqual([]);
  });
});

describe('the vertical slice: a machine is provisioned on the EC2 endpoint', () => {
  it('launches an instance and reports it running in status, EC2 and Temporal', async () => {
    const model = uniqueName('slice');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    const added = await api.post(`/v1/models/${model}/machines`, { base: 'ubuntu@24.04' });
    expect(added).toEqual({ status: 201, body: { machines: [{ id: '0' }] } });

    const status = await eventually(
      () => api.get(`/v1/models/${model}/status`),
      (res) => res.body?.machines?.['0']?.status === 'running',
    );
    const machine = status.body.machines['0'];
    const newestNoble = images
      .filter((i) => i.name.includes('ubuntu-noble-24.04-amd64-server-'))
      .sort((a, b) => b.creation_date.localeCompare(a.creation_date))[0]!;
    expect(machine).toMatchObject({
      id: '0',
      base: 'ubuntu@24.04',
      life: 'alive',
      status: 'running',
      message: '',
      imageId: newestNoble.ami_id,
      zone: expect.stringMatching(/^us-east-1[a-f]$/),
      instanceId: expect.stringMatching(/^i-[0-9a-f]+$/),
      hardware: { arch: 'amd64', cores: expect.any(Number), mem: expect.any(Number) },
    });
    expect(machine.hardware.mem).toBeGreaterThanOrEqual(2048);
    // the one running machine's on-demand price is the model's total (issue 14)
    expect(machine.pricePerHour).toEqual(expect.any(Number));
    expect(status.body.model).toEqual({
      name: model,
      region: 'us-east-1',
      constraints: '',
      pricePerHour: machine.pricePerHour,
    });

    const described = await ec2.send(
      new DescribeInstancesCommand({ InstanceIds: [machine.instanceId] }),
    );
    const instance = described.Reservations?.[0]?.Instances?.[0];
    expect(instance?.Placement?.AvailabilityZone).toBe(machine.zone);
    expect(instance?.InstanceType).toBe(machine.instanceType);
    expect(instance?.ImageId).toBe(newestNoble.ami_id);
    const tags = Object.fromEntries((instance?.Tags ?? []).map((t) => [t.Key, t.Value]));
    // tagged at launch only (issue 30): the batch, never the machine (which records the instance)
    expect(tags).toMatchObject({
      Name: model,
      'provisioner:model': model,
      'provisioner:launch-batch': expect.any(String),
    });
    expect(tags['provisioner:machine']).toBeUndefined();
    // …and the table's byInstance index maps the instance back to it (the state-change Lambda's lookup)
    const repo = new Repository(dynamoClientFor(stack), stack.tableName);
    await expect(
      eventually(
        () => repo.machineByInstance(machine.instanceId),
        (found) => found !== undefined,
        30_000,
      ),
    ).resolves.toEqual({ model, machineId: '0' });
    await expect(repo.machineByInstance('i-0000000000000000f')).resolves.toBeUndefined();

    const handle = temporal.workflow.getHandle(`machine:${model}:0`);
    const description = await handle.describe();
    expect(description.type).toBe('machine');
    const found = await eventually(
      async () => {
        const ids: string[] = [];
        for await (const wf of temporal.workflow.list({
          query: `ProvisionerModel = "${model}" AND ProvisionerStatus = "running"`,
        })) {
          ids.push(wf.workflowId);
        }
        return ids;
      },
      (ids) => ids.length === 1,
      20_000,
    );
    expect(found).toEqual([`machine:${model}:0`]);
  });

  it("launches with a root volume of the root-disk constraint's size (8 GiB at least)", async () => {
    const model = uniqueName('disk');
    await api.post('/v1/models', { name: model });
    await api.post(`/v1/models/${model}/machines`, { constraints: 'root-disk=20G' });
    await api.post(`/v1/models/${model}/machines`, {});
    const status = await eventually(
      () => api.get(`/v1/models/${model}/status`),
      (res) => ['0', '1'].every((id) => res.body?.machines?.[id]?.status === 'running'),
    );
    const sizes: number[] = [];
    for (const id of ['0', '1']) {
      const machine = status.body.machines[id];
      const described = await ec2.send(
        new DescribeInstancesCommand({ InstanceIds: [machine.instanceId] }),
      );
      const mapping = described.Reservations?.[0]?.Instances?.[0]?.BlockDeviceMappings?.find(
        (m) => m.DeviceName === '/dev/sda1',
      );
      const volumes = await ec2.send(
        new DescribeVolumesCommand({ VolumeIds: [mapping!.Ebs!.VolumeId!] }),
      );
      sizes.push(volumes.Volumes?.[0]?.Size ?? 0);
    }
    expect(sizes).toEqual([20, 8]);
    expect(status.body.machines['0'].hardware.rootDisk).toBe(20480);
    expect(status.body.machines['1'].hardware.rootDisk).toBe(8192);
  });

  it('launches a subnet= machine into that subnet and its zone; an unknown subnet is a provisioning error', async () => {
    const subnets = await ec2.send(
      new DescribeSubnetsCommand({
        Filters: [{ Name: 'availability-zone', Values: ['us-east-1d'] }],
      }),
    );
    const subnet = subnets.Subnets?.[0];
    expect(subnet?.SubnetId).toMatch(/^subnet-/);
    const model = uniqueName('subnet');
    await api.post('/v1/models', { name: model });
    expect(
      (await api.post(`/v1/models/${model}/machines`, { placement: `subnet=${subnet!.SubnetId!}` }))
        .status,
    ).toBe(201);
    expect(
      (
        await api.post(`/v1/models/${model}/machines`, {
          placement: 'subnet=subnet-00000000000000000',
        })
      ).status,
    ).toBe(201);
    const status = await eventually(
      () => api.get(`/v1/models/${model}/status`),
      (res) =>
        res.body?.machines?.['0']?.status === 'running' &&
        res.body?.machines?.['1']?.status === 'error',
    );
    const running = status.body.machines['0'];
    expect(running.zone).toBe('us-east-1d');
    const described = await ec2.send(
      new DescribeInstancesCommand({ InstanceIds: [running.instanceId] }),
    );
    expect(described.Reservations?.[0]?.Instances?.[0]?.SubnetId).toBe(subnet!.SubnetId);
    expect(status.body.machines['1']).toMatchObject({
      status: 'error',
      message: 'unable to find subnet "subnet-00000000000000000" in region us-east-1',
    });
    expect(status.body.machines['1'].instanceId).toBeUndefined();
  });

  it('gets one machine by id and 404s an unknown one', async () => {
    const model = uniqueName('get');
    await api.post('/v1/models', { name: model });
    await api.post(`/v1/models/${model}/machines`, { count: 2 });
    const res = await api.get(`/v1/models/${model}/machines/1`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: '1', base: 'ubuntu@24.04', life: 'alive' });
    const missing = await api.get(`/v1/models/${model}/machines/9`);
    expect(missing).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'machine 9 not found' } },
    });
  });
});
