import { ConfigError, optionalEnv } from '../config/env';

/**
 * The workflow bundle's modules, evaluated once per workflow thread when its
 * sandbox context is made instead of once per workflow run (the SDK's
 * `bundlerOptions.preloadModules`, with `reuseV8Context`). The SDK gives
 * every run a module cache of its own, so without this each of a thousand
 * machines' runs evaluated every module of workflows/ and what it imports
 * (its proxies, tables, the Unicode regular expression of core/text.ts,
 * `@temporalio/workflow`'s index) again: about 1 ms of the worker's CPU per
 * machine, an eighth of a launch's replay (`tsx bench/replay-cpu.ts`,
 * README "Worker tuning").
 *
 * Preloading the entry preloads everything it imports. That is safe only
 * because no module of the bundle keeps state of its own: a preloaded module
 * is shared by every run the thread hosts, and the SDK deep-freezes its
 * exports. Our modules hold constants, activity proxies and signal
 * definitions, which read the running workflow only when called; the
 * modules of `@temporalio/workflow` that the SDK does not already share (its
 * index, metrics, nexus, random streams, trigger, interceptors) do the same.
 * test/unit/worker/preload.test.ts holds both: no module-level `let`, `var`
 * or collection not typed read-only in any module the entry reaches, and the
 * SDK's list unchanged (an upgrade that changes it is audited again).
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
