import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';

/**
 * A history file (`temporal workflow show -o json`) as the SDK's History.
 * The SDK's own decoder (historyFromJSON) fails here with "type must be a
 * Type": npm gives @temporalio/common and @temporalio/proto two copies of
 * protobufjs, and the decoder checks the type against the wrong copy. This
 * one decodes with the copy @temporalio/proto itself uses.
 */
const fromProtoRequire = createRequire(require.resolve('@temporalio/proto'));
const { fromJson } = fromProtoRequire('protobufjs/ext/protojson') as {
  fromJson: (type: unknown, json: unknown, options: object) => unknown;
};
const historyType = (
  patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }
).lookupType('temporal.api.history.v1.History');

function readHistory(file: string): unknown {
  const json = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  return fromJson(historyType, json, { ignoreUnknownFields: true });
}

/**
 * Replays every recorded history in a folder against the current workflow
 * code and prints one JSON line per history: `{ "file", "error"? }`. Run in
 * a process of its own (test/unit/workflows/replay.test.ts), as a worker is.
 */
async function main(dir: string): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  const results = Worker.runReplayHistories(
    { workflowsPath: require.resolve('../../workflows'), replayName: 'machine-workflow-replay' },
    files.map((file) => ({
      workflowId: file,
      history: readHistory(join(dir, file)),
    })),
  );
  for await (const result of results) {
    console.log(
      JSON.stringify({
        file: result.workflowId,
        ...(result.error ? { error: `${result.error.name}: ${result.error.message}` } : {}),
      }),
    );
  }
}

main(process.argv[2] ?? '.').catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
