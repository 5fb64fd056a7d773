import { createRequire } from 'node:module';
import type { Worker as ThreadWorker } from 'node:worker_threads';
import { ConfigError, optionalEnv } from '../config/env';

/**
 * The workflow sandbox without two of the Temporal SDK's per-call costs
 * (issue 26: together about half of the CPU a machine's workflow tasks cost
 * the worker, measured by replaying a machine's history: 18.6 → 8.2 ms).
 *
 * - **Stack traces of every promise.** The SDK's promise hook captures and
 *   source-maps a stack trace for each promise workflow code creates, so
 *   that the `__stack_trace` query (the Temporal UI's "Stack Trace" tab) can
 *   say where a blocked workflow waits. Off: that query answers without
 *   stacks; nothing else reads them (failures carry their own stacks).
 * - **A watchdog thread per call into the sandbox.** Each call runs with
 *   `vm`'s `timeout`, which starts and joins a watchdog thread every time
 *   (about 45 µs of CPU a call here, several calls per activation), so that
 *   workflow code that never yields fails its task after 5 s. Off: such
 *   code would hold the workflow thread; the workflow task timeout
 *   (MACHINE_WORKFLOW_TASK_TIMEOUT) then hands the task to another worker,
 *   which meets the same loop. The workflows here never loop unbounded
 *   without awaiting.
 *
 * `PROVISIONER_WORKFLOW_GUARDS=on` keeps both (the SDK as it ships), e.g.
 * to read a stuck workflow's stack in the UI.
 *
 * How: the SDK runs workflows in a worker thread it starts from its own
 * `workflow-worker-thread.js`; while `Worker.create` runs, that thread is
 * started from {@link sandboxThreadCode} instead, which turns the two off in
 * that thread only and then loads the SDK's file. Nothing else in the
 * process changes.
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
 * TypeScript): the two guards off, then `entry` (the SDK's thread file).
 */
export function sandboxThreadCode(entry: string, vmShared: string = SDK_VM_SHARED): string {
  return `'use strict';
const vm = require('node:vm');
const { GlobalHandlers } = require(${JSON.stringify(vmShared)});
if (typeof GlobalHandlers?.prototype?.setPromiseHook !== 'function') {
  throw new Error('the Temporal SDK has no GlobalHandlers.setPromiseHook: see worker/sandbox.ts');
}
GlobalHandlers.prototype.setPromiseHook = function setPromiseHook() {};
const runInContext = vm.Script.prototype.runInContext;
vm.Script.prototype.runInContext = function (context, options) {
  if (options && options.timeout !== undefined) {
    const { timeout, ...rest } = options;
    return runInContext.call(this, context, rest);
  }
  return runInContext.call(this, context, options);
};
require(${JSON.stringify(entry)});
`;
}

type WorkerConstructor = typeof ThreadWorker;

/**
 * Runs `create` (the SDK's `Worker.create`) with the SDK's workflow threads
 * started from {@link sandboxThreadCode}; every other thread, before, during
 * and after, starts as asked.
 */
export async function withLeanSandbox<T>(create: () => Promise<T>): Promise<T> {
  // the module object itself (an import would be a copy): the SDK reads `.Worker` from it
  const threads = createRequire(__filename)('node:worker_threads') as { Worker: WorkerConstructor };
  const Original = threads.Worker;
  class SandboxThread extends Original {
    constructor(filename: string | URL, options?: ConstructorParameters<WorkerConstructor>[1]) {
      if (filename === SDK_WORKFLOW_THREAD && !options?.eval) {
        super(sandboxThreadCode(SDK_WORKFLOW_THREAD), { ...options, eval: true });
      } else {
        super(filename, options);
      }
    }
  }
  threads.Worker = SandboxThread;
  try {
    return await create();
  } finally {
    threads.Worker = Original;
  }
}
