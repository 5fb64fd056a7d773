import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { modelPage, type SweepPageInput, type SweepPageResult } from '../../activities/sweeper';
import type { SweeperInput } from '../../workflows/definitions';
import { eventually } from './api-client';
import { loadTestStack } from './stack';
import { temporalConnections } from './temporal-connections';

/**
 * What an idle sweep costs in Temporal Cloud actions (issue 16), read from the
 * local server's histories. Billed actions in the sweeper's history: a
 * workflow start (including each continue-as-new), each activity scheduled
 * (and each retry), each timer started; signals, markers (local activities)
 * and search-attribute upserts would count too, and the sweeper makes none.
 * Workflow tasks are not actions, and the sweeper's activity never
 * heartbeats (each heartbeat would be one).
 *
 * The sweeper runs here against an injected page activity that "sweeps" N
 * models, with a 1 s interval standing in for the default 1 m, so a few
 * seconds show what an hour costs. The real per-model sweep is the one the
 * other integration files exercise; what costs actions is the workflow.
 */

const stack = loadTestStack();
const INTERVAL_MS = 1000;
const WALKS_PER_RUN = 4;
const WALKS = 9;

const conn = temporalConnections(stack);

/** N idle models: the sweeper's workflow id says how many (`…-n<N>-…`); nothing changes. */
function sweepModelPage(input: SweepPageInput): Promise<SweepPageResult> {
  const id = Context.current().info.workflowExecution?.workflowId ?? '';
  const n = Number(/-n(\d+)-/.exec(id)?.[1]);
  const names = Array.from({ length: n }, (_, i) => `m${String(i).padStart(4, '0')}`);
  const { page, next } = modelPage(names, input.after, input.limit ?? 100);
  return Promise.resolve({
    swept: page.length,
    ...(next !== undefined ? { next } : {}),
    intervalMs: INTERVAL_MS,
    changed: [],
    failed: [],
    tookMs: 0,
    listings: 0,
  });
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Every event of the sweeper's runs, first run to last, following continue-as-new. */
async function chain(workflowId: string, firstRunId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined = firstRunId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await conn.client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    runs.push(events);
    runId =
      events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}

function summary(e: HistoryEvent): string | undefined {
  const payload = e.userMetadata?.summary;
  return payload ? defaultPayloadConverter.fromPayload<string>(payload) : undefined;
}

interface Walk {
  activities: number;
  timers: number;
  continued: number;
  other: number;
}

/** The actions of each walk; a walk starts with the first page's activity. */
function walks(runs: HistoryEvent[][]): {
  walks: Walk[];
  starts: number;
  timerSummaries: string[];
} {
  const out: Walk[] = [];
  const timerSummaries: string[] = [];
  let starts = 0;
  for (const events of runs) {
    for (const e of events) {
      const current = out.at(-1);
      if (e.workflowExecutionStartedEventAttributes) starts += 1;
      else if (e.activityTaskScheduledEventAttributes) {
        if (summary(e) === 'sweeping models' || !current) {
          out.push({ activities: 1, timers: 0, continued: 0, other: 0 });
        } else current.activities += 1;
      } else if (e.timerStartedEventAttributes) {
        current!.timers += 1;
        timerSummaries.push(summary(e) ?? '');
      } else if (e.workflowExecutionContinuedAsNewEventAttributes) current!.continued += 1;
      else if (
        e.markerRecordedEventAttributes ||
        e.upsertWorkflowSearchAttributesEventAttributes ||
        e.workflowExecutionSignaledEventAttributes ||
        e.startChildWorkflowExecutionInitiatedEventAttributes ||
        e.signalExternalWorkflowExecutionInitiatedEventAttributes
      ) {
        current!.other += 1;
      }
      if ((e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1) current!.other += 1;
    }
  }
  return { walks: out, starts, timerSummaries };
}

const actions = (w: Walk) => w.activities + w.timers + w.continued + w.other;

describe('the sweeper when nothing happens', () => {
  it('costs the same per walk for 2, 20 and 100 models, and an hour of 100 idle models ≤ 200 actions', async () => {
    const taskQueue = `sweeper-cost-${randomUUID().slice(0, 8)}`;
    const worker = await Worker.create({
      connection: conn.native,
      namespace: stack.temporalNamespace,
      taskQueue,
      workflowsPath: require.resolve('../../workflows/sweeper'),
      activities: { sweepModelPage },
    });
    const sizes = [2, 20, 100, 250];
    const measured = await worker.runUntil(async () => {
      const started = await Promise.all(
        sizes.map((n) =>
          conn.client.workflow.start('sweeperWorkflow', {
            taskQueue,
            workflowId: `sweeper-cost-n${n}-${randomUUID().slice(0, 8)}`,
            args: [
              {
                intervalMs: INTERVAL_MS,
                pageSize: 100,
                walksPerRun: WALKS_PER_RUN,
              } satisfies SweeperInput,
            ],
          }),
        ),
      );
      const results = [];
      for (const handle of started) {
        const runs = await eventually(
          () => chain(handle.workflowId, handle.firstExecutionRunId),
          (r) => walks(r).walks.length > WALKS,
          120_000,
          500,
        );
        await conn.client.workflow.getHandle(handle.workflowId).terminate('measured');
        results.push(walks(runs));
      }
      return results;
    });

    const perWalk = measured.map((m) => {
      const complete = m.walks.slice(0, WALKS); // the last one may have been cut short
      return { complete, total: complete.reduce((sum, w) => sum + actions(w), 0) / WALKS };
    });
    process.stderr.write(
      `[figures] sweeper actions per walk: ${sizes.map((n, i) => `${n} models ${perWalk[i]!.total}`).join(', ')}\n`,
    );
    // Up to a page (100 models): one activity, then one timer (or, once per run, continue-as-new).
    for (const i of [0, 1, 2]) {
      for (const w of perWalk[i]!.complete) {
        expect(w).toEqual({
          activities: 1,
          timers: w.continued === 1 ? 0 : 1,
          continued: w.continued,
          other: 0,
        });
      }
      expect(perWalk[i]!.total).toBe(2);
    }
    // 250 models: three pages, so three activities and the timer: it grows by pages, not models.
    for (const w of perWalk[3]!.complete) expect(w.activities).toBe(3);
    expect(perWalk[3]!.total).toBe(4);
    // continued as new every WALKS_PER_RUN walks: 9 complete walks span three runs
    expect(measured[0]!.starts).toBeGreaterThanOrEqual(3);
    expect(measured[0]!.timerSummaries[0]).toBe('next sweep in 1s');

    // An hour at the default PROVISIONER_SWEEP_INTERVAL (1m) is 60 walks. 100 models are one
    // page, measured above at 2 actions a walk (continue-as-new takes the place of a walk's
    // timer, so it adds nothing): 60 × 2 = 120 actions, plus 1 if the sweeper itself is
    // started in that hour (the worker's start; a running sweeper is left be). N models cost
    // 60 × (ceil(N / 100) + 1): 20 or 100 models alike.
    const walksPerHour = 3_600_000 / 60_000;
    const hourOf100 = walksPerHour * perWalk[2]!.total + 1;
    process.stderr.write(`[figures] an idle hour of 100 models at 1m: ${hourOf100} actions\n`);
    expect(hourOf100).toBe(121);
    expect(hourOf100).toBeLessThanOrEqual(200);
  });
});
