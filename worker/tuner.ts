import type {
  CustomSlotSupplier,
  LocalActivitySlotInfo,
  SlotMarkUsedContext,
  SlotPermit,
  SlotReleaseContext,
  SlotReserveContext,
  TunerHolder,
  WorkerOptions,
  WorkflowSlotInfo,
} from '@temporalio/worker';
import type { Activities } from '../activities';
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

  constructor(readonly gate: WorkflowBacklogGate) {}

  /**
   * A sticky poll goes ahead of normal ones when the gate opens: its task is
   * a cached run's next one, cheap to run, while one that waits past the
   * sticky timeout (30 s) goes back to the shared queue and is replayed in
   * full, the dearest path on a worker short of CPU. But while normal polls
   * wait too, the two are served in turn (worker/backlog-gate.ts `wake`), so
   * the shared queue, where new machines' first tasks wait, is still polled
   * while the gate stays shut. Both count in the same backlog.
   */
  reserveSlot(ctx: SlotReserveContext, abortSignal: AbortSignal): Promise<SlotPermit> {
    return this.gate.reserve(abortSignal, ctx.isSticky);
  }

  tryReserveSlot(): SlotPermit | null {
    return this.gate.tryReserve();
  }

  markSlotUsed(ctx: SlotMarkUsedContext<WorkflowSlotInfo>): void {
    // the task is in the backlog already (counted when reserved); this bounds what local
    // activities may take out of it to the tasks received
    const permit = gatePermit(ctx.permit);
    if (permit) this.gate.markUsed(permit);
  }

  releaseSlot(ctx: SlotReleaseContext<WorkflowSlotInfo>): void {
    const permit = gatePermit(ctx.permit);
    if (permit) this.gate.release(permit);
  }
}

/**
 * The local activities whose running takes their task out of the backlog:
 * the ones that wait seconds (a batch's launch) and that a machine's task
 * awaits alone, so a task runs at most one of them at a time. The first read
 * (loadMachine, which plans, claims and launches) waits for its answer even
 * when a destroy cancels it (WAIT_CANCELLATION_COMPLETED); startInstance is
 * awaited where it is called. Others are left out: planLaunch is cancelled
 * with TRY_CANCEL and may still run while its task goes on to another local
 * activity; teardown runs its steps side by side; and the quick records
 * (milliseconds) would take little out of the backlog anyway. The slot info
 * carries only the type, not the task, so this is the rule that bounds it.
 * test/unit/worker/one-per-task-local-activities.test.ts checks workflows/
 * for it by syntax: each call of these through a local-activity proxy is
 * awaited where it is made, in one of its module's top-level functions (not
 * a callback, an IIFE or a handler); these names taken from anything it
 * cannot trace to a proxy (a parameter, an object's property) are reported;
 * the first read's wait beside a destroy is excepted by name. Whether those
 * functions are themselves run one beside another it does not check.
 */
export const ONE_PER_TASK_LOCAL_ACTIVITIES: ReadonlySet<string> = new Set([
  'loadMachine',
  'startInstance',
] satisfies Array<keyof Activities>);

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
    if (permit) {
      this.slots.markUsed(permit, ONE_PER_TASK_LOCAL_ACTIVITIES.has(ctx.slotInfo.activityType));
    }
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

/**
 * The backlog gate behind worker options built with the tuner, or undefined
 * (`off`): read once a second for the worker's metrics (worker/telemetry.ts
 * sampleBacklogGate), since the SDK reports no free slots for a custom supplier.
 */
export function backlogGateOf(options: {
  tuner?: WorkerOptions['tuner'];
}): Readonly<WorkflowBacklogGate> | undefined {
  const tuner = options.tuner;
  if (!tuner || !('workflowTaskSlotSupplier' in tuner)) return undefined;
  const supplier = tuner.workflowTaskSlotSupplier;
  return supplier instanceof BacklogWorkflowSlots ? supplier.gate : undefined;
}
