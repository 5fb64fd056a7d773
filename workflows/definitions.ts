import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { InstanceState } from '../core/liveness';
import type { CreatedMachine } from '../temporal/created-machine';
import type { InstanceObservation } from '../temporal/signals';

export type { CreatedMachine };

/**
 * Signals, queries and inputs of the provisioner's workflows. Kept apart from
 * the workflow functions so API code can import them without pulling in
 * activity proxies.
 */

export interface MachineWorkflowInput {
  model: string;
  machineId: string;
  /** The user whose request created the machine (shown in its details). */
  requestedBy?: string;
  /** What a run hands to the next one on continue-as-new. */
  carried?: CarriedState;
  /**
   * What the request that created the machine wrote of it and of its model
   * (issue 26): the first run's first step plans and claims from this instead
   * of reading the machine and the model. Only a claim that finds the machine
   * exactly so (created in this model, alive, pending, no instance, this
   * base, these constraints, placement and applications, counted nowhere) is
   * kept; anything else and the step reads the machine as before.
   * Absent in runs started otherwise (the sweep, a signal, older requests).
   */
  created?: CreatedMachine;
}

export interface CarriedState {
  /**
   * What this object is, for a person reading the run's input in the
   * Temporal UI (CARRIED_ABOUT, carry.ts): the previous run's state as it
   * was when it continued as new, not the machine's state now (that is the
   * current details and the `provisioningState` query). Absent in runs
   * continued before the label (issue 29).
   */
  about?: string;
  retryRequested: boolean;
  destroyRequested: boolean;
  state: ProvisioningState;
  /** Instances launched and not recorded (MachineContext.launched): never dropped by a new run. */
  launched?: string[];
  /** The model's region, as last read (where `launched` are). */
  region?: string;
  /** A blocked teardown: what its status says blocks it (the next run does not write it again). */
  blockedNote?: string;
  /** Every block its status said (a run before these carried `blockedNote` alone). */
  blockedNotes?: string[];
  /** A teardown past its patient polls (the next run goes on polling slowly). */
  patientPolls?: boolean;
  /** A reprovision asked for and not yet done: the instance it replaces. */
  reprovision?: string;
  /** The user who created or last retried the machine. */
  requestedBy?: string;
  /**
   * A provisioning pass cut short between attempts to keep the history small
   * (BOUNDED_FAILING_HISTORY): the attempt the new run goes on with, in the
   * same pass (state.pass), after the wait the previous run already waited.
   */
  resumeAttempt?: number;
  /** That pass was asked for by a retry (the capacity memory stays ignored). */
  retrying?: boolean;
}

/**
 * A machine's provisioning phase, as `provisioningState` answers it and its
 * current details show it. `planning` covers a machine's first read as a
 * whole: it plans and claims a zone, and (LAUNCH_IN_READ) launches in the
 * same step, so a launch that goes out in that step shows `planning` until
 * its answer; a pass that plans on its own (no first read's plan to use)
 * shows `planning` too while it plans; `starting` is a launch step of its own.
 */
export type ProvisioningPhase =
  | 'loading'
  | 'planning'
  | 'starting'
  | 'waiting'
  | 'running'
  | 'error'
  | 'idle'
  | 'stopping'
  | 'removed';

/** What a person (or the API) can ask a machine's workflow: `provisioningState`. */
export interface ProvisioningState {
  phase: ProvisioningPhase;
  /** Provisioning passes in this workflow's lifetime: the first, then one per retry. */
  pass: number;
  /** The attempt in flight or last spent (1-based; 0 before the first). */
  attempt: number;
  maxAttempts: number;
  /** Zones that failed with a zone-specific error during the current attempt. */
  failedZones: string[];
  /** The zone claimed or in use. */
  zone?: string;
  instanceType?: string;
  instanceId?: string;
  /** EC2's state of `instanceId` as last recorded (liveness). */
  instanceStatus?: InstanceState;
  /** The last failure's message (with its EC2 error code where there is one). */
  lastError?: string;
  /** The last launch never answered (it may have launched): the next launch looks first. */
  mayHaveLaunched?: boolean;
}

/** Ask a machine in `error` to provision again, from a fresh zone list and its current constraints. */
export const retrySignal = defineSignal<[RetryRequest?]>('retry');

/** Who asked for a retry or reprovision (absent in signals sent before issue 24). */
export interface RetryRequest {
  by?: string;
}
/** What a reprovision asks: a new instance in place of `instanceId`, which EC2 confirmed gone. */
export interface ReprovisionRequest {
  instanceId: string;
  /** Who asked (absent when the sweep reprovisions a lost machine). */
  by?: string;
}
/**
 * Reprovision (the API's, or the sweep's for a model that reprovisions lost
 * machines): the workflow forgets `instanceId` — only while the machine is
 * alive and still records it — gives up its zone, and provisions the machine
 * again as a retry does. The sender writes nothing, so a signal that never
 * arrives changes nothing and can simply be sent again.
 */
export const reprovisionSignal = defineSignal<[ReprovisionRequest]>('reprovision');
/** Tell a machine's workflow that the machine's life changed (it went Dead): re-read it and tear down. */
export const destroySignal = defineSignal('destroy');
/** What EC2 says of an instance (the sweep or the state-change handler saw it). */
export type { InstanceObservation };
/**
 * EC2's state of the machine's instance changed: the workflow records it
 * (only while the machine still records that instance) and a lost instance
 * puts the machine `down`.
 */
export const instanceStateSignal = defineSignal<[InstanceObservation]>('instanceState');
export const provisioningStateQuery = defineQuery<ProvisioningState>('provisioningState');

/** The sweeper's input (workflows/sweeper.ts); every field has a default. */
export interface SweeperInput {
  /** The interval until the first page reports the worker's PROVISIONER_SWEEP_INTERVAL. */
  intervalMs?: number;
  /** Models per activity (default: activities/sweeper.ts's page). */
  pageSize?: number;
  /** Walks before continuing as new. */
  walksPerRun?: number;
}
