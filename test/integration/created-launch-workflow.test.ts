import { Client, Connection } from '@temporalio/client';
import { Repository } from '../../state/repository';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { recordHistory } from './histories';
import { apiClient, eventually, uniqueName } from './api-client';
import { pendingMachine } from './fixtures';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * add-machine on the local stack (issue 26): the machine's workflow is
 * started with what the request wrote (`created`), its first step plans and
 * claims from that and launches, and the machine runs: one local activity in
 * the run's first workflow task (LAUNCH_IN_READ, workflows/patches.ts). With
 * PROVISIONER_RECORD_HISTORIES=<dir> the run's history is written there as
 * `machine-launch-in-read.json` (the replay test's folder); its namesakes
 * before, `machine-created-launch.json` (the launch an activity of its own,
 * in a second workflow task) and `machine-launch-in-task.json` (the launch a
 * second local activity of the first task), are kept as they were recorded.
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
let temporal: Client | undefined;

afterAll(async () => {
  await temporal?.connection.close();
  ddb.destroy();
});

async function temporalClient(): Promise<Client> {
  temporal ??= new Client({
    connection: await Connection.connect({ address: stack.temporalAddress }),
    namespace: stack.temporalNamespace,
  });
  return temporal;
}

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;

/**
 * The machine's history once its first workflow task completed. The launch
 * records the machine `running` from within that task (LAUNCH_IN_TASK, the
 * launch a local activity that records its instance), so the API may say
 * `running` a moment before the task's events are in the history.
 */
async function historyOnceLaunched(workflowId: string): Promise<History> {
  const handle = (await temporalClient()).workflow.getHandle(workflowId);
  return eventually(
    () => handle.fetchHistory(),
    (h) => (h.events ?? []).some((e) => e.workflowTaskCompletedEventAttributes),
    60_000,
  );
}

/** The machine workflow's start input, as the history recorded it. */
function startInput(history: History): { created?: Record<string, unknown> } {
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  return JSON.parse(
    Buffer.from(started?.input?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8'),
  ) as { created?: Record<string, unknown> };
}

/** The first local activity's answer (the launch's plan, claim and instance). */
function firstStep(history: History): {
  prepared?: { fromCreation?: boolean; zone?: string; launched?: { instanceId?: string } };
} {
  const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes);
  expect(markers.length).toBeGreaterThanOrEqual(1);
  return JSON.parse(
    Buffer.from(
      markers[0]!.markerRecordedEventAttributes!.details?.result?.payloads?.[0]?.data ??
        new Uint8Array(),
    ).toString('utf8'),
  ) as { prepared?: { fromCreation?: boolean; zone?: string; launched?: { instanceId?: string } } };
}

/** What a local activity's marker says of it: its type, and the workflow task that ran it. */
function localActivities(history: History): Array<{ type: string; task: number }> {
  return (history.events ?? [])
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
    .map((e) => {
      const attributes = e.markerRecordedEventAttributes!;
      const data = JSON.parse(
        Buffer.from(attributes.details?.data?.payloads?.[0]?.data ?? new Uint8Array()).toString(
          'utf8',
        ),
      ) as { activity_type?: string };
      return {
        type: data.activity_type ?? '',
        task: Number(attributes.workflowTaskCompletedEventId),
      };
    });
}

/** The event ids of the run's completed workflow tasks, in order. */
function completedTasks(history: History): number[] {
  return (history.events ?? [])
    .filter((e) => e.workflowTaskCompletedEventAttributes)
    .map((e) => Number(e.eventId));
}

/**
 * The launch ran in the run's first workflow task, in its first read
 * (LAUNCH_IN_READ): that read is the task's one local activity and its
 * answer carries the instance; no launch step ran, as an activity or a
 * local one; and the machine's `running` was published by that same task
 * (one upsert).
 */
function expectLaunchedInFirstTask(history: History, instanceId: string): void {
  const [first] = completedTasks(history);
  expect(localActivities(history).filter((a) => a.task === first)).toEqual([
    { type: 'loadMachine', task: first },
  ]);
  expect(firstStep(history).prepared?.launched?.instanceId).toBe(instanceId);
  const scheduled = (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
  expect(scheduled).not.toContain('startInstance');
  expect(localActivities(history).map((a) => a.type)).not.toContain('startInstance');
  const upserts = (history.events ?? []).filter(
    (e) => e.upsertWorkflowSearchAttributesEventAttributes,
  );
  expect(upserts.length).toBeGreaterThanOrEqual(1);
  expect(
    Number(upserts[0]!.upsertWorkflowSearchAttributesEventAttributes!.workflowTaskCompletedEventId),
  ).toBe(first);
  expect(
    (firstStep(history) as { prepared?: { launchInTask?: boolean } }).prepared?.launchInTask,
  ).toBe(true);
}

it('starts the workflow with what add-machine wrote and runs the machine from it', async () => {
  const model = uniqueName('created');
  const made = await api.post('/v1/models', { name: model });
  expect(made.status).toBe(201);
  const added = await api.post(`/v1/models/${model}/machines`, { constraints: 'mem=2G' });
  expect(added.status).toBe(201);
  const running = await eventually(
    () => api.get(`/v1/models/${model}/machines/0`),
    (res) => res.body?.status === 'running',
    120_000,
  );
  expect(running.body.instanceId).toMatch(/^i-/);

  const workflowId = machineWorkflowId(model, '0');
  const handle = (await temporalClient()).workflow.getHandle(workflowId);
  const history = await historyOnceLaunched(workflowId);
  const input = startInput(history);
  expect(input.created).toMatchObject({
    region: stack.region,
    availabilitySets: false,
    // as the machine records them (canonical)
    constraints: 'mem=2048M',
    applications: [],
  });
  expect(input.created?.modelUid).toMatch(/^[0-9a-f-]{36}$/);
  // the machine records who asked, for a workflow the sweep may start for it later
  expect((await new Repository(ddb, stack.tableName).getMachine(model, '0')).requestedBy).toBe(
    'admin',
  );
  // its first step planned and claimed from it, reading nothing (not the read path it falls
  // back to): the first local activity's answer says so
  const answer = firstStep(history);
  expect(answer.prepared?.fromCreation).toBe(true);
  expect(answer.prepared?.zone).toBe(running.body.zone);
  // and launched in the same step: one task and one local activity until the machine ran
  expectLaunchedInFirstTask(history, running.body.instanceId as string);
  const { runId } = await handle.describe();
  await recordHistory(stack, workflowId, runId, 'machine-launch-in-read.json');
});

it('hands a machine the sweep finds without a workflow its creation too', async () => {
  // a machine written as add-machine writes it, whose workflow never started (a request
  // cut off after its write): the model's sweep starts it
  const model = uniqueName('swept');
  expect((await api.post('/v1/models', { name: model })).status).toBe(201);
  const repo = new Repository(ddb, stack.tableName);
  const { uid } = await repo.getModel(model);
  const [id] = await repo.allocateMachineIds(model, 1);
  await repo.putNewMachines([
    pendingMachine(model, id!, { constraints: 'mem=2048M', modelUid: uid, requestedBy: 'carol' }),
  ]);
  const running = await eventually(
    () => api.get(`/v1/models/${model}/machines/${id!}`),
    (res) => res.body?.status === 'running',
    180_000,
  );
  const history = await historyOnceLaunched(machineWorkflowId(model, id!));
  expect(startInput(history).created).toEqual({
    modelUid: uid,
    region: stack.region,
    availabilitySets: false,
    base: 'ubuntu@24.04',
    constraints: 'mem=2048M',
    applications: [],
  });
  // and names who asked, as the request's own start would (API.md, "Audit")
  expect((startInput(history) as { requestedBy?: string }).requestedBy).toBe('carol');
  const answer = firstStep(history);
  expect(answer.prepared?.fromCreation).toBe(true);
  expect(answer.prepared?.zone).toBe(running.body.zone);
  expectLaunchedInFirstTask(history, running.body.instanceId as string);
});

it('hands deploy and add-unit machines their creation: the application is their group', async () => {
  const model = uniqueName('deployed');
  expect((await api.post('/v1/models', { name: model })).status).toBe(201);
  const deployed = await api.post(`/v1/models/${model}/applications`, {
    name: 'db',
    base: 'ubuntu@22.04',
    constraints: 'mem=2G',
    numUnits: 2,
  });
  expect(deployed.status).toBe(201);
  // more than one unit without placement: add-unit's bulk write
  const added = await api.post(`/v1/models/${model}/applications/db/units`, { count: 3 });
  expect(added.status).toBe(201);
  const units = [
    ...(deployed.body.units as Array<{ name: string; machine: string }>),
    ...(added.body.units as Array<{ name: string; machine: string }>),
  ];
  const machines = units.map((u) => u.machine);
  expect(machines).toHaveLength(5);
  const repo = new Repository(ddb, stack.tableName);
  const { uid } = await repo.getModel(model);
  for (const id of machines) {
    const running = await eventually(
      () => api.get(`/v1/models/${model}/machines/${id}`),
      (res) => res.body?.status === 'running',
      180_000,
    );
    const history = await historyOnceLaunched(machineWorkflowId(model, id));
    expect([id, startInput(history).created]).toEqual([
      id,
      {
        modelUid: uid,
        region: stack.region,
        availabilitySets: false,
        base: 'ubuntu@22.04',
        constraints: 'mem=2048M',
        applications: ['db'],
        // its own unit, not the request's map of them
        principals: [units.find((u) => u.machine === id)!.name],
      },
    ]);
    // the claim held: the machine was exactly as handed (its unit, its application)
    expect([id, firstStep(history).prepared?.fromCreation]).toEqual([id, true]);
    expect([id, (await repo.getMachine(model, id)).requestedBy]).toEqual([id, 'admin']);
    expect(running.body.zone).toBe(firstStep(history).prepared?.zone);
    expectLaunchedInFirstTask(history, running.body.instanceId as string);
  }
  // spread over the stack's zones as before (least populous first within the application)
  const zones = new Map<string, number>();
  for (const id of machines) {
    const m = await api.get(`/v1/models/${model}/machines/${id}`);
    zones.set(m.body.zone as string, (zones.get(m.body.zone as string) ?? 0) + 1);
  }
  const counts = [...zones.values()];
  expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
});
