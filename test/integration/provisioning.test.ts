import {
  DescribeInstancesCommand,
  DescribeInstanceTypesCommand,
  RunInstancesCommand,
  TerminateInstancesCommand,
  type Instance,
} from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { toCatalogueEntry, type CatalogueEntry } from '../../ec2/instance-types';
import { priced } from '../../activities/plan';
import {
  TAG_DEPLOYMENT,
  TAG_LAUNCH_BATCH,
  TAG_MACHINE,
  TAG_MODEL,
  TAG_MODEL_UID,
} from '../../ec2/tags';
import { matchingInstanceTypes, parseConstraints } from '../../core';
import { provisioningStateQuery } from '../../workflows/definitions';
import { TASK_QUEUE, machineWorkflowId, sweeperWorkflowId } from '../../temporal/search-attributes';
import { countHistory, emptyTemporalUse } from '../../bench/history';
import { apiClient, eventually, uniqueName } from './api-client';
import { servedPrices } from './prices';
import { ec2ClientFor, loadTestStack } from './stack';
import { sweepPagesCompletedSince } from './sweeper';

/**
 * The machine workflow on the shared local stack, driven through the API as a
 * user drives it. No test here sets EC2 proxy faults (they are global to the
 * shared stack; the fault tests run against a private proxy and worker in
 * provisioning-isolated.test.ts). Machines are narrowed to zones a–c, which
 * the proxy's own tests never fault, so nothing here depends on another
 * file's faults; the shared worker's tuning comes from global-setup.ts
 * (3 attempts, 500ms apart, sweep every 5s, stray grace 2s).
 */

const stack = loadTestStack();
const api = apiClient(stack);
const ec2 = ec2ClientFor(stack);
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const IN_ZONES = `zones=${ZONES.join(',')}`;
/** The deployment tag value of the local stack's worker (PROVISIONER_DEPLOYMENT unset). */
const DEPLOYMENT = 'local';

let connection: Connection;
let temporal: Client;
let catalogue: CatalogueEntry[];

beforeAll(async () => {
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  const out = await ec2.send(new DescribeInstanceTypesCommand({}));
  // the worker orders types by the prices the local Price List API serves (issue 14)
  const prices = await servedPrices(stack);
  catalogue = priced(
    (out.InstanceTypes ?? []).flatMap((t) => toCatalogueEntry(t) ?? []),
    prices,
  );
});

afterAll(async () => {
  await connection.close();
  ec2.destroy();
});

function timing(label: string, startedAt: number): void {
  process.stderr.write(`[timing] ${label}: ${Date.now() - startedAt} ms\n`);
}

async function newModel(prefix: string, body: Record<string, unknown> = {}): Promise<string> {
  const name = uniqueName(prefix);
  const res = await api.post('/v1/models', { name, ...body });
  expect(res.status).toBe(201);
  return name;
}

async function status(model: string): Promise<any> {
  const res = await api.get(`/v1/models/${model}/status`);
  expect(res.status).toBe(200);
  return res.body;
}

async function addMachine(model: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post(`/v1/models/${model}/machines`, body);
  expect(res.status).toBe(201);
  return res.body.machines[0].id as string;
}

async function machine(model: string, id: string): Promise<any> {
  return (await api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`)).body;
}

function untilStatus(model: string, id: string, wanted: string, timeoutMs = 60_000) {
  return eventually(
    () => machine(model, id),
    (m) => m?.status === wanted,
    timeoutMs,
  );
}

async function describe1(instanceId: string): Promise<Instance> {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
  const instance = out.Reservations?.[0]?.Instances?.[0];
  if (!instance) throw new Error(`EC2 does not know ${instanceId}`);
  return instance;
}

async function instanceState(instanceId: string): Promise<string | undefined> {
  return (await describe1(instanceId)).State?.Name;
}

/** What the provisioner should choose for these constraints, from the catalogue the endpoint serves. */
function expectedType(constraints: string): CatalogueEntry {
  const first = matchingInstanceTypes(stack.region, catalogue, parseConstraints(constraints))[0];
  return catalogue.find((t) => t.name === first?.name)!;
}

/** The workflow's own view, once it has caught up with the status it recorded (`phase`). */
function provisioningState(model: string, id: string, phase: string) {
  return eventually(
    () => temporal.workflow.getHandle(machineWorkflowId(model, id)).query(provisioningStateQuery),
    (s) => s.phase === phase,
    20_000,
  );
}

async function workflowIds(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of temporal.workflow.list({ query })) ids.push(wf.workflowId);
  return ids.sort();
}

/**
 * An instance tagged for the model as the worker tags them, but launched behind
 * its back. `like` is one of the model's own instances: its model-uid tag (a
 * model is told apart by its uid, never by its name alone) is copied.
 */
async function launchStray(
  model: string,
  machineId: string,
  imageId: string,
  like: string,
): Promise<string> {
  const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [like] }));
  const uid = described.Reservations?.[0]?.Instances?.[0]?.Tags?.find(
    (t) => t.Key === TAG_MODEL_UID,
  )?.Value;
  if (!uid) throw new Error(`instance ${like} has no ${TAG_MODEL_UID} tag`);
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: imageId,
      InstanceType: 't3.micro',
      MinCount: 1,
      MaxCount: 1,
      Placement: { AvailabilityZone: 'us-east-1a' },
      TagSpecifications: [
        {
          ResourceType: 'instance',
          Tags: [
            { Key: TAG_MODEL, Value: model },
            { Key: TAG_MODEL_UID, Value: uid },
            { Key: TAG_MACHINE, Value: machineId },
            { Key: TAG_DEPLOYMENT, Value: DEPLOYMENT },
          ],
        },
      ],
    }),
  );
  const id = out.Instances?.[0]?.InstanceId;
  if (!id) throw new Error('no stray launched');
  return id;
}

describe('zone spread', () => {
  it('spreads 9 units of one application 3/3/3 and 3 of another 1/1/1, all requested at once', async () => {
    const model = await newModel('spread');
    const started = Date.now();
    const [web, db] = await Promise.all([
      api.post(`/v1/models/${model}/applications`, {
        name: 'web',
        base: 'ubuntu@24.04',
        numUnits: 9,
        constraints: IN_ZONES,
      }),
      api.post(`/v1/models/${model}/applications`, {
        name: 'db',
        base: 'ubuntu@22.04',
        numUnits: 3,
        constraints: `cores=2 ${IN_ZONES}`,
      }),
    ]);
    expect(web.status).toBe(201);
    expect(db.status).toBe(201);
    const webMachines: string[] = web.body.units.map((u: { machine: string }) => u.machine);
    const dbMachines: string[] = db.body.units.map((u: { machine: string }) => u.machine);
    expect(webMachines).toHaveLength(9);
    expect(dbMachines).toHaveLength(3);

    const done = await eventually(
      () => status(model),
      (s) => Object.values<any>(s.machines).filter((m) => m.status === 'running').length === 12,
      90_000,
    );
    timing('12 machines (9+3) from deploy to all running', started);

    const perZone = (ids: string[]) => {
      const counts: Record<string, number> = {};
      for (const id of ids) {
        const zone = done.machines[id].zone as string;
        counts[zone] = (counts[zone] ?? 0) + 1;
      }
      return counts;
    };
    expect(perZone(webMachines)).toEqual({ 'us-east-1a': 3, 'us-east-1b': 3, 'us-east-1c': 3 });
    expect(perZone(dbMachines)).toEqual({ 'us-east-1a': 1, 'us-east-1b': 1, 'us-east-1c': 1 });

    // the type is the catalogue's cheapest fit, recorded with its hardware
    const webType = expectedType(IN_ZONES);
    const dbType = expectedType(`cores=2 ${IN_ZONES}`);
    expect(dbType.cores).toBe(2);
    for (const [ids, type] of [
      [webMachines, webType],
      [dbMachines, dbType],
    ] as const) {
      for (const id of ids) {
        const m = done.machines[id];
        expect(m).toMatchObject({
          status: 'running',
          message: '',
          instanceType: type.name,
          hardware: { arch: 'amd64', cores: type.cores, mem: type.mem },
          instanceId: expect.stringMatching(/^i-/),
          imageId: expect.stringMatching(/^ami-/),
        });
        const instance = await describe1(m.instanceId);
        expect(instance.Placement?.AvailabilityZone).toBe(m.zone);
        expect(instance.InstanceType).toBe(type.name);
        const tags = Object.fromEntries((instance.Tags ?? []).map((t) => [t.Key, t.Value]));
        // tagged at launch only (issue 30): no tag names the machine; the table finds it
        expect(tags).toMatchObject({
          Name: model,
          [TAG_MODEL]: model,
          [TAG_DEPLOYMENT]: DEPLOYMENT,
          [TAG_LAUNCH_BATCH]: expect.any(String),
        });
        expect(tags[TAG_MACHINE]).toBeUndefined();
      }
    }

    // the workflow's state and search attributes say the same
    const state = await provisioningState(model, webMachines[0]!, 'running');
    expect(state).toMatchObject({
      phase: 'running',
      pass: 1,
      attempt: 1,
      maxAttempts: 3,
      failedZones: [],
      instanceType: webType.name,
      instanceId: done.machines[webMachines[0]!].instanceId,
      zone: done.machines[webMachines[0]!].zone,
    });
    const webInA = webMachines
      .filter((id) => done.machines[id].zone === 'us-east-1a')
      .map((id) => machineWorkflowId(model, id))
      .sort();
    const found = await eventually(
      () =>
        workflowIds(
          `ProvisionerModel = "${model}" AND ProvisionerApplications = "web" AND ` +
            `ProvisionerZone = "us-east-1a" AND ProvisionerStatus = "running"`,
        ),
      (ids) => ids.length === 3,
      20_000,
    );
    expect(found).toEqual(webInA);
    expect(
      await eventually(
        () => workflowIds(`ProvisionerModel = "${model}" AND ProvisionerApplications = "db"`),
        (ids) => ids.length === 3,
        20_000,
      ),
    ).toEqual(dbMachines.map((id) => machineWorkflowId(model, id)).sort());
  });
});

describe('launch cost', () => {
  it('launches a machine in one workflow task and three Temporal actions: one local activity reads, plans, claims, launches and records the instance (LAUNCH_IN_READ); one upsert', async () => {
    const model = await newModel('cost');
    const res = await api.post(`/v1/models/${model}/machines`, { count: 3, constraints: IN_ZONES });
    expect(res.status).toBe(201);
    const ids = (res.body.machines as Array<{ id: string }>).map((m) => m.id);
    const running = await eventually(
      () => status(model),
      (st) => Object.values<any>(st.machines).filter((m) => m.status === 'running').length === 3,
    );
    // spread 1/1/1 by the claims the first reads made
    expect(
      Object.values<any>(running.machines)
        .map((m) => m.zone as string)
        .sort(),
    ).toEqual(ZONES);
    for (const id of ids) {
      const recorded = await machine(model, id);
      expect(recorded.status).toBe('running');
      expect(recorded.instanceId).toMatch(/^i-/);
      expect(await instanceState(recorded.instanceId as string)).toMatch(/^(pending|running)$/);
      // the launch records `running` from inside the first workflow task: the task's events
      // reach the history a moment after
      const { events } = await eventually(
        () => temporal.workflow.getHandle(machineWorkflowId(model, id)).fetchHistory(),
        (h) => (h.events ?? []).some((e) => e.workflowTaskCompletedEventAttributes),
      );
      // the launch: everything before the first news of the instance (liveness, not the launch)
      const signalled = events!.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
      const launch = signalled < 0 ? events! : events!.slice(0, signalled);
      const use = emptyTemporalUse();
      countHistory(launch, use);
      expect({
        actions: use.actions,
        workflowTasks: use.workflowTasks,
        localActivities: use.localActivities,
        activityTasks: use.activityTasks,
      }).toEqual({ actions: 3, workflowTasks: 1, localActivities: 1, activityTasks: 0 });
      const activities = launch.flatMap(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
      );
      expect(activities).toEqual([]);
      const upserts = launch.flatMap((e) =>
        e.upsertWorkflowSearchAttributesEventAttributes
          ? [
              Object.keys(
                e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields ??
                  {},
              ).sort(),
            ]
          : [],
      );
      // status, zone and applications (none here: cleared) in one upsert; the instance's
      // routine pending → running never reaches the workflow, so no instance status is named
      expect(upserts).toEqual([
        ['ProvisionerApplications', 'ProvisionerStatus', 'ProvisionerZone'],
      ]);
      // no patch marker: the path is told by what the history's answers carry (LEAN_LAUNCH)
      expect(
        launch.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch'),
      ).toEqual([]);
    }
  });
});

describe('placement', () => {
  it('launches a machine placed with zone= in that zone, whatever the spread says', async () => {
    const model = await newModel('placed');
    const ids = [
      await addMachine(model, { placement: 'zone=us-east-1c' }),
      await addMachine(model, { placement: 'zone=us-east-1c' }),
    ];
    for (const id of ids) {
      const m = await untilStatus(model, id, 'running');
      expect(m.zone).toBe('us-east-1c');
      expect((await describe1(m.instanceId)).Placement?.AvailabilityZone).toBe('us-east-1c');
    }
  });
});

describe('errors and retry', () => {
  it('puts a machine whose base has no image in error at once, naming base, arch and region', async () => {
    const model = await newModel('noimage');
    const id = await addMachine(model, { base: 'ubuntu@26.04' });
    const m = await untilStatus(model, id, 'error');
    expect(m.message).toBe(
      'no image found for base "ubuntu@26.04" (arch amd64) in region us-east-1',
    );
    expect(m.instanceId).toBeUndefined();
    expect(m.zone).toBeUndefined();
    const state = await provisioningState(model, id, 'error');
    // no attempt was spent: it is not a zone problem
    expect(state).toMatchObject({ phase: 'error', attempt: 0, lastError: m.message });
    const inError = await eventually(
      () => workflowIds(`ProvisionerModel = "${model}" AND ProvisionerStatus = "error"`),
      (ids) => ids.length === 1,
      20_000,
    );
    expect(inError).toEqual([machineWorkflowId(model, id)]);
  });

  it('retries with replacement constraints: the machine is planned again from them', async () => {
    const model = await newModel('retry');
    // no type has this much memory (an instance type the region lacks is refused at the request)
    const id = await addMachine(model, { constraints: `mem=1000T ${IN_ZONES}` });
    const failed = await untilStatus(model, id, 'error');
    expect(failed.constraints).toBe(`mem=1048576000M ${IN_ZONES}`);
    expect(failed.message).toBe(
      `no instance types in us-east-1 matching constraints "mem=1048576000M ${IN_ZONES}"`,
    );
    const notInError = await api.post(`/v1/models/${model}/machines/${id}/retry`, {});
    expect(notInError.status).toBe(202); // in error: accepted, and it fails the same way again
    await eventually(
      () => temporal.workflow.getHandle(machineWorkflowId(model, id)).query(provisioningStateQuery),
      (s) => s.pass === 2 && s.phase === 'error',
      30_000,
    );

    const retried = await api.post(`/v1/models/${model}/machines/${id}/retry`, {
      constraints: `cores=2 ${IN_ZONES}`,
    });
    expect(retried.status).toBe(202);
    const running = await untilStatus(model, id, 'running');
    const type = expectedType(`cores=2 ${IN_ZONES}`);
    expect(running).toMatchObject({
      constraints: `cores=2 ${IN_ZONES}`,
      instanceType: type.name,
      hardware: { arch: 'amd64', cores: 2, mem: type.mem },
      message: '',
    });
    expect(ZONES).toContain(running.zone);
    const state = await provisioningState(model, id, 'running');
    expect(state).toMatchObject({ phase: 'running', pass: 3, attempt: 1, failedZones: [] });
  });
});

describe('teardown', () => {
  it("terminates a Dead machine's instance, waits for EC2 to say so, then removes the machine", async () => {
    const model = await newModel('dead');
    const id = await addMachine(model, { constraints: IN_ZONES });
    const { instanceId } = await untilStatus(model, id, 'running');
    const started = Date.now();
    expect((await api.delete(`/v1/models/${model}/machines/${id}`)).status).toBe(202);
    const gone = await eventually(
      () => api.get(`/v1/models/${model}/machines/${id}`),
      (r) => r.status === 404,
      30_000,
    );
    timing('destroy-machine to machine removed', started);
    expect(gone.body).toEqual({ error: { code: 'not-found', message: `machine ${id} not found` } });
    expect(await instanceState(instanceId)).toBe('terminated');
    // The API's destroy signal (signalWithStart) can land just after the
    // sweep's re-signal let the workflow finish, starting a run that finds the
    // machine gone and ends at once: wait for whichever run is latest to close.
    const closed = await eventually(
      () => temporal.workflow.getHandle(machineWorkflowId(model, id)).describe(),
      (d) => d.status.name !== 'RUNNING',
      10_000,
    );
    expect(closed.status.name).toBe('COMPLETED');
  });

  it('keeps the instance of a Dead machine when the harvest mode is none', async () => {
    const model = await newModel('keep', { harvestMode: 'none' });
    const id = await addMachine(model, { constraints: IN_ZONES });
    const { instanceId } = await untilStatus(model, id, 'running');
    expect((await api.delete(`/v1/models/${model}/machines/${id}`)).status).toBe(202);
    await eventually(
      () => api.get(`/v1/models/${model}/machines/${id}`),
      (r) => r.status === 404,
      30_000,
    );
    expect(await instanceState(instanceId)).toBe('running');
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
  });

  it('tears down every machine of a destroyed model, then the model goes', async () => {
    const model = await newModel('gone');
    const res = await api.post(`/v1/models/${model}/machines`, { count: 3, constraints: IN_ZONES });
    expect(res.status).toBe(201);
    const running = await eventually(
      () => status(model),
      (s) => Object.values<any>(s.machines).filter((m) => m.status === 'running').length === 3,
    );
    const instances = Object.values<any>(running.machines).map((m) => m.instanceId as string);
    const started = Date.now();
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
    await eventually(
      () => api.get(`/v1/models/${model}`),
      (r) => r.status === 404,
      30_000,
    );
    timing('destroy-model (3 machines) to model removed', started);
    for (const i of instances) expect(await instanceState(i)).toBe('terminated');
    // the sweeper walks on without the model: nothing of it is left to delete
    const sweeper = await temporal.workflow.getHandle(sweeperWorkflowId(TASK_QUEUE)).describe();
    expect(sweeper.status.name).toBe('RUNNING');
  });
});

describe('the model sweep', () => {
  it('terminates strays in harvest mode all, keeps owned instances, and restarts a missing workflow', async () => {
    const model = await newModel('sweepall', { harvestMode: 'all' });
    const id = await addMachine(model, { constraints: IN_ZONES });
    const running = await untilStatus(model, id, 'running');
    const handle = temporal.workflow.getHandle(machineWorkflowId(model, id));
    const firstRun = (await handle.describe()).runId;
    await handle.terminate('test: the sweep should restart it');

    // a duplicate launch for a live machine, and an instance for a machine that never existed
    const duplicate = await launchStray(model, id, running.imageId, running.instanceId);
    const orphan = await launchStray(model, '42', running.imageId, running.instanceId);
    const started = Date.now();

    await eventually(
      async () => [await instanceState(duplicate), await instanceState(orphan)],
      (states) => states.every((s) => s === 'terminated'),
      30_000,
    );
    timing('stray launched to terminated by the sweep (grace 2s, interval 5s)', started);
    expect(await instanceState(running.instanceId)).toBe('running');
    const restarted = await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'RUNNING' && d.runId !== firstRun,
      30_000,
    );
    expect(restarted.type).toBe('machine');
    // the new run finds the machine running and leaves it be
    const state = await eventually(
      () => handle.query(provisioningStateQuery),
      (s) => s.phase === 'running',
      10_000,
    );
    expect(state.instanceId).toBe(running.instanceId);
    expect((await machine(model, id)).instanceId).toBe(running.instanceId);
  });

  it('leaves strays alone in harvest mode none', async () => {
    const model = await newModel('sweepnone', { harvestMode: 'none' });
    const id = await addMachine(model, { constraints: IN_ZONES });
    const running = await untilStatus(model, id, 'running');
    const stray = await launchStray(model, '42', running.imageId, running.instanceId);
    // wait for two walks of the sweeper that ended after the stray was past its grace period
    // (a page ending then may have read the model before: the second one did not)
    const sweptAfter = Date.now() + 2000;
    await eventually(
      () => sweepPagesCompletedSince(temporal, sweptAfter),
      (pages) => pages >= 2,
      60_000,
    );
    expect(await instanceState(stray)).toBe('running');
    expect(await instanceState(running.instanceId)).toBe('running');
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [stray] }));
  });
});
