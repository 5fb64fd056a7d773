import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';
import type { MachineSnapshot, PreparedLaunch, WorkflowTuning } from '../activities/types';
import type { InstanceState } from '../core/liveness';
import type { MachineStatus } from '../state/types';
import type { InstanceObservation, ProvisioningState } from './definitions';
import { SEARCH_ATTRIBUTES } from '../temporal/search-attributes';
import { showDetails } from './summaries';

/** What one run of a machine workflow shares between its phases. */
export interface MachineContext {
  model: string;
  machineId: string;
  state: ProvisioningState;
  /** Set by signal handlers, consumed by the workflow. */
  signals: {
    retry: boolean;
    destroy: boolean;
    instance?: InstanceObservation;
    /** A reprovision asked for: the instance to replace. */
    reprovision?: string;
  };
  tuning: WorkflowTuning;
  /** Quick steps run as local activities (workflows started since batched launches). */
  local: boolean;
  /** A `machine` run: takes every patch without asking (patches.ts). */
  lean: boolean;
  /** Search-attribute changes held for the next publish (one update instead of two). */
  deferred?: { applications?: readonly string[] };
  /** The pass in progress was asked for by a retry (the capacity memory is ignored). */
  retrying?: boolean;
  /**
   * The previous run cut its provisioning pass short between attempts
   * (BOUNDED_FAILING_HISTORY): the attempt this run's pass goes on with.
   */
  resumeAttempt?: number;
  /** The model's region, as last read. */
  region?: string;
  /** Instances launched in this run and not known to be recorded (torn down if the machine dies). */
  launched: string[];
  published: Published;
  /** What blocks the teardown (its key), as this run or the one it continues last said it. */
  blockedNote?: string;
  /** Every block (its key) said since the status last said anything else (teardown.ts sayBlocked). */
  blockedNotes?: string[];
  /** This run continues a blocked teardown (the status already says what blocks it). */
  resumedTeardown?: boolean;
  /** Teardown is past its patient polls (it looks for its instance's end slowly). */
  patientPolls?: boolean;
  /** The user whose request created, or last retried or reprovisioned, the machine. */
  requestedBy?: string;
  /** The machine as last read (its current details in the UI are drawn from it). */
  snapshot?: MachineSnapshot;
  /**
   * The plan and zone claim the last read made for the pass about to start
   * (LEAN_LAUNCH, records.ts loadMachine `prepare`); taken by that pass.
   */
  prepared?: PreparedLaunch;
  /**
   * This run's own first read answered `prepared` (LEAN_LAUNCH), so only code
   * that knows `recorded` ever ran it: its launches are asked to record the
   * instance. A run begun by older code, or continued as new, never is, and
   * keeps the separate record step an older worker would replay.
   */
  recordsLaunch?: boolean;
}

export interface Published {
  status?: MachineStatus;
  zone?: string | null;
  applications?: string;
  instanceStatus?: InstanceState | null;
}

/**
 * Sets the machine's search attributes (status, zone, applications) when
 * they change, so a person can find e.g. every machine in error in a model.
 * Unchanged values are not written again (each upsert is a history event).
 */
export function publish(
  ctx: MachineContext,
  changes: {
    status?: MachineStatus;
    zone?: string | null;
    applications?: readonly string[];
    /** Only from workflows with the INSTANCE_LIVENESS patch. */
    instanceStatus?: InstanceState | null;
  },
): void {
  const pairs: SearchAttributeUpdatePair[] = [];
  const { published } = ctx;
  if (ctx.deferred) {
    changes = { ...ctx.deferred, ...changes };
    ctx.deferred = undefined;
  }
  if (changes.status !== undefined && changes.status !== published.status) {
    pairs.push({ key: SEARCH_ATTRIBUTES.status, value: changes.status });
    published.status = changes.status;
  }
  if (changes.zone !== undefined && changes.zone !== published.zone) {
    pairs.push({ key: SEARCH_ATTRIBUTES.zone, value: changes.zone });
    published.zone = changes.zone;
  }
  if (changes.instanceStatus !== undefined && changes.instanceStatus !== published.instanceStatus) {
    pairs.push({ key: SEARCH_ATTRIBUTES.instanceStatus, value: changes.instanceStatus });
    published.instanceStatus = changes.instanceStatus;
  }
  if (changes.applications !== undefined) {
    const list = [...changes.applications].sort();
    const joined = list.join(',');
    if (joined !== published.applications) {
      pairs.push({ key: SEARCH_ATTRIBUTES.applications, value: list.length > 0 ? list : null });
      published.applications = joined;
    }
  }
  if (pairs.length > 0) upsertSearchAttributes(pairs);
  showDetails(ctx);
}
