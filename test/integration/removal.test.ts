import { Client, Connection, WorkflowIdConflictPolicy } from '@temporalio/client';
import { EntityNotFoundError } from '../../state/errors';
import { Repository } from '../../state/repository';
import type { MachineRecord } from '../../state/types';
import { TASK_QUEUE } from '../../temporal/search-attributes';
import {
  REMOVAL_WORKFLOW_TYPE,
  removalWorkflowId,
  type RemovalReport,
  type RemovalTarget,
} from '../../temporal/removal';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Issue 23 item 6: remove-application and destroy-model of hundreds of units
 * answer `202` at once and finish in the background (a removal workflow),
 * every machine going Dead and then removed, no unit left. The models'
 * constraints match no instance type, so their machines go to `error` at
 * planning and nothing is launched (what is measured is the removal, not
 * EC2's terminations).
 */

const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
let connection: Connection;
let temporal: Client;

const N = 200;
const UNSATISFIABLE = 'mem=1000T';
const SLOW = 240_000;

beforeAll(async () => {
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
});

afterAll(async () => {
  await connection.close();
  ddb.destroy();
});

async function newModel(prefix: string): Promise<{ name: string; uid: string }> {
  const name = uniqueName(prefix);
  const res = await api.post('/v1/models', { name, constraints: UNSATISFIABLE });
  expect(res.status).toBe(201);
  return { name, uid: (await repo.getModel(name)).uid };
}

async function deploy(model: string, body: Record<string, unknown>): Promise<void> {
  const res = await api.post(`/v1/models/${model}/applications`, body);
  expect(res.status).toBe(201);
}

/** Every machine read while waiting: none may be seen alive once its units have gone. */
async function machinesOf(model: string): Promise<MachineRecord[]> {
  return repo.listMachines(model);
}

async function removalResult(workflowId: string): Promise<RemovalReport> {
  return (await temporal.workflow.getHandle(workflowId).result()) as RemovalReport;
}

describe('removal of hundreds of units (in the background)', () => {
  it(
    `remove-application of ${N} units with subordinates answers 202, then every unit goes and every machine goes Dead`,
    async () => {
      const { name: model, uid } = await newModel('rmapp');
      // related first, so the N units are written with their subordinates (no fan-out to wait for)
      await deploy(model, { name: 'web', base: 'ubuntu@22.04', numUnits: 0 });
      await deploy(model, { name: 'tel', base: 'ubuntu@22.04', subordinate: true });
      await deploy(model, { name: 'db', base: 'ubuntu@22.04', numUnits: 1 });
      expect(
        (await api.post(`/v1/models/${model}/relations`, { endpoints: ['web', 'tel'] })).status,
      ).toBe(201);
      expect(
        (await api.post(`/v1/models/${model}/applications/web/units`, { count: N })).status,
      ).toBe(201);
      const before = await machinesOf(model);
      expect(before).toHaveLength(N + 1);
      const webMachines = before.filter((m) => m.applications.includes('web')).map((m) => m.id);
      expect(webMachines).toHaveLength(N);

      const { createdAt } = await repo.getApplication(model, 'web');
      const started = Date.now();
      const res = await api.delete(`/v1/models/${model}/applications/web`);
      const answeredMs = Date.now() - started;
      expect(res.status).toBe(202);
      process.stderr.write(`[removal] remove-application (${N} units): 202 in ${answeredMs} ms\n`);
      // well inside API Gateway's 29 s, on a busy machine
      expect(answeredMs).toBeLessThan(20_000);
      // Dying from the answer on: no unit can be added to it
      const added = await api.post(`/v1/models/${model}/applications/web/units`, {});
      expect([404, 409]).toContain(added.status);

      const report = await removalResult(
        removalWorkflowId({
          model,
          modelUid: uid,
          application: 'web',
          applicationCreatedAt: createdAt,
        }),
      );
      // the counts are those of the last attempt: an activity retried (a
      // heartbeat missed on a busy machine) counts only what was left, so
      // what is checked is the state below, not the counts
      expect(report).toEqual({ units: expect.any(Number), dead: expect.any(Number) });
      expect(report.units).toBeLessThanOrEqual(2 * N);
      expect(report.dead).toBeLessThanOrEqual(N);
      process.stderr.write(
        `[removal] remove-application (${N} units): every unit removed, every machine Dead and told ${Date.now() - started} ms after the request\n`,
      );
      expect(Date.now() - started).toBeLessThan(SLOW);
      expect((await api.get(`/v1/models/${model}/applications/web`)).status).toBe(404);
      const units = await repo.loadModel(model);
      expect(units.units.map((u) => u.name)).toEqual(['db/0']);
      expect(units.applications.map((a) => a.name).sort()).toEqual(['db', 'tel']);
      expect(units.relations).toEqual([]);
      // each of web's machines is Dead (or already torn down and removed); db's is untouched
      const after = await machinesOf(model);
      for (const m of after) {
        if (webMachines.includes(m.id)) expect(m.life).toBe('dead');
        else expect(m).toEqual(expect.objectContaining({ life: 'alive', principals: ['db/0'] }));
      }
      // and their workflows were told: they tear down and remove them
      await eventually(
        () => machinesOf(model),
        (ms) => ms.length === 1,
        SLOW,
        1_000,
      );
      process.stderr.write(
        `[removal] remove-application (${N} units): every machine removed ${Date.now() - started} ms after the request\n`,
      );
    },
    3 * SLOW,
  );

  it(
    `destroy-model of ${N} units, machines and containers answers 202 and the model ends removed`,
    async () => {
      const { name: model, uid } = await newModel('rmmodel');
      await deploy(model, { name: 'web', base: 'ubuntu@22.04', numUnits: N });
      expect((await api.post(`/v1/models/${model}/machines`, { count: 3 })).status).toBe(201);
      expect((await api.post(`/v1/models/${model}/machines`, { placement: 'lxd' })).status).toBe(
        201,
      );
      expect(
        (await api.post(`/v1/models/${model}/machines`, { placement: 'ssh:admin@host-r' })).status,
      ).toBe(201);
      const ids = (await machinesOf(model)).map((m) => m.id);
      expect(ids).toHaveLength(N + 3 + 2 + 1);

      const started = Date.now();
      const key = `destroy-${model}`;
      const res = await api.call('DELETE', `/v1/models/${model}`, undefined, undefined, {
        'idempotency-key': key,
      });
      const answeredMs = Date.now() - started;
      expect(res.status).toBe(202);
      process.stderr.write(`[removal] destroy-model (${N} units): 202 in ${answeredMs} ms\n`);
      expect(answeredMs).toBeLessThan(20_000);
      // the same request again with its key: the first answer, nothing more
      expect(
        await api.call('DELETE', `/v1/models/${model}`, undefined, undefined, {
          'idempotency-key': key,
        }),
      ).toEqual(res);

      const report = await removalResult(removalWorkflowId({ model, modelUid: uid }));
      // the counts are those of the last attempt (a retried activity counts
      // only what was left): bounded here, the state is checked below
      expect(report).toEqual({
        units: expect.any(Number),
        dead: expect.any(Number),
        modelRemoved: expect.any(Boolean),
      });
      expect(report.units).toBeLessThanOrEqual(N);
      expect(report.dead).toBeLessThanOrEqual(N + 3 + 1);
      process.stderr.write(
        `[removal] destroy-model (${N} units): every unit removed, every machine Dead and told ${Date.now() - started} ms after the request\n`,
      );
      // the Dead machines' workflows run on meanwhile: the container can be
      // torn down and its host made Dead (or removed, or the whole model
      // removed) before this reads; whatever is left is on its way out
      const contents = await repo.loadModel(model).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      if (contents !== undefined) {
        expect(contents.model.life).toBe('dying');
        expect(contents.units).toEqual([]);
        expect(contents.applications).toEqual([]);
        for (const m of contents.machines) expect(['dying', 'dead']).toContain(m.life);
        // the manual machine is deleted, not left Dead
        expect(contents.machines.map((m) => m.id)).not.toContain(String(N + 4));
        const host = contents.machines.find((m) => m.id === String(N + 3));
        if (host?.life === 'dying') expect(host.containers).toEqual([`${N + 3}/lxd/0`]);
      }
      await eventually(
        () => api.get(`/v1/models/${model}`),
        (r) => r.status === 404,
        SLOW,
        1_000,
      );
      process.stderr.write(
        `[removal] destroy-model (${N} units): model removed ${Date.now() - started} ms after the request\n`,
      );
    },
    3 * SLOW,
  );

  it(
    'a removal retried after its model was re-created, or its application re-deployed, leaves the new one alone',
    async () => {
      const { name: model, uid } = await newModel('rmstale');
      await deploy(model, { name: 'web', base: 'ubuntu@22.04', numUnits: 3 });
      const { createdAt } = await repo.getApplication(model, 'web');
      const run = async (target: RemovalTarget) =>
        (await temporal.workflow.execute(REMOVAL_WORKFLOW_TYPE, {
          taskQueue: TASK_QUEUE,
          workflowId: `${removalWorkflowId(target)}:${uniqueName('t')}`,
          args: [target],
        })) as RemovalReport;
      // a removal of the model once under this name (another uid): nothing
      expect(await run({ model, modelUid: `${uid}-old` })).toEqual({ units: 0, dead: 0 });
      // a removal of a `web` deployed before this one: nothing
      expect(
        await run({
          model,
          modelUid: uid,
          application: 'web',
          applicationCreatedAt: '2000-01-01T00:00:00.000Z',
        }),
      ).toEqual({ units: 0, dead: 0 });
      const contents = await repo.loadModel(model);
      expect(contents.model.life).toBe('alive');
      expect(contents.applications).toEqual([
        expect.objectContaining({ name: 'web', life: 'alive', createdAt }),
      ]);
      expect(contents.units.map((u) => u.name).sort()).toEqual(['web/0', 'web/1', 'web/2']);
      for (const m of contents.machines) expect(m.life).toBe('alive');
      // the removal of this very `web` still removes it
      expect(
        await run({ model, modelUid: uid, application: 'web', applicationCreatedAt: createdAt }),
      ).toEqual({ units: 3, dead: 3 });
      expect((await repo.loadModel(model)).units).toEqual([]);
    },
    SLOW,
  );

  it(
    'a removal whose request was cut off right after starting it finishes on its own',
    async () => {
      const { name: model, uid } = await newModel('rmcut');
      await deploy(model, { name: 'web', base: 'ubuntu@22.04', numUnits: 5 });
      // the request started the workflow, then died before writing anything
      const handle = await temporal.workflow.start(REMOVAL_WORKFLOW_TYPE, {
        taskQueue: TASK_QUEUE,
        workflowId: removalWorkflowId({ model, modelUid: uid }),
        args: [{ model, modelUid: uid }],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      });
      // counts of the last attempt (bounded): a retry counts only what was left
      const report = (await handle.result()) as RemovalReport;
      expect(report.units).toBeLessThanOrEqual(5);
      expect(report.dead).toBeLessThanOrEqual(5);
      const left = await repo.loadModel(model).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      expect(left?.units ?? []).toEqual([]);
      for (const m of left?.machines ?? []) expect(m.life).toBe('dead');
      await eventually(
        () => api.get(`/v1/models/${model}`),
        (r) => r.status === 404,
        SLOW,
        1_000,
      );
    },
    SLOW,
  );
});
