import { DescribeTagsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { isInstanceState } from '../core/liveness';
import { TAG_DEPLOYMENT, TAG_MACHINE, TAG_MODEL, TAG_MODEL_UID } from '../activities/tags';
import { dynamoDbClient, localCredentialsFor, temporalClient } from '../config/clients';
import { logger } from '../config/logger';
import { requireEnv, serviceEndpoints } from '../config/env';
import { temporalApiKey } from '../service/context';
import { EntityNotFoundError } from '../state/errors';
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
  /** The instance's tags (DescribeTags): empty when EC2 no longer knows it. */
  tagsOf(region: string, instanceId: string): Promise<Record<string, string>>;
  /** The model's uid, or undefined when the model is gone. */
  modelUid(model: string): Promise<string | undefined>;
  signal(workflowId: string, observation: InstanceObservation): Promise<void>;
  deployment: string;
}

export type InstanceEventOutcome =
  | { signalled: string }
  | { ignored: 'not-ours' | 'unknown-state' | 'model-gone' | 'other-model' | 'no-workflow' };

/**
 * Maps the instance to its machine by the tags the provisioner set (the
 * deployment, model, model uid and machine) and signals the machine's
 * workflow, which records the state if the machine still records that
 * instance. Instances of other deployments, or of an older model of the
 * same name, are ignored.
 */
export async function handleInstanceEvent(
  deps: InstanceEventDeps,
  raw: unknown,
): Promise<InstanceEventOutcome> {
  const event = StateChange.parse(raw);
  const instanceId = event.detail['instance-id'];
  const state = event.detail.state;
  if (!isInstanceState(state)) return { ignored: 'unknown-state' };
  const tags = await deps.tagsOf(event.region, instanceId);
  const model = tags[TAG_MODEL];
  const machineId = tags[TAG_MACHINE];
  if (tags[TAG_DEPLOYMENT] !== deps.deployment || !model || machineId === undefined) {
    return { ignored: 'not-ours' };
  }
  const uid = await deps.modelUid(model);
  if (uid === undefined) return { ignored: 'model-gone' };
  if (tags[TAG_MODEL_UID] !== undefined && tags[TAG_MODEL_UID] !== uid) {
    return { ignored: 'other-model' };
  }
  const workflowId = machineWorkflowId(model, machineId);
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
  const repo = new Repository(dynamoDbClient(endpoints), endpoints.tableName);
  const clients = new Map<string, EC2Client>();
  const ec2 = (region: string) => {
    let c = clients.get(region);
    if (!c) {
      c = new EC2Client({
        region,
        endpoint: endpoints.ec2Endpoint,
        credentials: localCredentialsFor(endpoints.ec2Endpoint),
      });
      clients.set(region, c);
    }
    return c;
  };
  const temporal = temporalApiKey().then((apiKey) =>
    temporalClient({
      address: endpoints.temporalAddress,
      namespace: endpoints.temporalNamespace,
      apiKey,
    }),
  );
  deps = {
    deployment: requireEnv('PROVISIONER_DEPLOYMENT'),
    async tagsOf(region, instanceId) {
      const out = await ec2(region).send(
        new DescribeTagsCommand({
          Filters: [
            { Name: 'resource-id', Values: [instanceId] },
            { Name: 'resource-type', Values: ['instance'] },
          ],
        }),
      );
      return Object.fromEntries(
        (out.Tags ?? []).flatMap((t) => (t.Key && t.Value !== undefined ? [[t.Key, t.Value]] : [])),
      );
    },
    async modelUid(model) {
      try {
        return (await repo.getModel(model)).uid;
      } catch (err) {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      }
    },
    async signal(workflowId, observation) {
      await (await temporal).workflow.getHandle(workflowId).signal('instanceState', observation);
    },
  };
  return deps;
}

/** The EventBridge target: one state-change event per invocation. */
export async function handler(event: unknown): Promise<InstanceEventOutcome> {
  const outcome = await handleInstanceEvent(cloudDeps(), event);
  logger.info('instance state change', { outcome });
  return outcome;
}
