import { isConfirmedGone, observedState, type InstanceState } from '../core';
import type { Life, MachineStatus } from '../state/types';

/**
 * Reprovisioning policy: which machines the sweep launches again by itself
 * (their instance confirmed gone by its own look at EC2), capped per sweep.
 */

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
