import type { Client } from '@temporalio/client';
import { TASK_QUEUE, sweeperWorkflowId } from '../../temporal/search-attributes';

/** Sweep pages the shared stack's sweeper completed after `since` (its current run's history). */
export async function sweepPagesCompletedSince(temporal: Client, since: number): Promise<number> {
  const history = await temporal.workflow.getHandle(sweeperWorkflowId(TASK_QUEUE)).fetchHistory();
  return (history.events ?? []).filter(
    (e) =>
      e.activityTaskCompletedEventAttributes != null &&
      e.eventTime?.seconds != null &&
      Number(e.eventTime.seconds) * 1000 > since,
  ).length;
}
