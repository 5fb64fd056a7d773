import type { DeploymentListing } from '../ec2/instance-listing';
import { LIVE_STATES } from '../ec2/tags';
import type { InstanceOwners } from './instance-owners';
import type { SweptMachine } from './sweep-reprovision';

/**
 * Stray policy: which live instances tagged for a model no machine owns, past
 * the grace period (harvested only under the harvest modes of core/harvest.ts).
 */

export interface SweptInstance {
  instanceId: string;
  /** The machine the instance is tagged for. */
  machineId?: string;
  launchTime?: Date;
}

/**
 * Instances tagged for the model that no live machine owns (DESIGN.md: an
 * instance belongs to a machine only if the machine records its id), older
 * than the grace period. Spared too: an instance tagged for a machine whose
 * launch is still in flight (alive, pending or allocating, no instance
 * recorded yet), which its workflow is about to adopt or record.
 */
export function selectStrays(input: {
  instances: readonly SweptInstance[];
  machines: readonly SweptMachine[];
  now: number;
  graceMs: number;
}): string[] {
  const owned = new Set(
    input.machines.flatMap((m) => (m.life !== 'dead' && m.instanceId ? [m.instanceId] : [])),
  );
  const launching = new Set(
    input.machines
      .filter(
        (m) =>
          m.life !== 'dead' &&
          !m.instanceId &&
          (m.status === 'pending' || m.status === 'allocating'),
      )
      .map((m) => m.id),
  );
  return input.instances
    .filter((i) => {
      if (owned.has(i.instanceId)) return false;
      if (!i.launchTime || input.now - i.launchTime.getTime() < input.graceMs) return false;
      return !(i.machineId !== undefined && launching.has(i.machineId));
    })
    .map((i) => i.instanceId);
}

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
