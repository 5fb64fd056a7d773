import { isConfirmedGone, isContainerMachineId, observedState, type InstanceState } from '../core';
import type { Life, MachineStatus } from '../state/types';

/**
 * The sweep's pure predicates, in one place: which machines liveness watches,
 * which of their instances EC2 is asked about by id, which live instances are
 * strays, which machines are reprovisioned. No I/O: the policy files
 * (sweep-liveness.ts, sweep-strays.ts, sweep-reprovision.ts) act on what these
 * choose. Which harvest modes harvest at all is core/harvest.ts; what an
 * instance state means (lost, confirmed gone, routine) is core/liveness.ts.
 */

/** A machine as the sweep reads it. */
export interface SweptMachine {
  id: string;
  life: Life;
  status: MachineStatus;
  instanceId?: string;
  instanceStatus?: InstanceState;
  instanceRecordedAt?: string;
  updatedAt?: string;
  manual?: boolean;
  privateAddress?: string;
  publicAddress?: string;
}

/** A live instance tagged for the model, as the stray policy weighs it. */
export interface SweptInstance {
  instanceId: string;
  /** The machine the instance is tagged for. */
  machineId?: string;
  launchTime?: Date;
}

/** Machines whose instance liveness watches: launched by us, with an instance recorded, not Dead. */
export function watchedMachines(machines: readonly SweptMachine[]): SweptMachine[] {
  return machines.filter(
    (m) =>
      m.instanceId !== undefined && !m.manual && !isContainerMachineId(m.id) && m.life !== 'dead',
  );
}

/**
 * What a listing already tells of the watched machines' instances, and which
 * ids EC2 must be asked about by id: one missing from the listing (launched
 * after it, or gone) unless the listing already saw it gone, and one whose
 * listed state differs from the recorded one (the listing may be older than
 * a state-change event recorded since, so a stale listing never undoes a
 * newer state). With no listing every watched instance is asked.
 */
export function instancesToAsk(
  watched: readonly SweptMachine[],
  listed: ReadonlyMap<string, InstanceState> | undefined,
): { observed: Map<string, InstanceState>; ask: string[] } {
  const observed = new Map<string, InstanceState>();
  const ask: string[] = [];
  for (const m of watched) {
    const id = m.instanceId!;
    const state = listed?.get(id);
    if (state === undefined) {
      if (!listed || m.instanceStatus !== 'unknown') ask.push(id);
    } else if (state !== m.instanceStatus) {
      ask.push(id);
    } else {
      observed.set(id, state);
    }
  }
  return { observed, ask };
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
 * The machines the sweep reprovisions by itself (`reprovisionLost`): alive,
 * their instance confirmed gone by this sweep's own look at EC2, at most
 * `cap` per sweep so a region-wide event does not stampede.
 */
export function selectReprovisions(input: {
  machines: readonly SweptMachine[];
  observed: ReadonlyMap<string, InstanceState>;
  cap: number;
  now: number;
}): Array<{ machineId: string; instanceId: string }> {
  return input.machines
    .filter((m) => {
      if (m.life !== 'alive' || m.manual || m.instanceId === undefined) return false;
      // a just-launched instance EC2 does not list yet (eventual consistency) is not gone
      const seen = observedState(m, input.observed.get(m.instanceId), input.now);
      return seen !== undefined && isConfirmedGone(seen);
    })
    .slice(0, input.cap)
    .map((m) => ({ machineId: m.id, instanceId: m.instanceId! }));
}
