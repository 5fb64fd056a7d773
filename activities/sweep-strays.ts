import type { RegionalEc2 } from '../ec2/regional';
import { terminateInstances } from '../ec2/instances';
import type { DeploymentListing } from '../ec2/instance-listing';
import { LIVE_STATES } from '../ec2/tags';
import type { ActivityDeps } from './deps';
import type { InstanceOwners } from './instance-owners';
import { selectStrays, type SweptInstance, type SweptMachine } from './sweep-predicates';

/**
 * Stray policy: live instances tagged for a model that no machine owns, past
 * the grace period, are terminated (the sweep asks only under the harvest
 * modes of core/harvest.ts; the choice is selectStrays in sweep-predicates.ts).
 */

/**
 * The live instances a listing holds for the model, with the machine each was
 * launched for (its batch's record: activities/instance-owners.ts).
 */
export async function strayCandidates(
  listing: DeploymentListing,
  model: string,
  modelUid: string | undefined,
  owners: InstanceOwners,
  machines: readonly SweptMachine[],
): Promise<SweptInstance[]> {
  const live = listing
    .tagged(model, modelUid)
    .filter((i) => i.InstanceId && LIVE_STATES.includes(i.State?.Name ?? ''));
  // only an instance no machine records can be a stray: only theirs need an owner
  const recorded = new Set(machines.flatMap((m) => (m.instanceId ? [m.instanceId] : [])));
  const owned = await owners.of(
    model,
    live.filter((i) => !recorded.has(i.InstanceId!)),
  );
  return live.map((i) => ({
    instanceId: i.InstanceId!,
    ...(owned.has(i.InstanceId!) ? { machineId: owned.get(i.InstanceId!) } : {}),
    ...(i.LaunchTime ? { launchTime: i.LaunchTime } : {}),
  }));
}

/** Terminates the model's strays the listing shows; answers their ids. */
export async function harvestStrays(
  deps: ActivityDeps,
  ec2: RegionalEc2['ec2'],
  input: {
    listing: DeploymentListing;
    model: string;
    modelUid: string | undefined;
    owners: InstanceOwners;
    machines: readonly SweptMachine[];
  },
): Promise<string[]> {
  const { listing, model, modelUid, owners, machines } = input;
  const instances = await strayCandidates(listing, model, modelUid, owners, machines);
  const strays = selectStrays({
    instances,
    machines,
    now: (deps.now ?? Date.now)(),
    graceMs: deps.tuning.strayGraceMs,
  });
  if (strays.length > 0) await terminateInstances(ec2, strays);
  return strays;
}
