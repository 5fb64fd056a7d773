import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { apiClient, eventually, uniqueName } from './api-client';
import { loadTestStack } from './stack';

/**
 * What the Temporal UI shows of a machine (issue 16), read from the shared
 * local stack's Temporal server as the UI reads it: the workflow's static
 * summary (its line in the list), its current details (the metadata query),
 * and the summaries of its activities in the event history. The shared
 * worker's tuning: 3 attempts (global-setup.ts).
 */

const stack = loadTestStack();
const api = apiClient(stack);
const IN_ZONES = 'zones=us-east-1a,us-east-1b,us-east-1c';
let connection: Connection;
let client: Client;

beforeAll(async () => {
  connection = await Connection.connect({ address: stack.temporalAddress });
  client = new Client({ connection, namespace: stack.temporalNamespace });
});
afterAll(async () => {
  await connection.close();
});

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function summary(e: HistoryEvent): string | undefined {
  const payload = e.userMetadata?.summary;
  return payload ? defaultPayloadConverter.fromPayload<string>(payload) : undefined;
}

/** A local activity's type, from its marker (the SDK's `core_local_activity` details). */
function localActivityType(e: HistoryEvent): string | undefined {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return undefined;
  const payload = marker.details?.data?.payloads?.[0];
  if (!payload) return '';
  const data = defaultPayloadConverter.fromPayload<{ activity_type?: string }>(payload);
  return data.activity_type ?? '';
}

/**
 * Activity type and summary of every activity the workflow scheduled, and
 * of every local activity it recorded (a machine's launch runs as one in its
 * first workflow task: LAUNCH_IN_TASK), in order.
 */
async function activitySummaries(workflowId: string): Promise<Array<[string, string?]>> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e): Array<[string, string?]> => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) return [[scheduled.activityType?.name ?? '', summary(e)]];
    const local = localActivityType(e);
    return local !== undefined ? [[local, summary(e)]] : [];
  });
}

/** Workflow ids a saved search (README, "The Temporal UI") finds, once visibility has caught up. */
function found(query: string, expected: string[]): Promise<string[]> {
  return eventually(
    async () => {
      const ids: string[] = [];
      for await (const w of client.workflow.list({ query })) ids.push(w.workflowId);
      return ids.sort();
    },
    (ids) => JSON.stringify(ids) === JSON.stringify(expected),
    20_000,
  );
}

function details(workflowId: string): Promise<string> {
  return client.workflow
    .getHandle(workflowId)
    .query(workflowMetadataQuery)
    .then((m) => m.currentDetails ?? '');
}

describe("a machine's story in the Temporal UI", () => {
  it('carries a summary, current details and activity summaries from launch to teardown', async () => {
    const model = uniqueName('story');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    const deployed = await api.post(`/v1/models/${model}/applications`, {
      name: 'web',
      base: 'ubuntu@24.04',
      constraints: IN_ZONES,
    });
    expect(deployed.status).toBe(201);
    const machineId = deployed.body.units[0].machine as string;
    const workflowId = machineWorkflowId(model, machineId);
    const m = (
      await eventually(
        () => api.get(`/v1/models/${model}/machines/${machineId}`),
        (r) => r.body?.status === 'running',
      )
    ).body;

    const handle = client.workflow.getHandle(workflowId);
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`Machine ${machineId} in model ${model}`);

    // EC2's `running` is written to the table without the workflow (README, "Liveness"): the
    // status answer says it, and the workflow's details name no routine state, never a stale one
    await eventually(
      () => api.get(`/v1/models/${model}/machines/${machineId}`),
      (r) => r.body?.instanceStatus === 'running',
      60_000,
    );
    const current = await eventually(
      () => details(workflowId),
      (d) => d.includes(`**instance** ${m.instanceId} (`),
      60_000,
    );
    expect(current.split('\n')).toEqual([
      `Machine ${machineId} in model ${model}`,
      '**status** running (running, attempt 1 of 3)',
      `**zone** ${m.zone}`,
      `**instance** ${m.instanceId} (${m.instanceType})`,
      '**applications** web',
      `**units** web/0`,
      `**constraints** ${m.constraints}`,
      // who asked (issue 24): the admin token's user
      '**requested by** admin',
    ]);

    // the README's saved searches: machines of an application, everything in a zone
    expect(
      await found(
        `ProvisionerModel = "${model}" AND ProvisionerApplications = "web" AND ExecutionStatus = "Running"`,
        [workflowId],
      ),
    ).toEqual([workflowId]);
    expect(
      await found(
        `ProvisionerModel = "${model}" AND ProvisionerZone = "${m.zone}" AND ExecutionStatus = "Running"`,
        [workflowId],
      ),
    ).toEqual([workflowId]);

    // the launch is made by the first read (LAUNCH_IN_READ): its line says so, no launch step ran
    const launched = await activitySummaries(workflowId);
    expect(launched.filter(([type]) => type === 'startInstance')).toEqual([]);
    expect(launched[0]).toEqual(['loadMachine', 'read the machine; plan, claim a zone and launch']);

    // teardown: the model is destroyed, the workflow terminates the instance and ends
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
    await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'COMPLETED',
      60_000,
    );
    // one-step teardown (issue 30): one activity releases, says `stopping`, searches,
    // terminates and waits; none of the step-by-step activities runs on a smooth destroy
    const all = await activitySummaries(workflowId);
    const teardownSteps = new Set([
      'tearDownMachine',
      'releaseZone',
      'instancesTaggedFor',
      'terminateInstances',
      'instancesNotTerminated',
    ]);
    expect(all.filter(([type]) => teardownSteps.has(type))).toEqual([
      ['tearDownMachine', `terminating instance ${m.instanceId}`],
    ]);
    // and the machine is removed (its record gone, its model with it)
    expect((await api.get(`/v1/models/${model}/machines/${machineId}`)).status).toBe(404);
  });

  it('shows a machine in error with its last error in its current details', async () => {
    const model = uniqueName('storyerr');
    expect((await api.post('/v1/models', { name: model })).status).toBe(201);
    const added = await api.post(`/v1/models/${model}/machines`, { base: 'ubuntu@26.04' });
    expect(added.status).toBe(201);
    const machineId = added.body.machines[0].id as string;
    const workflowId = machineWorkflowId(model, machineId);
    const current = await eventually(
      () => details(workflowId).catch(() => ''),
      (d) => d.includes('**status** error'),
      60_000,
    );
    expect(current.split('\n')).toEqual([
      `Machine ${machineId} in model ${model}`,
      '**status** error (error)',
      '**last error** no image found for base "ubuntu@26.04" (arch amd64) in region us-east-1',
      '**requested by** admin',
    ]);
    // the README's saved search: machines in error in a model
    const query = `ProvisionerModel = "${model}" AND ProvisionerStatus = "error" AND ExecutionStatus = "Running"`;
    expect(await found(query, [workflowId])).toEqual([workflowId]);
    expect((await api.delete(`/v1/models/${model}`)).status).toBe(202);
  });
});
