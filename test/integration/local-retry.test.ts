import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { endedByLastTry } from '../../workflows/proxies';
import type { RefusingActivities } from '../support/local-retry-workflow';
import { BOUNDED_TRY_MS, SCALED } from '../support/local-retry-workflow';
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
 */

const stack = loadTestStack();
const conn = temporalConnections(stack);

const tries: Array<{ attempt: number; at: number }> = [];

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
};

async function run(bounded: boolean): Promise<{ answer: string; tookMs: number }> {
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
    const answer = await conn.client.workflow.execute('localRetryWorkflow', {
      taskQueue,
      workflowId: `local-retry-${bounded ? 'bounded' : 'plain'}-${randomUUID().slice(0, 8)}`,
      args: [{ bounded, secondTryMs: 3_000 }],
      workflowTaskTimeout: '60 seconds',
    });
    const tookMs = Date.now() - started;
    // every try's timer has fired before the worker stops: one firing after its shutdown
    // panics in the core's thread ("receive half not dropped")
    const lastTry = Math.max(...tries.map((t) => t.at));
    const timerMs = bounded
      ? endedByLastTry({ ...SCALED, tryMs: BOUNDED_TRY_MS }).startToCloseTimeout
      : SCALED.tryMs;
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
    const { answer, tookMs } = await run(true);
    expect(answer).toBe('refused (try 2)');
    expect(tries.map((t) => t.attempt)).toEqual([1, 2]);
    // try 2 ran its 3 s to the refusal
    expect(tookMs).toBeGreaterThanOrEqual(2_000 + 3_000);
  });

  it('with one try\'s start-to-close, as the record step had: "Activity timed out" (the SDK\'s stray timer)', async () => {
    const { answer } = await run(false);
    expect(answer).toBe('Activity timed out');
    expect(tries.map((t) => t.attempt)).toEqual([1, 2]);
  });
});
