import {
  StartInstancesCommand,
  StopInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { machineWorkflowId, SEARCH_ATTRIBUTES } from '../../temporal/search-attributes';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import { Repository } from '../../state/repository';
import { reprovisionMachine } from '../../service/machines';
import { Ec2InstanceLookup } from '../../service/instances';
import type { MachineWorkflows } from '../../service/workflows';
import { EntityConflictError } from '../../state/errors';
import { recordHistory as recordRunHistory, temporalJson } from './histories';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

/**
 * Liveness on the local stack (issue 12): the shared worker sweeps every 5 s,
 * and instances are changed behind the provisioner's back through the EC2
 * endpoint itself.
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ec2 = ec2ClientFor(stack);
const ddb = dynamoClientFor(stack);
let proxy: Ec2Proxy | undefined;
let temporal: Client | undefined;

afterAll(async () => {
  ec2.destroy();
  ddb.destroy();
  await proxy?.close();
  await temporal?.connection.close();
});

async function temporalClient(): Promise<Client> {
  temporal ??= new Client({
    connection: await Connection.connect({ address: stack.temporalAddress }),
    namespace: stack.temporalNamespace,
  });
  return temporal;
}

/** The machine workflow's ProvisionerInstanceStatus search attribute (undefined: unset). */
async function instanceStatusAttribute(model: string): Promise<string | undefined> {
  const handle = (await temporalClient()).workflow.getHandle(machineWorkflowId(model, '0'));
  return (await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.instanceStatus);
}

async function runningMachine(prefix: string, settings: Record<string, unknown> = {}) {
  const model = uniqueName(prefix);
  expect((await api.post('/v1/models', { name: model, ...settings })).status).toBe(201);
  expect(
    (await api.post(`/v1/models/${model}/applications`, { name: 'web', base: 'ubuntu@22.04' }))
      .status,
  ).toBe(201);
  const running = await eventually(
    () => api.get(`/v1/models/${model}/machines/0`),
    (res) => res.body?.status === 'running' && res.body?.instanceStatus === 'running',
    120_000,
  );
  return { model, instanceId: running.body.instanceId as string };
}

/**
 * With PROVISIONER_RECORD_HISTORIES=<dir>, writes each run of the machine's
 * workflow there (`<name>-run<N>.json`, oldest first) as `temporal workflow
 * show -o json` prints it (the replay test's format, test/unit/workflows/histories).
 */
async function recordHistory(model: string, machineId: string, name: string): Promise<void> {
  const dir = process.env.PROVISIONER_RECORD_HISTORIES;
  if (!dir) return;
  const workflowId = machineWorkflowId(model, machineId);
  const listed = await temporalJson(stack, [
    'workflow',
    'list',
    '--query',
    `WorkflowId="${workflowId}"`,
  ]);
  const runs = (
    JSON.parse(listed) as Array<{ execution: { runId: string }; startTime: string }>
  ).sort((a, b) => a.startTime.localeCompare(b.startTime));
  for (const [i, run] of runs.entries()) {
    await recordRunHistory(stack, workflowId, run.execution.runId, `${name}-run${i + 1}.json`);
  }
}

function machine(model: string) {
  return api.get(`/v1/models/${model}/machines/0`);
}

describe('an instance terminated behind the provisioner’s back', () => {
  it('goes down with its units in error, then reprovision gives the same machine a new instance', async () => {
    const { model, instanceId } = await runningMachine('lost');
    const started = Date.now();
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    const down = await eventually(
      () => machine(model),
      (res) => res.body?.status === 'down',
      60_000,
    );
    // how long EC2's own view takes to put the machine down (bounded by one 5 s sweep interval)
    process.stderr.write(`[liveness] terminate → down: ${Date.now() - started} ms\n`);
    expect(down.body.instanceStatus).toBe('terminated');
    expect(down.body.message).toBe(`instance "${instanceId}" is terminated`);
    const status = await api.get(`/v1/models/${model}/status`);
    expect(status.body.applications.web.units['web/0'].status).toBe('error');

    const res = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    expect(res.status).toBe(202);
    const back = await eventually(
      () => machine(model),
      (r) =>
        r.body?.status === 'running' &&
        r.body?.instanceId !== instanceId &&
        r.body?.instanceStatus === 'running',
      120_000,
    );
    expect(back.body.id).toBe('0');
    expect(back.body.units).toEqual(['web/0']);
    // the lost instance's `terminated` named the machine; its new instance clears it
    await eventually(
      () => instanceStatusAttribute(model),
      (v) => v === undefined,
      30_000,
    );
    const after = await api.get(`/v1/models/${model}/status`);
    expect(after.body.applications.web.units['web/0']).toMatchObject({
      machine: '0',
      status: 'deployed',
    });
    // new name: machine-reprovisioned-run* and machine-lean-reprovisioned-run* stay as older code made them
    await recordHistory(model, '0', 'machine-routine-clears-reprovisioned');
  });

  it('refuses to reprovision a machine whose instance runs', async () => {
    const { model, instanceId } = await runningMachine('live');
    const res = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: {
        code: 'conflict',
        message: `machine 0 has a live instance "${instanceId}" (running)`,
      },
    });
  });

  it('comes back by itself when the model reprovisions lost machines', async () => {
    const { model, instanceId } = await runningMachine('autolost', { reprovisionLost: true });
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    const back = await eventually(
      () => machine(model),
      (r) =>
        r.body?.status === 'running' &&
        r.body?.instanceId !== instanceId &&
        r.body?.instanceStatus === 'running',
      120_000,
    );
    expect(back.body.units).toEqual(['web/0']);
  });

  it('shows a stopped instance as stopped and leaves the machine be', async () => {
    const { model, instanceId } = await runningMachine('stopped');
    await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
    const stopped = await eventually(
      () => machine(model),
      (r) => r.body?.instanceStatus === 'stopped',
      60_000,
    );
    expect(stopped.body).toMatchObject({
      status: 'running',
      instanceId,
      message: `instance "${instanceId}" is stopped`,
    });
    const res = await api.post(`/v1/models/${model}/machines/0/reprovision`, {});
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: {
        code: 'conflict',
        message: `machine 0 has a live instance "${instanceId}" (stopped)`,
      },
    });
  });

  it('names a stop in ProvisionerInstanceStatus, and clears it when the instance starts again (never leaves `pending` on a running machine)', async () => {
    const { model, instanceId } = await runningMachine('restarted');
    await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
    await eventually(
      () => machine(model),
      (r) => r.body?.instanceStatus === 'stopped',
      60_000,
    );
    expect(
      await eventually(
        () => instanceStatusAttribute(model),
        (v) => v === 'stopped',
        30_000,
      ),
    ).toBe('stopped');
    // EC2's `pending` of the start, told to the workflow as the sweep tells it (the routine
    // write refuses it over `stopped`); the `running` after it is then written without the
    // workflow, so a published `pending` would stay on the running machine
    const handle = (await temporalClient()).workflow.getHandle(machineWorkflowId(model, '0'));
    await handle.signal('instanceState', { instanceId, state: 'pending' });
    await eventually(
      () => machine(model),
      (r) => r.body?.instanceStatus === 'pending',
      60_000,
    );
    await ec2.send(new StartInstancesCommand({ InstanceIds: [instanceId] }));
    const back = await eventually(
      () => machine(model),
      (r) => r.body?.instanceStatus === 'running',
      60_000,
    );
    expect(back.body).toMatchObject({ status: 'running', instanceId });
    expect(
      await eventually(
        () => instanceStatusAttribute(model),
        (v) => v === undefined,
        30_000,
      ),
    ).toBeUndefined();
    await recordHistory(model, '0', 'machine-routine-clears-restarted');
  });

  it('refuses a reprovision when EC2 cannot be asked, and launches nothing', async () => {
    const { model, instanceId } = await runningMachine('failclosed');
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    await eventually(
      () => machine(model),
      (res) => res.body?.status === 'down',
      60_000,
    );
    // the service behind the route, asking EC2 through a private proxy that answers 503 to everything
    proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
    const put = await fetch(`${proxy.url}/_admin/faults`, {
      method: 'PUT',
      body: JSON.stringify({ unavailable: true }),
    });
    expect(put.status).toBe(200);
    const signalled: string[] = [];
    const workflows: MachineWorkflows = {
      start: () => Promise.resolve(),
      startMany: () => Promise.resolve(),
      ensureSweep: () => Promise.resolve(),
      signal: (_m, id, s) => {
        signalled.push(`${id}:${s}`);
        return Promise.resolve();
      },
    };
    const ctx = {
      repo: new Repository(ddb, stack.tableName),
      workflows,
      defaultRegion: stack.region,
      instances: new Ec2InstanceLookup(proxy.url),
      now: () => new Date(),
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    };
    const refused = await reprovisionMachine(ctx, model, '0').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(EntityConflictError);
    expect((refused as Error).message).toMatch(
      new RegExp(`^cannot confirm instance "${instanceId}" is gone: EC2 could not be asked`),
    );
    expect(signalled).toEqual([]);
    const still = await machine(model);
    expect(still.body).toMatchObject({ status: 'down', instanceId });
  });
});
