import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { TAG_MODEL_UID } from '../../ec2/tags';
import { apiClient, eventually, uniqueName } from './api-client';
import { ec2ClientFor, loadTestStack } from './stack';

/**
 * Issue 11, finding 1: a model re-created under the same name is another
 * model. Its machines never take the old model's kept instances, and
 * destroying it never terminates them.
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ec2 = ec2ClientFor(stack);

afterAll(() => ec2.destroy());

async function instance(id: string) {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations?.[0]?.Instances?.[0];
}

async function runningMachine(model: string, id: string): Promise<any> {
  const res = await eventually(
    () => api.get(`/v1/models/${model}/machines/${id}`),
    (r) => r.body?.status === 'running' || r.body?.status === 'error',
    180_000,
  );
  expect(res.body.status).toBe('running');
  return res.body;
}

async function destroyModel(model: string): Promise<void> {
  expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
  await eventually(
    () => api.get(`/v1/models/${model}`),
    (r) => r.status === 404,
    180_000,
  );
}

it("a re-created model neither adopts nor terminates the old model's kept instance", async () => {
  const name = uniqueName('reuse');
  expect((await api.post('/v1/models', { name, harvestMode: 'none' })).status).toBe(201);
  expect((await api.post(`/v1/models/${name}/machines`, { base: 'ubuntu@22.04' })).status).toBe(
    201,
  );
  const old = await runningMachine(name, '0');
  const oldUid = (await instance(old.instanceId))?.Tags?.find(
    (t) => t.Key === TAG_MODEL_UID,
  )?.Value;
  expect(oldUid).toMatch(/\S/);
  await destroyModel(name); // harvest mode none: the instance is kept
  expect((await instance(old.instanceId))?.State?.Name).toBe('running');

  // the same name again, another base and size: a new model
  expect((await api.post('/v1/models', { name })).status).toBe(201);
  expect(
    (
      await api.post(`/v1/models/${name}/machines`, {
        base: 'ubuntu@24.04',
        constraints: 'mem=8G',
      })
    ).status,
  ).toBe(201);
  const fresh = await runningMachine(name, '0');
  expect(fresh.instanceId).not.toBe(old.instanceId);
  const freshUid = (await instance(fresh.instanceId))?.Tags?.find(
    (t) => t.Key === TAG_MODEL_UID,
  )?.Value;
  expect(freshUid).toMatch(/\S/);
  expect(freshUid).not.toBe(oldUid);

  await destroyModel(name); // harvest mode destroyed: its own instance goes, the kept one stays
  expect(['shutting-down', 'terminated']).toContain(
    (await instance(fresh.instanceId))?.State?.Name,
  );
  expect((await instance(old.instanceId))?.State?.Name).toBe('running');
}, 600_000);
