import { setCurrentDetails } from '@temporalio/workflow';
import { isRoutine } from '../core/liveness';
import type { MachineSnapshot } from '../activities/types';
import type { MachineStatus } from '../state/types';
import type { ProvisioningState } from './definitions';
import { machineSummary } from '../temporal/search-attributes';
import { shortDuration } from '../core/duration';

/**
 * What the Temporal UI shows of a machine without opening a payload: a
 * static summary given when its workflow is started, and current details
 * (Temporal markdown) kept up to date by the workflow. Current details are
 * served by the workflow's metadata query, not recorded as commands, so
 * setting them never changes a workflow's history (replay-safe).
 */

/** A duration as people write it: `500ms`, `10s`, `1m`, `1m30s` (core/duration.ts). */
export const duration = shortDuration;

/**
 * What a machine's details are drawn from: the part of a workflow run's
 * context (workflows/context.ts `MachineContext`) this module reads. Named
 * here so that context.ts may import this module without a cycle.
 */
export interface DetailsSource {
  model: string;
  machineId: string;
  state: ProvisioningState;
  published: { status?: MachineStatus };
  requestedBy?: string;
  snapshot?: MachineSnapshot;
}

/**
 * The machine's current details, from the workflow's state and the last read
 * of the machine. The first line is the run's summary (`Machine 3 in model
 * demo`): a run continued as new has no static summary (the SDK's
 * continue-as-new takes none), so its details say it.
 */
export function machineDetails(ctx: DetailsSource, machine?: MachineSnapshot): string {
  const { state } = ctx;
  const status = ctx.published.status ?? machine?.status ?? 'pending';
  const zone = state.zone ?? machine?.zone;
  const instanceId = state.instanceId ?? machine?.instanceId;
  const instanceType = state.instanceType ?? machine?.instanceType;
  // Routine states (pending, running) are written to the table, not told to the workflow
  // (README, "Liveness"): only a state the workflow acted on is named, never a stale `pending`.
  const told = state.instanceStatus ?? machine?.instanceStatus;
  const instanceStatus = told && !isRoutine(told) ? told : undefined;
  const lines = [
    machineSummary(ctx.model, ctx.machineId),
    `**status** ${status} (${state.phase}` +
      (state.attempt > 0 ? `, attempt ${state.attempt} of ${state.maxAttempts}` : '') +
      ')',
  ];
  if (zone) lines.push(`**zone** ${zone}`);
  if (instanceId) {
    const about = [instanceType, instanceStatus].filter(Boolean).join(', ');
    lines.push(`**instance** ${instanceId}${about ? ` (${about})` : ''}`);
  } else if (instanceType) {
    lines.push(`**type** ${instanceType}`);
  }
  if (machine && machine.applications.length > 0) {
    lines.push(`**applications** ${[...machine.applications].sort().join(', ')}`);
  }
  if (machine?.units && machine.units.length > 0)
    lines.push(`**units** ${machine.units.join(', ')}`);
  if (machine?.constraints) lines.push(`**constraints** ${machine.constraints}`);
  if (state.lastError) lines.push(`**last error** ${state.lastError}`);
  if (ctx.requestedBy) lines.push(`**requested by** ${ctx.requestedBy}`);
  return lines.join('\n');
}

/** Puts the machine's current details on its workflow (the UI shows them on its page). */
export function showDetails(ctx: DetailsSource, machine?: MachineSnapshot): void {
  if (machine) ctx.snapshot = machine;
  setCurrentDetails(machineDetails(ctx, ctx.snapshot));
}
