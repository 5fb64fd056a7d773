import type {
  CustomSlotSupplier,
  LocalActivitySlotInfo,
  SlotMarkUsedContext,
  SlotPermit,
  SlotReleaseContext,
  SlotReserveContext,
  TunerHolder,
  WorkflowSlotInfo,
} from '@temporalio/worker';
import { GatePermit, LocalActivitySlots, WorkflowBacklogGate } from './backlog-gate';

/** The SDK's own default for Nexus slots when no tuner is given (the worker runs no Nexus tasks). */
const NEXUS_SLOTS = 100;

/** What the tuner is built from: the limits worker/settings.ts reads. */
export interface BacklogTunerLimits {
  /** Workflow tasks out and not in a local activity (PROVISIONER_WORKFLOW_TASK_BACKLOG). */
  workflowTaskBacklog: number;
  /** Workflow-task slots in all, as the worker runs with them (the cache caps them). */
  workflowTaskSlots: number;
  activitySlots: number;
  localActivitySlots: number;
}

/**
 * The permit the SDK hands back is the one reserved (its bridge keeps the
 * value); anything else is ignored rather than counted.
 */
function gatePermit(permit: SlotPermit): GatePermit | undefined {
  return permit instanceof GatePermit ? permit : undefined;
}

/** Workflow-task slots from the backlog gate: reserveSlot runs before each poll. */
class BacklogWorkflowSlots implements CustomSlotSupplier<WorkflowSlotInfo> {
  readonly type = 'custom';

  constructor(private readonly gate: WorkflowBacklogGate) {}

  /**
   * A sticky poll goes ahead of normal ones when the gate opens: its task is
   * a cached run's next one, cheap to run, while one that waits past the
   * sticky timeout (30 s) goes back to the shared queue and is replayed in
   * full, the dearest path on a worker short of CPU. The normal loop keeps
   * its own poll permits, so the shared queue is still polled. Both count in
   * the same backlog.
   */
  reserveSlot(ctx: SlotReserveContext, abortSignal: AbortSignal): Promise<SlotPermit> {
    return this.gate.reserve(abortSignal, ctx.isSticky);
  }

  tryReserveSlot(): SlotPermit | null {
    return this.gate.tryReserve();
  }

  markSlotUsed(): void {
    // a received task is in the backlog already: its permit was counted when it was reserved
  }

  releaseSlot(ctx: SlotReleaseContext<WorkflowSlotInfo>): void {
    const permit = gatePermit(ctx.permit);
    if (permit) this.gate.release(permit);
  }
}

/** Local-activity slots, a fixed count, whose uses take their tasks out of the backlog. */
class CountedLocalActivitySlots implements CustomSlotSupplier<LocalActivitySlotInfo> {
  readonly type = 'custom';

  constructor(private readonly slots: LocalActivitySlots) {}

  reserveSlot(_ctx: unknown, abortSignal: AbortSignal): Promise<SlotPermit> {
    return this.slots.reserve(abortSignal);
  }

  tryReserveSlot(): SlotPermit | null {
    return this.slots.tryReserve();
  }

  markSlotUsed(ctx: SlotMarkUsedContext<LocalActivitySlotInfo>): void {
    const permit = gatePermit(ctx.permit);
    if (permit) this.slots.markUsed(permit);
  }

  releaseSlot(ctx: SlotReleaseContext<LocalActivitySlotInfo>): void {
    const permit = gatePermit(ctx.permit);
    if (permit) this.slots.release(permit);
  }
}

/**
 * The worker's tuner with the backlog gate: workflow-task and local-activity
 * slots from it, activity slots fixed as before. One per Worker (the gate
 * counts that worker's slots).
 */
export function backlogTuner(limits: BacklogTunerLimits): TunerHolder {
  const gate = new WorkflowBacklogGate(limits.workflowTaskBacklog, limits.workflowTaskSlots);
  return {
    workflowTaskSlotSupplier: new BacklogWorkflowSlots(gate),
    activityTaskSlotSupplier: { type: 'fixed-size', numSlots: limits.activitySlots },
    localActivityTaskSlotSupplier: new CountedLocalActivitySlots(
      new LocalActivitySlots(limits.localActivitySlots, gate),
    ),
    nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: NEXUS_SLOTS },
  };
}
