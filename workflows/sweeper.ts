import {
  ActivityFailure,
  continueAsNew,
  log,
  proxyActivities,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { SweeperInput } from './definitions';
import { duration } from './summaries';

/**
 * One page of models per activity: a few seconds of EC2, DynamoDB and Temporal
 * calls. No heartbeat timeout (each heartbeat is a billed action); a worker
 * lost mid-page is noticed after startToClose, and the next walk covers it.
 */
const sweeping = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '5 seconds', maximumAttempts: 2 },
});

/** Before PROVISIONER_SWEEP_INTERVAL is known from the worker (the first page tells). */
const FIRST_INTERVAL_MS = 60_000;
/** Walks per run before continuing as new: ~11 history events each, so a run stays far below Temporal's limits. */
export const WALKS_PER_RUN = 120;

/**
 * The sweeper: one long-lived workflow per task queue (`sweeper:<queue>`)
 * that walks every model every PROVISIONER_SWEEP_INTERVAL, a page of models
 * per activity, and sweeps each as DESIGN.md says (stray instances when the
 * harvest mode allows, missing machine workflows restarted, recorded
 * instances described as the liveness backstop). An idle walk of up to a
 * page of models costs two Temporal actions (one activity, one timer),
 * however many models there are; see the README's "The sweeper".
 */
export async function sweeperWorkflow(input: SweeperInput = {}): Promise<void> {
  let intervalMs = input.intervalMs ?? FIRST_INTERVAL_MS;
  for (let walk = 1; ; walk++) {
    let after: string | undefined;
    let page = 1;
    do {
      try {
        const result = await sweeping.sweepModelPage.executeWithOptions(
          { summary: after === undefined ? 'sweeping models' : `sweeping models after ${after}` },
          [
            {
              ...(after !== undefined ? { after } : {}),
              ...(input.pageSize ? { limit: input.pageSize } : {}),
            },
          ],
        );
        intervalMs = result.intervalMs;
        after = result.next;
        if (result.changed.length > 0 || result.failed.length > 0) {
          log.info('models swept', { page, changed: result.changed, failed: result.failed });
        }
      } catch (err) {
        // the next walk tries again; the sweeper itself never fails
        if (!(err instanceof ActivityFailure)) throw err;
        log.warn('sweep page failed', { page, error: err.cause?.message ?? err.message });
        after = undefined;
      }
      page++;
    } while (after !== undefined);
    if (walk >= (input.walksPerRun ?? WALKS_PER_RUN) || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof sweeperWorkflow>({ ...input, intervalMs });
    }
    await sleep(intervalMs, { summary: `next sweep in ${duration(intervalMs)}` });
  }
}
