import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker as ThreadWorker } from 'node:worker_threads';
import {
  SDK_WORKFLOW_THREAD,
  sandboxThreadCode,
  withLeanSandbox,
  workflowGuardsFromEnv,
} from '../../../worker/sandbox';

const sdkRequire = createRequire(require.resolve('@temporalio/worker'));
const VM_SHARED = sdkRequire.resolve('./workflow/vm-shared');

/**
 * A stand-in for the SDK's workflow thread: installs the SDK's sandbox hooks
 * as the SDK's thread does, then says whether the promise hook got
 * installed and whether a call into a context with a 20 ms `timeout` that
 * runs 200 ms was cut short.
 */
const PROBE = `
const { parentPort } = require('node:worker_threads');
const vm = require('node:vm');
const { globalHandlers } = require(${JSON.stringify(VM_SHARED)});
globalHandlers.install();
let timedOut = false;
try {
  new vm.Script('const end = Date.now() + 200; while (Date.now() < end) {}')
    .runInContext(vm.createContext({}), { timeout: 20 });
} catch (err) {
  timedOut = /timed out/.test(String(err && err.message));
}
parentPort.postMessage({ promiseHookInstalled: globalHandlers.promiseHookInstalled, timedOut });
`;

function run(code: string): Promise<{ promiseHookInstalled: boolean; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    const thread = new ThreadWorker(code, { eval: true });
    thread.once('message', (m: { promiseHookInstalled: boolean; timedOut: boolean }) => {
      void thread.terminate().then(() => resolve(m));
    });
    thread.once('error', reject);
  });
}

describe('the lean workflow sandbox (worker/sandbox.ts)', () => {
  let dir: string;
  let probe: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
    probe = join(dir, 'probe.js');
    writeFileSync(probe, PROBE);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('as the SDK ships it: the promise hook is installed and a call over its timeout is cut', async () => {
    await expect(run(`require(${JSON.stringify(probe)})`)).resolves.toEqual({
      promiseHookInstalled: true,
      timedOut: true,
    });
  });

  it('started from sandboxThreadCode: no promise hook, the per-call timeout kept', async () => {
    await expect(run(sandboxThreadCode(probe, VM_SHARED))).resolves.toEqual({
      promiseHookInstalled: false,
      timedOut: true,
    });
  });

  it('refuses an SDK whose sandbox module has no setPromiseHook to turn off', async () => {
    const fake = join(dir, 'vm-shared-without-hook.js');
    writeFileSync(fake, 'exports.GlobalHandlers = class {};');
    await expect(run(sandboxThreadCode(probe, fake))).rejects.toThrow(
      'the Temporal SDK has no GlobalHandlers.setPromiseHook: see worker/sandbox.ts',
    );
  });

  it("starts only the SDK's workflow thread from it, only while the worker is created", async () => {
    const threads = createRequire(__filename)('node:worker_threads') as {
      Worker: typeof ThreadWorker;
    };
    const original = threads.Worker;
    const seen: string[] = [];
    await withLeanSandbox(async () => {
      expect(threads.Worker).not.toBe(original);
      // the SDK's own thread file starts (and waits for the SDK's messages)
      const sdk = new threads.Worker(SDK_WORKFLOW_THREAD);
      await new Promise((resolve, reject) => {
        sdk.once('online', resolve);
        sdk.once('error', reject);
      });
      await sdk.terminate();
      seen.push('sdk thread online');
      // any other thread as asked
      seen.push(JSON.stringify(await run.call(undefined, `require(${JSON.stringify(probe)})`)));
    });
    expect(threads.Worker).toBe(original);
    expect(seen).toEqual([
      'sdk thread online',
      JSON.stringify({ promiseHookInstalled: true, timedOut: true }),
    ]);
  });

  describe("through the SDK's own thread creation (ThreadedVMWorkflowCreator.create, what Worker.create calls)", () => {
    const { ThreadedVMWorkflowCreator } = sdkRequire('./workflow/threaded-vm') as {
      ThreadedVMWorkflowCreator: {
        create(options: Record<string, unknown>): Promise<{ destroy(): Promise<void> }>;
      };
    };
    const logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
    /**
     * A workflow bundle whose module preload (run in the sandbox at the
     * thread's init, under the SDK's deadlock timeout) runs `preload`. The
     * SDK's promise hook reads `__TEMPORAL_ACTIVATOR__` from the context of
     * each promise created there: a getter counts those reads.
     */
    const bundle = (preload: string) => ({
      filename: 'probe-bundle.js',
      sourceMap: { version: 3, sources: [], names: [], mappings: '' },
      code: `globalThis.__webpack_module_cache__;
let activatorReads = 0;
Object.defineProperty(globalThis, '__TEMPORAL_ACTIVATOR__', { get() { activatorReads += 1; return undefined; } });
globalThis.__TEMPORAL__ = { preloadModules() { ${preload} } };`,
    });
    const COUNT_HOOK_READS = `Promise.resolve(1).then(() => 2); throw new Error('activator reads: ' + activatorReads);`;

    async function create(
      preload: string,
      lean: boolean,
    ): Promise<{ error: string; redirected: number }> {
      const started: ThreadWorker[] = [];
      const threads = createRequire(__filename)('node:worker_threads') as {
        Worker: typeof ThreadWorker;
      };
      const original = threads.Worker;
      // the SDK's threads, as-shipped ones included, to end them after the refused init
      class Tracked extends original {
        constructor(...args: ConstructorParameters<typeof ThreadWorker>) {
          super(...args);
          started.push(this);
        }
      }
      const go = () =>
        ThreadedVMWorkflowCreator.create({
          threadPoolSize: 1,
          workflowBundle: bundle(preload),
          isolateExecutionTimeoutMs: 300,
          reuseV8Context: true,
          registeredActivityNames: new Set<string>(),
          logger,
        });
      let redirected = 0;
      threads.Worker = Tracked;
      let error = 'none';
      try {
        await (lean ? withLeanSandbox(go, () => (redirected += 1)) : go());
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      } finally {
        threads.Worker = original;
        await Promise.all(started.map((t) => t.terminate()));
      }
      return { error, redirected };
    }

    it('as shipped: the promise hook runs for a promise the workflow code creates', async () => {
      await expect(create(COUNT_HOOK_READS, false)).resolves.toEqual({
        error: expect.stringMatching(/^activator reads: [1-9]/),
        redirected: 0,
      });
    });

    it('lean: the SDK thread is redirected and its promise hook is off', async () => {
      await expect(create(COUNT_HOOK_READS, true)).resolves.toEqual({
        error: 'activator reads: 0',
        redirected: 1,
      });
    });

    it('lean: workflow code that never yields is still cut by the deadlock timeout', async () => {
      await expect(create('for (;;) {}', true)).resolves.toEqual({
        error: 'Script execution timed out after 300ms',
        redirected: 1,
      });
    });
  });

  it('refuses to start when the SDK started no workflow thread it could redirect', async () => {
    await expect(withLeanSandbox(() => Promise.resolve('worker'))).rejects.toThrow(
      `the Temporal SDK started no workflow thread from ${SDK_WORKFLOW_THREAD}, so its promise hook ` +
        'could not be turned off (worker/sandbox.ts; TEMPORAL_DEBUG runs workflows on the main thread): ' +
        'set PROVISIONER_WORKFLOW_GUARDS=on to run the SDK as it ships',
    );
  });

  it('puts the SDK back even when the creation fails', async () => {
    const threads = createRequire(__filename)('node:worker_threads') as {
      Worker: typeof ThreadWorker;
    };
    const original = threads.Worker;
    await expect(withLeanSandbox(() => Promise.reject(new Error('no connection')))).rejects.toThrow(
      'no connection',
    );
    expect(threads.Worker).toBe(original);
  });

  it('reads PROVISIONER_WORKFLOW_GUARDS: off by default, on, or refused', () => {
    expect(workflowGuardsFromEnv({})).toBe(false);
    expect(workflowGuardsFromEnv({ PROVISIONER_WORKFLOW_GUARDS: 'off' })).toBe(false);
    expect(workflowGuardsFromEnv({ PROVISIONER_WORKFLOW_GUARDS: ' on ' })).toBe(true);
    expect(() => workflowGuardsFromEnv({ PROVISIONER_WORKFLOW_GUARDS: 'yes' })).toThrow(
      'environment variable PROVISIONER_WORKFLOW_GUARDS: "yes" is not on or off',
    );
  });
});
