import { ConfigError, optionalEnv } from '../config/env';

/**
 * The workflow bundle's modules, evaluated once per workflow thread when its
 * sandbox context is made instead of once per workflow run (the SDK's
 * `bundlerOptions.preloadModules`, with `reuseV8Context`). The SDK gives
 * every run a module cache of its own, so without this each of a thousand
 * machines' runs evaluated every module of workflows/ and what it imports
 * (its proxies, tables, the Unicode regular expression of core/text.ts,
 * `@temporalio/workflow`'s index) again, and each cached run kept its own
 * copies: an eighth of a launch's replay (8.1 → 7.1 ms, `tsx
 * bench/replay-cpu.ts`), and in a 1,000-machine bench the worker's peak RSS
 * 909 → 563 MiB, its CPU per machine unchanged within noise (README, "Worker
 * tuning").
 *
 * Preloading the entry preloads everything it imports, and only with
 * `PROVISIONER_REUSE_V8_CONTEXT=on` (the SDK runs the preload in its reusable
 * context only). A preloaded module is shared by every run the thread hosts,
 * and the SDK deep-freezes only its exports: not its module-local values, a
 * Map's or Set's contents, nor a function's properties. So it is safe only
 * while no module the entry reaches keeps state a run could change. Our
 * modules hold constants (`as const` or typed read-only), activity proxies
 * and signal definitions, which read the running workflow only when called;
 * the modules of `@temporalio/workflow` that the SDK does not already share
 * (its index, metrics, nexus, random streams, trigger, interceptors), read at
 * 1.24.0, do the same. What test/unit/worker/preload.test.ts holds: no
 * module the entry reaches has, at top level, a `let` or `var`, a class
 * static, an IIFE, a `g`/`y` regular expression, or an object or array
 * literal, `new` or call that is not `as const` or typed read-only all the
 * way down (calls of the SDK's proxy and definition factories excepted, and
 * one allow-listed value, with its reason); no package but the SDK's workflow and
 * common libraries; `@temporalio/workflow` is 1.24.0 and the six modules
 * above are the ones it shares (an upgrade fails the test and is audited
 * again). A syntactic scan: it does not see state reached through a
 * read-only type's functions. The replay test replays every recorded history
 * twice in one worker, so a leak that changes a later run's commands fails it.
 * Paths from the repository's root, without extension: resolved at run time,
 * so the same list serves the sources (tsx) and the shipped build
 * (scripts/build-worker.sh keeps the tree's shape).
 */
export const WORKFLOW_PRELOAD_MODULES: readonly string[] = ['workflows/index'];

/**
 * The bundler options every worker of the machine workflows is made with (and
 * the replay test): `PROVISIONER_WORKFLOW_PRELOAD` `on` (default) or `off`
 * (every run evaluates every module, as before; for measuring). A bench that
 * bundles workflows of its own passes their `workflowsPath` as the entry, so
 * it preloads them as the worker preloads its own.
 */
export function workflowBundlerOptions(
  env: NodeJS.ProcessEnv = process.env,
  workflowsPath?: string,
): {
  preloadModules: string[];
} {
  const text = optionalEnv('PROVISIONER_WORKFLOW_PRELOAD', 'on', env).trim();
  if (text !== 'on' && text !== 'off') {
    throw new ConfigError(
      `environment variable PROVISIONER_WORKFLOW_PRELOAD: "${text}" is not on or off`,
    );
  }
  if (text === 'off') return { preloadModules: [] };
  return {
    preloadModules: workflowsPath
      ? [workflowsPath]
      : WORKFLOW_PRELOAD_MODULES.map((m) => require.resolve(`../${m}`)),
  };
}
