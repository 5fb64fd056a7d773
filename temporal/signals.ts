import type { InstanceState } from '../core';

/**
 * What EC2 says of a machine's instance, as the sweep and the state-change
 * handler signal it to the machine's workflow (`instanceState`).
 */
export interface InstanceObservation {
  instanceId: string;
  state: InstanceState;
}
