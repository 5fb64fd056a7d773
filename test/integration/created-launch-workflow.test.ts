import { Client, Connection } from '@temporalio/client';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { recordHistory } from './histories';
import { apiClient, eventually, uniqueName } from './api-client';
import { loadTestStack } from './stack';

/**
 * add-machine on the local stack (issue 26): the machine's workflow is
 * started with what the request wrote (`created`), its first step plans and
 * claims from that, and the machine runs. With
 * PROVISIONER_RECORD_HISTORIES=<dir> the run's history is written there as
 * `machine-created-launch.json` (the replay test's folder).
 */
const stack = loadTestStack();
const api = apiClient(stack);
let temporal: Client | undefined;

afterAll(async () => {
  await temporal?.connection.close();
});

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

  temporal ??= new Client({
    connection: await Connection.connect({ address: stack.temporalAddress }),
    namespace: stack.temporalNamespace,
  });
  const workflowId = machineWorkflowId(model, '0');
  const handle = temporal.workflow.getHandle(workflowId);
  const history = await handle.fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const input = JSON.parse(
    Buffer.from(started?.input?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8'),
  ) as { created?: Record<string, unknown> };
  expect(input.created).toMatchObject({
    region: stack.region,
    availabilitySets: false,
    // as the machine records them (canonical)
    constraints: 'mem=2048M',
    applications: [],
  });
  expect(input.created?.modelUid).toMatch(/^[0-9a-f-]{36}$/);
  // its first step planned and claimed from it, reading nothing (not the read path it falls
  // back to): the first local activity's answer says so
  const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes);
  expect(markers.length).toBeGreaterThanOrEqual(1);
  const answer = JSON.parse(
    Buffer.from(
      markers[0]!.markerRecordedEventAttributes!.details?.result?.payloads?.[0]?.data ??
        new Uint8Array(),
    ).toString('utf8'),
  ) as { prepared?: { fromCreation?: boolean; zone?: string } };
  expect(answer.prepared?.fromCreation).toBe(true);
  expect(answer.prepared?.zone).toBe(running.body.zone);
  const { runId } = await handle.describe();
  await recordHistory(stack, workflowId, runId, 'machine-created-launch.json');
});
