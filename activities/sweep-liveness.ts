import type { RegionalEc2 } from '../ec2/regional';
import { isRoutine, type InstanceChange, type InstanceState } from '../core';
import type { AddressChange } from '../ec2/addresses';
import type { DeploymentListing } from '../ec2/instance-listing';
import { instanceStates } from '../ec2/tags';
import type { ActivityDeps } from './deps';
import { SWEEP_MACHINE_LANES, inLanes } from './lanes';
import { activityLog } from './log';
import { instancesToAsk, watchedMachines, type SweptMachine } from './sweep-predicates';
import { errorText, signalFailed, signalMachine } from './sweep-signals';

/**
 * The liveness watch: what EC2 says of the watched machines' instances
 * (the listing, and EC2 asked by id where the listing cannot tell), routine
 * news written to the machines, every other change told to their workflows.
 */

/** The state EC2 gives each watched machine's instance, from the listing and asked by id. */
export async function observeInstances(
  ec2: RegionalEc2['ec2'],
  machines: readonly SweptMachine[],
  listing: DeploymentListing | undefined,
): Promise<Map<string, InstanceState>> {
  const { observed, ask } = instancesToAsk(watchedMachines(machines), listing?.states);
  if (ask.length > 0) {
    for (const [id, state] of await instanceStates(ec2, ask)) observed.set(id, state);
  }
  return observed;
}

/** Tells each machine's workflow what EC2 says of its instance; the workflow records it. */
async function signalChanges(
  deps: ActivityDeps,
  model: string,
  changes: readonly InstanceChange[],
): Promise<void> {
  for (const c of changes) {
    try {
      await signalMachine(deps, model, c.machineId, 'instanceState', [
        { instanceId: c.instanceId, state: c.state },
      ]);
    } catch (err) {
      signalFailed(model, c.machineId, 'instanceState', err);
    }
  }
}

/**
 * Routine news (`pending`, `running`: core/liveness.ts isRoutine) written to
 * each machine by the sweep itself, one UpdateItem with the addresses EC2
 * lists for it when they changed, SWEEP_MACHINE_LANES at a time. A machine
 * the write does not apply to (down, stopped, dying: its workflow decides) is
 * told by a signal instead; a failed write is said, and the next sweep sees
 * the same difference. Answers the machines whose addresses went with it.
 */
async function recordRoutine(
  deps: ActivityDeps,
  model: string,
  changes: readonly InstanceChange[],
  addresses: readonly AddressChange[],
): Promise<Set<string>> {
  const withAddresses = new Set<string>();
  const addressOf = new Map(addresses.map((a) => [a.machineId, a]));
  await inLanes(changes, SWEEP_MACHINE_LANES, async (c) => {
    const address = addressOf.get(c.machineId);
    let applied: boolean | 'stale';
    try {
      applied = await deps.store.recordRoutineInstanceState(
        model,
        c.machineId,
        c.instanceId,
        c.state,
        address?.instanceId === c.instanceId
          ? { privateAddress: address.privateAddress, publicAddress: address.publicAddress }
          : undefined,
      );
    } catch (err) {
      activityLog.warn('sweep: could not record the instance state; the next sweep tries again', {
        model,
        machineId: c.machineId,
        instanceId: c.instanceId,
        error: errorText(err),
      });
      return;
    }
    // 'stale': a pending the sweep read before a running landed; dropped, not signalled
    if (applied === 'stale') return;
    if (applied) {
      if (address?.instanceId === c.instanceId) withAddresses.add(c.machineId);
      return;
    }
    await signalChanges(deps, model, [c]);
  });
  return withAddresses;
}

/**
 * Routine news is written here, with the addresses EC2 lists in the same
 * write; the rest (losses, stops, a machine down or dying) is the workflow's
 * to decide. Answers the machines whose addresses were written with it.
 */
export async function tellChanges(
  deps: ActivityDeps,
  model: string,
  changes: readonly InstanceChange[],
  addresses: readonly AddressChange[],
): Promise<Set<string>> {
  const written = await recordRoutine(
    deps,
    model,
    changes.filter((c) => isRoutine(c.state)),
    addresses,
  );
  await signalChanges(
    deps,
    model,
    changes.filter((c) => !isRoutine(c.state)),
  );
  return written;
}
