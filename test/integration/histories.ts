import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolVenv } from '../../local/toolchain';

/**
 * The pinned Temporal CLI against a stack's server and namespace, with JSON
 * output; its stdout.
 */
export async function temporalJson(
  stack: { temporalAddress: string; temporalNamespace: string },
  args: string[],
): Promise<string> {
  const { stdout } = await promisify(execFile)(
    join(toolVenv(), 'bin', 'temporal'),
    [
      ...args,
      '--address',
      stack.temporalAddress,
      '--namespace',
      stack.temporalNamespace,
      '-o',
      'json',
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return stdout;
}

/**
 * With PROVISIONER_RECORD_HISTORIES=<dir>, writes a run's history there as
 * `temporal workflow show -o json` prints it (the replay test's format,
 * test/unit/workflows/histories): how the recorded histories were made.
 * Without it, does nothing.
 */
export async function recordHistory(
  stack: { temporalAddress: string; temporalNamespace: string },
  workflowId: string,
  runId: string,
  file: string,
): Promise<void> {
  const dir = process.env.PROVISIONER_RECORD_HISTORIES;
  if (!dir) return;
  const history = await temporalJson(stack, ['workflow', 'show', '-w', workflowId, '-r', runId]);
  writeFileSync(join(dir, file), history);
}
