import { decimalSeconds } from '../core/duration';
import type { Client } from '@temporalio/client';
import type { StackInfo } from '../local/stack-info';
import { EntityNotFoundError } from '../state/errors';
import type { Repository } from '../state/repository';
import { removalWorkflowId, type RemovalReport } from '../temporal/removal';

/**
 * Removal at scale (issue 23): N units deployed in a model of their own,
 * then destroy-model. The model's constraints match no instance type, so
 * its machines go to `error` at planning and nothing is launched: what is
 * timed is the API, the table writes and the telling of the machines'
 * workflows, not EC2's terminations (which the launch phase's instances
 * would add at TerminateInstances' own pace).
 */

export const REMOVAL_MODEL = 'bench-removal';
const UNSATISFIABLE = 'mem=1000T';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RemovalResult {
  units: number;
  /** The deploy of N units: its answer. */
  deployMs?: number;
  /** destroy-model: from the request to its `202`. */
  answerMs?: number;
  /** From the request until no unit is left and every machine is Dead (or gone), per the table. */
  deadMs?: number;
  /** From the request until the removal's activity ended: every Dead machine's workflow told. */
  toldMs?: number;
  /** From the request until the model is removed (every machine torn down and removed). */
  goneMs?: number;
  /** What the removal workflow answered. */
  report?: RemovalReport;
  timedOut: boolean;
  note?: string;
}

export interface RemovalContext {
  n: number;
  info: StackInfo;
  repo: Repository;
  temporal: Client;
  timeoutMs: number;
  requestTimeoutMs: number;
  log: (line: string) => void;
}

async function call(
  info: StackInfo,
  method: string,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<number> {
  const res = await fetch(`${info.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return res.status;
}

export async function runRemoval(ctx: RemovalContext): Promise<RemovalResult> {
  const { n, info, repo, log } = ctx;
  const result: RemovalResult = { units: n, timedOut: false };
  await call(
    info,
    'POST',
    '/v1/models',
    { name: REMOVAL_MODEL, constraints: UNSATISFIABLE },
    60_000,
  );
  log(`N=${n}: removal: deploying ${n} units (constraints match no type: nothing launches)`);
  let start = performance.now();
  await call(
    info,
    'POST',
    `/v1/models/${REMOVAL_MODEL}/applications`,
    { name: 'removal', base: 'ubuntu@22.04', numUnits: n },
    ctx.requestTimeoutMs,
  );
  result.deployMs = performance.now() - start;
  // every machine settled in `error` (its workflow waiting), as a model long deployed would be
  const settleBy = Date.now() + ctx.timeoutMs;
  for (;;) {
    const machines = await repo.listMachines(REMOVAL_MODEL);
    const inError = machines.filter((m) => m.status === 'error').length;
    if (machines.length >= n && inError === machines.length) break;
    if (Date.now() > settleBy) {
      result.note = `only ${inError} of ${n} machines in error before the removal`;
      break;
    }
    await sleep(2000);
  }
  await sleep(10_000); // the worker finishes those workflows' tasks
  const uid = (await repo.getModel(REMOVAL_MODEL)).uid;

  log(`N=${n}: removal: destroy-model`);
  start = performance.now();
  await call(info, 'DELETE', `/v1/models/${REMOVAL_MODEL}`, undefined, ctx.requestTimeoutMs);
  result.answerMs = performance.now() - start;
  const wallStart = Date.now() - result.answerMs;
  const handle = ctx.temporal.workflow.getHandle(
    removalWorkflowId({ model: REMOVAL_MODEL, modelUid: uid }),
  );
  // when its activity ended (every Dead machine told), from the history: the workflow's
  // own completion waits for a worker slot behind the machines' tasks
  const told = handle
    .result()
    .then(async (report: RemovalReport) => {
      result.report = report;
      const events = (await handle.fetchHistory()).events ?? [];
      const done = events.filter((e) => e.activityTaskCompletedEventAttributes).at(-1);
      const at = done?.eventTime;
      if (at) result.toldMs = Number(at.seconds ?? 0) * 1000 + (at.nanos ?? 0) / 1e6 - wallStart;
    })
    .catch((err: unknown) => {
      result.note = `no removal workflow result (${String(err)})`;
    });
  const deadline = Date.now() + ctx.timeoutMs;
  for (;;) {
    try {
      const contents = await repo.loadModel(REMOVAL_MODEL);
      if (
        result.deadMs === undefined &&
        contents.units.length === 0 &&
        contents.machines.every((m) => m.life === 'dead')
      ) {
        result.deadMs = performance.now() - start;
        log(
          `N=${n}: removal: every unit gone and machine Dead after ${decimalSeconds(result.deadMs)}`,
        );
      }
    } catch (err) {
      if (!(err instanceof EntityNotFoundError)) throw err;
      result.goneMs = performance.now() - start;
      result.deadMs ??= result.goneMs;
      log(`N=${n}: removal: model removed after ${decimalSeconds(result.goneMs)}`);
      break;
    }
    if (Date.now() > deadline) {
      result.timedOut = true;
      break;
    }
    await sleep(500);
  }
  await Promise.race([told, sleep(10_000)]);
  return result;
}
