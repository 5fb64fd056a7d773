import { createRequire } from 'node:module';
import type { Worker as ThreadWorker } from 'node:worker_threads';
import { ConfigError, optionalEnv } from '../config/env';

/**
 * The workflow sandbox without the Temporal SDK's per-promise stack traces
 * (issue 26: replaying a machine's history costs 18.6 ms of CPU as shipped,
 * 10.7 ms without them).
 *
 * - **Off: a stack trace of every promise.** The SDK's promise hook captures
 *   and source-maps a stack trace for each promise workflow code creates, so
 *   that the `__stack_trace` / `__enhanced_stack_trace` queries (the Temporal
 *   UI's "Stack Trace" tab) can say where a blocked workflow waits. Without
 *   the hook those queries fail with "Workflow stack traces are not enabled
 *   on this worker" (a failed query; the workflow is untouched). Nothing in
 *   this project sends them; failures carry their own stacks.
 * - **Kept: the deadlock detector.** Each call into the sandbox still runs
 *   with `vm`'s `timeout` (the SDK's 5 s watchdog), so workflow code that
 *   never yields fails its one workflow task and the thread goes on. Without
 *   it such a loop would hold the worker's one workflow thread
 *   (reuseV8Context) and wedge every workflow on the worker for good.
 *
 * `PROVISIONER_WORKFLOW_GUARDS=on` keeps the hook too (the SDK as it ships),
 * e.g. to read a stuck workflow's stack in the UI.
 *
 * How: the SDK runs workflows in a worker thread it starts from its own
 * `workflow-worker-thread.js`; while `Worker.create` runs, that thread is
 * started from {@link sandboxThreadCode} instead, which turns the hook off in
 * that thread only and then loads the SDK's file. Nothing else in the
 * process changes. If the SDK starts no thread from that file (an SDK that
 * starts it another way, or TEMPORAL_DEBUG's main-thread workflows), the
 * worker refuses to start rather than run without the saving unnoticed.
 */
export const WORKFLOW_GUARDS_ENV = 'PROVISIONER_WORKFLOW_GUARDS';

export function workflowGuardsFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const text = optionalEnv('PROVISIONER_WORKFLOW_GUARDS', 'off', env).trim();
  if (text === 'on') return true;
  if (text === 'off') return false;
  throw new ConfigError(`environment variable ${WORKFLOW_GUARDS_ENV}: "${text}" is not on or off`);
}

const sdkRequire = createRequire(require.resolve('@temporalio/worker'));

/** The SDK's workflow thread entry and its sandbox module, as the SDK resolves them. */
export const SDK_WORKFLOW_THREAD = sdkRequire.resolve('./workflow/workflow-worker-thread');
const SDK_VM_SHARED = sdkRequire.resolve('./workflow/vm-shared');

/**
 * The workflow thread's code (plain JavaScript: the thread loads no
 * TypeScript): the promise hook off, then `entry` (the SDK's thread file).
 */
export function sandboxThreadCode(entry: string, vmShared: string = SDK_VM_SHARED): string {
  return `'use strict';
const { GlobalHandlers } = require(${JSON.stringify(vmShared)});
if (typeof GlobalHandlers?.prototype?.setPromiseHook !== 'function') {
  throw new Error('the Temporal SDK has no GlobalHandlers.setPromiseHook: see worker/sandbox.ts');
}
GlobalHandlers.prototype.setPromiseHook = function setPromiseHook() {};
require(${JSON.stringify(entry)});
`;
}

type WorkerConstructor = typeof ThreadWorker;

/**
 * Runs `create` (the SDK's `Worker.create`) with the SDK's workflow threads
 * started from {@link sandboxThreadCode}; every other thread, before, during
 * and after, starts as asked. Throws, naming {@link WORKFLOW_GUARDS_ENV}, if
 * `create` succeeded without starting any workflow thread this could reach.
 * `onThread` is told of each redirected thread (tests).
 */
export async function withLeanSandbox<T>(
  create: () => Promise<T>,
  onThread: (thread: ThreadWorker) => void = () => {},
): Promise<T> {
  // the module object itself (an import would be a copy): the SDK reads `.Worker` from it
  const threads = createRequire(__filename)('node:worker_threads') as { Worker: WorkerConstructor };
  const Original = threads.Worker;
  let redirected = 0;
  class SandboxThread extends Original {
    constructor(filename: string | URL, options?: ConstructorParameters<WorkerConstructor>[1]) {
      const ours = filename === SDK_WORKFLOW_THREAD && !options?.eval;
      if (ours) {
        super(sandboxThreadCode(SDK_WORKFLOW_THREAD), { ...options, eval: true });
        redirected += 1;
        onThread(this);
      } else {
        super(filename, options);
      }
    }
  }
  threads.Worker = SandboxThread;
  let result: T;
  try {
    result = await create();
  } finally {
    threads.Worker = Original;
  }
  if (redirected === 0) {
    throw new Error(
      `the Temporal SDK started no workflow thread from ${SDK_WORKFLOW_THREAD}, so its promise hook ` +
        `could not be turned off (worker/sandbox.ts; TEMPORAL_DEBUG runs workflows on the main thread): ` +
        `set ${WORKFLOW_GUARDS_ENV}=on to run the SDK as it ships`,
    );
  }
  return result;
}
