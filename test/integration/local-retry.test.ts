import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { endedByLastTry } from '../../workflows/proxies';
import type { RefusingActivities } from '../support/local-retry-workflow';
import {
  BOUNDED_TRY_MS,
  LAUNCH_BOUNDED_TRY_MS,
  LAUNCH_TRY_WAITS_MS,
  SCALED,
  SCALED_LAUNCH,
} from '../support/local-retry-workflow';
import { loadTestStack } from './stack';
import { temporalConnections } from './temporal-connections';

/**
 * A local activity's retries end with its last try's own failure
 * (workflows/proxies.ts endedByLastTry), on a real worker and server: the
 * record step's policy scaled down (2 tries, 2 s apart, 4 s a try). Try 1
 * is refused at once; try 2 runs 3 s (within its 4 s) and is refused.
 *
 * With the start-to-close the record step had (one try's, 4 s), try 1's
 * timer, which the SDK's core never stops, fires 4 s after try 1 began,
 * while try 2 runs: the step ends "Activity timed out" though no try ran
 * 4 s. In production that coincidence needs a worker starved for a few
 * milliseconds at the wrong moment; here try 2's length makes it certain.
 * Should a later SDK stop those timers, the second case answers with the
 * refusal, and endedByLastTry can go.
 *
 * The launch step's the same way (LOCAL_LAUNCH_OPTIONS), where a try is
 * long by nature (it waits for its batch and EC2's bucket): its policy
 * scaled down (3 tries, waits 1 s and 2 s, 4 s a try). Try 1 waits 2.5 s,
 * try 2 is refused at once, try 3 waits 3 s: with a try's start-to-close,
 * try 2's timer (4 s after it began) cancels try 3 while it waits, and the
 * step ends "Activity timed out"; ended by its last try, try 3 runs out
 * uncancelled and the step ends with its refusal.
 *
 * Both show endedByLastTry's shape on a real worker with scaled-down
 * numbers; the production option sets are held to endedByLastTry and
 * lastTryWithin by test/unit/workflows/proxies.test.ts, which is the test
 * that fails should one of them go back to a try's start-to-close.
 */

const stack = loadTestStack();
const conn = temporalConnections(stack);

const tries: Array<{ attempt: number; at: number; cancelled?: boolean }> = [];

const activities: RefusingActivities = {
  async refuseTwice({ secondTryMs }) {
    const { attempt } = Context.current().info;
    tries.push({ attempt, at: Date.now() });
    if (attempt > 1)
      await sleep(secondTryMs, undefined, { signal: Context.current().cancellationSignal }).catch(
        () => undefined,
      );
    throw new Error(`refused (try ${attempt})`);
  },
  async refuseLikeALaunch() {
    const { attempt } = Context.current().info;
    const entry: (typeof tries)[number] = { attempt, at: Date.now(), cancelled: false };
    tries.push(entry);
    const waitMs = LAUNCH_TRY_WAITS_MS[attempt - 1] ?? 0;
    if (waitMs > 0)
      await sleep(waitMs, undefined, { signal: Context.current().cancellationSignal }).catch(
        () => (entry.cancelled = true),
      );
    throw new Error(`refused (try ${attempt})${entry.cancelled ? ', cancelled' : ''}`);
  },
};

/**
 * Runs `workflowType` on a worker of its own; before the worker stops, waits
 * until every try's timer (`timerMs` after the try began) has fired: one
 * firing after its shutdown panics in the core's thread ("receive half not
 * dropped").
 */
async function run(
  workflowType: 'localRetryWorkflow' | 'localLaunchRetryWorkflow',
  args: { bounded: boolean; secondTryMs?: number },
  timerMs: number,
): Promise<{ answer: string; tookMs: number }> {
  tries.length = 0;
  const taskQueue = `local-retry-${randomUUID().slice(0, 8)}`;
  const worker = await Worker.create({
    connection: conn.native,
    namespace: stack.temporalNamespace,
    taskQueue,
    workflowsPath: require.resolve('../support/local-retry-workflow'),
    activities,
  });
  return worker.runUntil(async () => {
    const started = Date.now();
    const answer = await conn.client.workflow.execute(workflowType, {
      taskQueue,
      workflowId: `${workflowType}-${args.bounded ? 'bounded' : 'plain'}-${randomUUID().slice(0, 8)}`,
      args: [args],
      workflowTaskTimeout: '60 seconds',
    });
    const tookMs = Date.now() - started;
    const lastTry = Math.max(...tries.map((t) => t.at));
    await sleep(Math.max(0, lastTry + timerMs + 500 - Date.now()));
    return { answer: answer as string, tookMs };
  });
}

describe('a local activity retried by the SDK', () => {
  it('bounded by endedByLastTry: the start-to-close spans the waits and the tries', () => {
    expect(endedByLastTry(SCALED).startToCloseTimeout).toBe(6_000);
    expect(endedByLastTry({ ...SCALED, tryMs: BOUNDED_TRY_MS }).startToCloseTimeout).toBe(10_000);
  });

  it("ends with its last try's refusal when that try ran within its time", async () => {
    const { answer, tookMs } = await run(
      'localRetryWorkflow',
      { bounded: true, secondTryMs: 3_000 },
      endedByLastTry({ ...SCALED, tryMs: BOUNDED_TRY_MS }).startToCloseTimeout,
    );
    expect(answer).toBe('refused (try 2)');
    expect(tries.map((t) => t.attempt)).toEqual([1, 2]);
    // try 2 ran its 3 s to the refusal
    expect(tookMs).toBeGreaterThanOrEqual(2_000 + 3_000);
  });

  it('with one try\'s start-to-close, as the record step had: "Activity timed out" (the SDK\'s stray timer)', async () => {
    const { answer } = await run(
      'localRetryWorkflow',
      { bounded: false, secondTryMs: 3_000 },
      SCALED.tryMs,
    );
    expect(answer).toBe('Activity timed out');
    expect(tries.map((t) => t.attempt)).toEqual([1, 2]);
  });
});

describe("the launch step's options in the workflow task, scaled down", () => {
  const boundedMs = endedByLastTry({
    ...SCALED_LAUNCH,
    tryMs: LAUNCH_BOUNDED_TRY_MS,
  }).startToCloseTimeout;

  it('span the waits (1 s + 2 s) and the tries', () => {
    expect(boundedMs).toBe(13_000);
  });

  it("ended by the last try: no try cancelled in flight, the last try's refusal", async () => {
    const { answer, tookMs } = await run('localLaunchRetryWorkflow', { bounded: true }, boundedMs);
    expect(answer).toBe('refused (try 3)');
    expect(tries.map((t) => [t.attempt, t.cancelled])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
    // the tries' 5.5 s and the waits' 3 s
    expect(tookMs).toBeGreaterThanOrEqual(2_500 + 1_000 + 2_000 + 3_000);
  });

  it('with a try\'s start-to-close, as the launch step had: try 3 cancelled in flight by try 2\'s timer, "Activity timed out"', async () => {
    const { answer } = await run(
      'localLaunchRetryWorkflow',
      { bounded: false },
      SCALED_LAUNCH.tryMs,
    );
    expect(answer).toBe('Activity timed out');
    expect(tries.map((t) => [t.attempt, t.cancelled])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
  });
});
