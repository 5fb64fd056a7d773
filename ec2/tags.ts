import {
  paginateDescribeInstances,
  type EC2Client,
  type Filter,
  type Instance,
} from '@aws-sdk/client-ec2';
import { batches, instanceState, type InstanceState } from '../core/liveness';
import { TAG_DEPLOYMENT, TAG_LAUNCH_BATCH, TAG_MODEL, TAG_MODEL_UID } from '../core/tags';

export { instanceState };

// The tag names live in core/tags.ts: the API (service/), the bench and the activities read them.
export {
  TAG_DEPLOYMENT,
  TAG_LAUNCH_BATCH,
  TAG_MACHINE,
  TAG_MODEL,
  TAG_MODEL_UID,
} from '../core/tags';

/** Instance states that still count as "this machine has an instance". */
export const LIVE_STATES = ['pending', 'running', 'stopping', 'stopped'];

/**
 * The tags every instance of a launch batch carries, set by its RunInstances
 * (TagSpecifications): no call per instance. Nothing names the machine: an
 * instance's machine is the batch member at its AmiLaunchIndex
 * (activities/instance-owners.ts), or the machine that records its id (the
 * table's byInstance index). `Name` is the model's name, so EC2's console
 * groups a model's instances; a per-machine Name would cost a call each.
 */
export function launchTags(input: {
  model: string;
  deployment: string;
  batchId: string;
  modelUid?: string;
}): Array<{ Key: string; Value: string }> {
  return [
    { Key: 'Name', Value: input.model },
    { Key: TAG_MODEL, Value: input.model },
    ...(input.modelUid ? [{ Key: TAG_MODEL_UID, Value: input.modelUid }] : []),
    { Key: TAG_DEPLOYMENT, Value: input.deployment },
    { Key: TAG_LAUNCH_BATCH, Value: input.batchId },
  ];
}

export function tagValue(instance: Instance, key: string): string | undefined {
  return instance.Tags?.find((t) => t.Key === key)?.Value;
}

async function describeAll(ec2: EC2Client, filters: Filter[]): Promise<Instance[]> {
  const found: Instance[] = [];
  const pages = paginateDescribeInstances({ client: ec2, pageSize: 1000 }, { Filters: filters });
  for await (const page of pages) {
    for (const r of page.Reservations ?? []) found.push(...(r.Instances ?? []));
  }
  return found;
}

type ModelScope = { deployment: string; model: string; modelUid?: string };

/** The tag filters of one model's instances in this deployment. */
function modelFilters(scope: ModelScope): Filter[] {
  const filters: Filter[] = [
    { Name: `tag:${TAG_DEPLOYMENT}`, Values: [scope.deployment] },
    { Name: `tag:${TAG_MODEL}`, Values: [scope.model] },
  ];
  // a model re-created under the same name is another model: its uid tells their instances apart
  if (scope.modelUid) filters.push({ Name: `tag:${TAG_MODEL_UID}`, Values: [scope.modelUid] });
  return filters;
}

/** Oldest first; launched together, by instance id. */
const oldestFirst = (a: Instance, b: Instance): number =>
  (a.LaunchTime?.getTime() ?? 0) - (b.LaunchTime?.getTime() ?? 0) ||
  (a.InstanceId ?? '').localeCompare(b.InstanceId ?? '');

/** This deployment's live instances tagged for one model, oldest first (pages of 1,000). */
export async function liveInstancesTagged(ec2: EC2Client, scope: ModelScope): Promise<Instance[]> {
  const filters = [...modelFilters(scope), { Name: 'instance-state-name', Values: LIVE_STATES }];
  return (await describeAll(ec2, filters)).sort(oldestFirst);
}

/**
 * EC2 takes at most 200 values in the filters of one DescribeInstances
 * (FilterLimitExceeded: "The maximum number of filter values specified on a
 * single call is 200"), so an `instance-id` filter carries at most this many.
 */
export const MAX_FILTER_VALUES = 200;

/**
 * EC2's state of each of `instanceIds` that EC2 still lists, in batches of up
 * to 200 ids per DescribeInstances call (MAX_FILTER_VALUES). The ids go in an `instance-id`
 * filter, not `InstanceIds`: EC2 answers InvalidInstanceID.NotFound for a
 * whole call when one id is unknown, while a filter just leaves it out (the
 * caller counts an id missing from the answer as `unknown`). `onInstance`
 * sees each instance listed, with its state (the rest of what EC2 said of it).
 *
 * With `only`, EC2 lists only the instances in those states (an
 * `instance-state-name` filter beside the ids, whose values count in the
 * call's 200: the ids go fewer a call, 199 with one state): the others are
 * left out of the answer, so a caller that acts on a few states does not
 * have EC2's whole description of every other instance (some 3 KB of XML
 * each) parsed. An id missing from such an answer is then NOT gone from EC2,
 * only in another state: a caller that counts a missing id as `unknown`
 * (liveness, teardown) must not pass `only`.
 */
export async function instanceStates(
  ec2: EC2Client,
  instanceIds: readonly string[],
  onInstance?: (instance: Instance, state: InstanceState) => void,
  only?: readonly Exclude<InstanceState, 'unknown'>[],
): Promise<Map<string, InstanceState>> {
  const states = new Map<string, InstanceState>();
  const stateFilter: Filter[] =
    only && only.length > 0 ? [{ Name: 'instance-state-name', Values: [...only] }] : [];
  const idsPerCall = MAX_FILTER_VALUES - (stateFilter[0]?.Values?.length ?? 0);
  for (const batch of batches([...new Set(instanceIds)], idsPerCall)) {
    const pages = paginateDescribeInstances(
      { client: ec2, pageSize: 1000 },
      { Filters: [{ Name: 'instance-id', Values: batch }, ...stateFilter] },
    );
    for await (const page of pages) {
      for (const i of (page.Reservations ?? []).flatMap((r) => r.Instances ?? [])) {
        const state = instanceState(i);
        if (i.InstanceId && state) {
          states.set(i.InstanceId, state);
          onInstance?.(i, state);
        }
      }
    }
  }
  return states;
}

/**
 * Every instance of this deployment tagged for one model, in any state (the
 * sweep's one listing serves both strays and liveness), pages of 1,000.
 */
export async function instancesTaggedAnyState(
  ec2: EC2Client,
  scope: ModelScope,
): Promise<Instance[]> {
  return (await describeAll(ec2, modelFilters(scope))).sort(oldestFirst);
}
