import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptions,
} from '@temporalio/client';
import {
  MODEL_SWEEP_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  TASK_QUEUE,
  sweepScheduleId,
} from '../workflows/search-attributes';

/**
 * Client-side helpers for each model's sweep schedule (stray instances and
 * missing machine workflows). Imports only @temporalio/client and workflow
 * ids, so the API can call them without pulling in worker code.
 */

/** PROVISIONER_SWEEP_INTERVAL's default. */
export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

export function sweepScheduleOptions(
  model: string,
  intervalMs: number,
  taskQueue: string = TASK_QUEUE,
): ScheduleOptions {
  return {
    scheduleId: sweepScheduleId(model),
    spec: { intervals: [{ every: intervalMs }] },
    action: {
      type: 'startWorkflow',
      workflowType: MODEL_SWEEP_WORKFLOW_TYPE,
      // the interval travels with each run, so the sweep knows whether to align it
      args: [{ model, intervalMs }],
      taskQueue,
      workflowId: sweepScheduleId(model),
      // a sweep is a few calls; a run that takes longer than this is stuck, and the next one starts clean
      workflowExecutionTimeout: '10 minutes',
      typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.model, value: model }],
    },
    policies: {
      // one sweep of a model at a time, and no backlog of missed runs after an outage
      overlap: ScheduleOverlapPolicy.SKIP,
      catchupWindow: '1 minute',
    },
    // the first sweep also aligns the interval with the worker's tuning
    state: { triggerImmediately: true },
  };
}

/**
 * Makes sure the model's sweep schedule exists (call on model creation and
 * whenever machine workflows are started; idempotent). A new schedule sweeps
 * once at once, and that first sweep puts the schedule on the worker's own
 * PROVISIONER_SWEEP_INTERVAL (the worker's tuning is the one that counts, and
 * the API need not know it); `intervalMs` only holds until then. An existing
 * schedule is left exactly as it is, so callers never undo the worker's interval.
 */
export async function ensureModelSweep(
  client: Client,
  model: string,
  intervalMs: number = DEFAULT_SWEEP_INTERVAL_MS,
  taskQueue: string = TASK_QUEUE,
): Promise<void> {
  try {
    await client.schedule.create(sweepScheduleOptions(model, intervalMs, taskQueue));
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}

/** Puts an existing sweep schedule on `intervalMs`; true when it changed. */
export async function alignSweepInterval(
  client: Client,
  model: string,
  intervalMs: number,
): Promise<boolean> {
  const handle = client.schedule.getHandle(sweepScheduleId(model));
  const description = await handle.describe();
  const intervals = description.spec.intervals ?? [];
  const action = description.action;
  const carried =
    action.type === 'startWorkflow'
      ? (action.args?.[0] as { intervalMs?: number } | undefined)
      : undefined;
  if (
    intervals.length === 1 &&
    Number(intervals[0]?.every) === intervalMs &&
    carried?.intervalMs === intervalMs
  ) {
    return false;
  }
  await handle.update((previous) => ({
    ...previous,
    spec: { ...previous.spec, intervals: [{ every: intervalMs }] },
    action:
      previous.action.type === 'startWorkflow'
        ? { ...previous.action, args: [{ model, intervalMs }] }
        : previous.action,
  }));
  return true;
}

/** Deletes the model's sweep schedule (the model is gone); absent is fine. */
export async function removeModelSweep(client: Client, model: string): Promise<void> {
  try {
    await client.schedule.getHandle(sweepScheduleId(model)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}
