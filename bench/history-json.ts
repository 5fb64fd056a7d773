import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

/*
 * A workflow history saved as JSON (the Temporal CLI's and UI's export),
 * decoded for the SDK's replayer. The SDK's own decoder (historyFromJSON)
 * fails here with "type must be a Type": npm gives @temporalio/common and
 * @temporalio/proto two copies of protobufjs, and the decoder checks the type
 * against the wrong copy. This one decodes with the copy @temporalio/proto
 * itself uses. Tooling only (the replay test, bench/replay-cpu.ts): no
 * product path imports it.
 */
const fromProtoRequire = createRequire(require.resolve('@temporalio/proto'));
const { fromJson } = fromProtoRequire('protobufjs/ext/protojson') as {
  fromJson: (type: unknown, json: unknown, options: object) => unknown;
};
const historyType = (
  patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }
).lookupType('temporal.api.history.v1.History');

/** The history in `file`, ready for `Worker.runReplayHistory`. */
export function readHistoryFile(file: string): unknown {
  const json = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  return fromJson(historyType, json, { ignoreUnknownFields: true });
}
