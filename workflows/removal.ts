import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RemovalReport, RemovalTarget } from '../temporal/removal';

/**
 * One activity, retried until it is done: it re-reads what is left each
 * time, so a worker that dies mid-way loses nothing. Heartbeats after each
 * batch show a stuck one within a minute; a thousand units take seconds.
 */
const removing = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * Removes an application or a whole model in the background (issue 23):
 * started by remove-application or destroy-model when they are too large to
 * write in the request (service/removal-batches.ts INLINE_REMOVAL_LIMIT),
 * which answers `202` once this has started.
 */
export async function removalWorkflow(target: RemovalTarget): Promise<RemovalReport> {
  return removing.removeContents(target);
}
