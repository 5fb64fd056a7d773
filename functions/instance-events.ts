import type { Context } from 'aws-lambda';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { isInstanceState, isRoutine } from '../core/liveness';
import { dynamoDbClient, temporalClient } from '../config/clients';
import { logger } from '../config/logger';
import { serviceEndpoints } from '../config/env';
import { temporalApiKey } from '../service/context';
import { ProvisioningStore } from '../state/provisioning';
import { Repository } from '../state/repository';
import type { InstanceObservation } from '../temporal/signals';
import { machineWorkflowId } from '../temporal/search-attributes';

/** EventBridge's "EC2 Instance State-change Notification", as AWS documents it. */
const StateChange = z.object({
  'detail-type': z.literal('EC2 Instance State-change Notification'),
  source: z.literal('aws.ec2'),
  region: z.string(),
  detail: z.object({ 'instance-id': z.string(), state: z.string() }),
});

export type StateChangeEvent = z.infer<typeof StateChange>;

export interface InstanceEventDeps {
  /**
   * The machine that records the instance (the table's byInstance index), or
   * undefined: not this deployment's, not recorded yet, or recorded no more.
   */
  machineOf(instanceId: string): Promise<{ model: string; machineId: string } | undefined>;
  /**
   * Writes routine news to the machine itself, only while it is alive,
   * `running`, records the instance and records it starting or running
   * (ProvisioningStore.recordRoutineInstanceState); false when the write
   * did not apply and the machine's workflow is to be told instead;
   * `'stale'` for a refused `pending`, dropped (read back nothing: a late
   * one, or the start of a stopped instance whose `running` is told).
   */
  recordRoutine(
    machine: { model: string; machineId: string },
    observation: InstanceObservation,
  ): Promise<boolean | 'stale'>;
  /**
   * Writes news of a Dead machine's instance (not routine: shutting down,
   * terminated, stopped) to the machine, only while it is Dead and records
   * the instance (ProvisioningStore.recordDeadInstanceState); false when the
   * write did not apply and the workflow is to be told instead. Its teardown
   * asks EC2 itself: the news costs no workflow task.
   */
  recordDead(
    machine: { model: string; machineId: string },
    observation: InstanceObservation,
  ): Promise<boolean>;
  signal(workflowId: string, observation: InstanceObservation): Promise<void>;
}

export type InstanceEventOutcome =
  | { recorded: string }
  | { signalled: string }
  | { ignored: 'not-ours' | 'unknown-state' | 'no-workflow' | 'stale' };

/**
 * Maps the instance to the machine that records it (the table is this
 * deployment's, so an instance of another deployment, of an older model of
 * the same name, or one no machine records is found nowhere). Routine news
 * (`pending`, `running`: core/liveness.ts isRoutine) of a machine that runs
 * is written to the machine here, one UpdateItem and no workflow task; any
 * other state, or routine news of a machine down, stopped or dying, is
 * signalled to the machine's workflow, which records it if the machine still
 * records that instance and acts on it (down, back up, reprovision). The
 * instance carries no per-machine tag (tagging each instance after a
 * batched launch would cost a call per instance); an instance launched a
 * moment ago and not recorded yet is left to its workflow, which records
 * its state as it records the launch, and to the model's sweep.
 */
export async function handleInstanceEvent(
  deps: InstanceEventDeps,
  raw: unknown,
): Promise<InstanceEventOutcome> {
  const event = StateChange.parse(raw);
  const instanceId = event.detail['instance-id'];
  const state = event.detail.state;
  if (!isInstanceState(state)) return { ignored: 'unknown-state' };
  const machine = await deps.machineOf(instanceId);
  if (!machine) return { ignored: 'not-ours' };
  const workflowId = machineWorkflowId(machine.model, machine.machineId);
  if (isRoutine(state)) {
    const written = await deps.recordRoutine(machine, { instanceId, state });
    // a late pending of an instance recorded running: the workflow has nothing to act on
    if (written === 'stale') return { ignored: 'stale' };
    if (written) return { recorded: workflowId };
  } else if (await deps.recordDead(machine, { instanceId, state })) {
    // a Dead machine's instance going: its teardown hears it from EC2
    return { recorded: workflowId };
  }
  try {
    await deps.signal(workflowId, { instanceId, state });
  } catch (err) {
    // the machine is gone (or its workflow is, and the sweep restarts it and catches up)
    if (err instanceof WorkflowNotFoundError) return { ignored: 'no-workflow' };
    throw err;
  }
  return { signalled: workflowId };
}

let deps: InstanceEventDeps | undefined;

function cloudDeps(): InstanceEventDeps {
  if (deps) return deps;
  const endpoints = serviceEndpoints();
  const ddb = dynamoDbClient(endpoints);
  const repo = new Repository(ddb, endpoints.tableName);
  const store = new ProvisioningStore(ddb, endpoints.tableName);
  // connected at the first signal: routine news needs no Temporal at all
  let temporal: ReturnType<typeof temporalClient> | undefined;
  const connected = () =>
    (temporal ??= temporalApiKey()
      .then((apiKey) =>
        temporalClient({
          address: endpoints.temporalAddress,
          namespace: endpoints.temporalNamespace,
          apiKey,
        }),
      )
      .catch((err: unknown) => {
        temporal = undefined; // the next event connects again
        throw err;
      }));
  deps = {
    machineOf: (instanceId) => repo.machineByInstance(instanceId),
    // no read-back of a refused pending: the role names only the write's attributes (IAM)
    recordRoutine: (machine, seen) =>
      store.recordRoutineInstanceState(
        machine.model,
        machine.machineId,
        seen.instanceId,
        seen.state,
        undefined,
        { readBack: false },
      ),
    recordDead: (machine, seen) =>
      store.recordDeadInstanceState(machine.model, machine.machineId, seen.instanceId, seen.state),
    async signal(workflowId, observation) {
      await (await connected()).workflow.getHandle(workflowId).signal('instanceState', observation);
    },
  };
  return deps;
}

/** The EventBridge target: one state-change event per invocation. */
export async function handler(event: unknown, context?: Context): Promise<InstanceEventOutcome> {
  if (context) logger.addContext(context);
  const detail = (event as { detail?: { 'instance-id'?: unknown; state?: unknown } } | null)
    ?.detail;
  const instanceId = detail?.['instance-id'];
  logger.appendKeys({
    route: 'instance-state-change',
    ...(typeof instanceId === 'string' ? { instanceId } : {}),
  });
  try {
    const outcome = await handleInstanceEvent(cloudDeps(), event);
    logger.info('instance state change', { outcome });
    return outcome;
  } finally {
    logger.resetKeys();
  }
}
