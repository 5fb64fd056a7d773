import { resolve } from 'node:path';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type ReplayWorkerOptions,
} from '@temporalio/worker';
import { readHistoryFile } from './history-json';
import { workflowBundlerOptions } from '../worker/preload';
import { withLeanSandbox } from '../worker/sandbox';

/**
 * The workflow side of a machine's CPU, away from the stack and its load:
 * replays one recorded history `count` times (after `warm` replays) in the
 * SDK's workflow thread with the worker's sandbox (worker/sandbox.ts), each
 * replay a new run (its modules evaluated, its activations run; the bundle
 * is built once, outside the measurement), and prints
 * the process's CPU per replay. `tsx bench/replay-cpu.ts <history.json>
 * [count] [warm] [workflowsPath]`; the worker's settings
 * (`PROVISIONER_REUSE_V8_CONTEXT`...) are not applied, the SDK's defaults are,
 * except the preloaded modules (worker/preload.ts, `PROVISIONER_WORKFLOW_PRELOAD`).
 */

/**
 * A replay worker runs workflows on the main thread (the SDK sets `debugMode`
 * before the options it is given, so `debugMode: false` is taken though the
 * replay options' type omits it); the worker this measures runs them on the
 * SDK's workflow thread, which the lean sandbox needs.
 */
function replayOptions(code: string): ReplayWorkerOptions {
  const options: ReplayWorkerOptions & { debugMode: boolean } = {
    workflowBundle: { code },
    replayName: 'replay-cpu',
    debugMode: false,
  };
  return options;
}

async function replay(
  code: string,
  history: unknown,
  n: number,
): Promise<{ cpuMs: number; failed: number }> {
  const histories = Array.from({ length: n }, (_, i) => ({ workflowId: `replay-${i}`, history }));
  const before = process.cpuUsage();
  let failed = 0;
  await withLeanSandbox(async () => {
    for await (const result of Worker.runReplayHistories(replayOptions(code), histories)) {
      if (result.error) failed += 1;
    }
  });
  const used = process.cpuUsage(before);
  return { cpuMs: (used.user + used.system) / 1000, failed };
}

async function main(): Promise<void> {
  const [file, countText = '300', warmText = '20', workflows = '../workflows'] =
    process.argv.slice(2);
  if (!file) {
    process.stderr.write(
      'usage: tsx bench/replay-cpu.ts <history.json> [count] [warm] [workflowsPath]\n',
    );
    process.exit(2);
  }
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const history = readHistoryFile(file);
  const workflowsPath = require.resolve(resolve(__dirname, workflows));
  const count = Number(countText);
  // bundled once, outside the measurement (a worker bundles at its start)
  // with the workflows measured preloaded, as the worker preloads its own
  // (PROVISIONER_WORKFLOW_PRELOAD=off: without)
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    logger: new DefaultLogger('ERROR'),
    ...workflowBundlerOptions(process.env, workflowsPath),
  });
  await replay(code, history, Number(warmText));
  const { cpuMs, failed } = await replay(code, history, count);
  process.stdout.write(
    `${JSON.stringify({ file, workflowsPath, count, failed, cpuMsPerReplay: +(cpuMs / count).toFixed(2) })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
