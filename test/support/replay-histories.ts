import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { readHistoryFile } from '../../bench/history-json';
import { workflowBundlerOptions } from '../../worker/preload';

/**
 * Replays every recorded history in a folder against the current workflow
 * code, twice over in one replay worker, and prints one JSON line per replay:
 * `{ "file", "pass", "error"? }`. The second pass replays every history after
 * all of them ran on the same preloaded modules (worker/preload.ts), so state
 * a run left in a shared module that changes a later run's commands fails it.
 * Run in a process of its own (test/unit/workflows/replay.test.ts), as a
 * worker is.
 */
async function main(dir: string): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  const results = Worker.runReplayHistories(
    {
      workflowsPath: require.resolve('../../workflows'),
      // as the worker bundles them: the runs replayed one after the other share the preloaded modules
      bundlerOptions: workflowBundlerOptions(),
      replayName: 'machine-workflow-replay',
    },
    [1, 2].flatMap((pass) =>
      files.map((file) => ({
        workflowId: `${pass}/${file}`,
        history: readHistoryFile(join(dir, file)),
      })),
    ),
  );
  for await (const result of results) {
    const [pass, file] = result.workflowId.split('/', 2);
    console.log(
      JSON.stringify({
        file,
        pass: Number(pass),
        ...(result.error ? { error: `${result.error.name}: ${result.error.message}` } : {}),
      }),
    );
  }
}

main(process.argv[2] ?? '.').catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
