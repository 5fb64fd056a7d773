import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import {
  LEGACY_MODEL_SWEEP_WORKFLOW_TYPE,
  SWEEPER_WORKFLOW_TYPE,
  TASK_QUEUE,
  sweeperWorkflowId,
} from './search-attributes';

/**
 * Client-side helpers for the sweeper: one long-lived workflow per task queue
 * that sweeps every model on a timer (workflows/sweeper.ts). Imports only
 * @temporalio/client and workflow ids, so the API can call them without
 * pulling in worker code.
 */

/**
 * Makes sure the task queue's sweeper is running (the worker calls it at
 * start, the API when a model is created or machines are added). Idempotent:
 * a running sweeper is left as it is, so this costs no Temporal action then.
 */
export async function ensureSweeper(client: Client, taskQueue: string = TASK_QUEUE): Promise<void> {
  await client.workflow.start(SWEEPER_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: sweeperWorkflowId(taskQueue),
    args: [{}],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    staticSummary: `Sweeps every model (stray instances, missing machine workflows, liveness) on ${taskQueue}`,
  });
}

/**
 * Deletes the per-model sweep Schedules (`sweep:<model>`) that earlier
 * versions created: the sweeper does their work now, and each of them spent
 * a few Temporal actions every interval. Returns the ids it deleted.
 */
export async function removeLegacySweepSchedules(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const schedule of client.schedule.list()) {
    if (
      schedule.scheduleId.startsWith('sweep:') &&
      schedule.action?.type === 'startWorkflow' &&
      schedule.action.workflowType === LEGACY_MODEL_SWEEP_WORKFLOW_TYPE
    ) {
      ids.push(schedule.scheduleId);
    }
  }
  for (const id of ids) await client.schedule.getHandle(id).delete();
  return ids;
}
