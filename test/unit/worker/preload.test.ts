import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { ConfigError } from '../../../config/env';
import { WORKFLOW_PRELOAD_MODULES, workflowBundlerOptions } from '../../../worker/preload';

const ROOT = resolve(__dirname, '../../..');

/** The repository-relative module (no extension) a local import names, or undefined when it is no file. */
function resolveLocal(from: string, spec: string): string | undefined {
  const base = resolve(dirname(resolve(ROOT, `${from}.ts`)), spec);
  for (const [file, module] of [
    [`${base}.ts`, base],
    [`${base}/index.ts`, `${base}/index`],
  ] as const) {
    if (existsSync(file)) return relative(ROOT, module);
  }
  return undefined;
}

/** What a module imports at run time (type-only imports and exports left out). */
function importsOf(module: string): { local: string[]; packages: string[] } {
  const source = readFileSync(resolve(ROOT, `${module}.ts`), 'utf8');
  const local: string[] = [];
  const packages: string[] = [];
  const statements = source.matchAll(
    /^(import|export)\s+(type\s+)?(?:[^;]*?\sfrom\s+)?['"]([^'"]+)['"]/gm,
  );
  for (const [, , typeOnly, spec] of statements) {
    if (typeOnly || !spec) continue;
    if (spec.startsWith('.')) {
      const found = resolveLocal(module, spec);
      if (!found) throw new Error(`${module}: cannot resolve ${spec}`);
      local.push(found);
    } else {
      packages.push(spec);
    }
  }
  return { local, packages };
}

/** Every local module `entry` imports, directly or not, itself included. */
function closure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (module: string) => {
    if (seen.has(module)) return;
    seen.add(module);
    for (const next of importsOf(module).local) visit(next);
  };
  visit(entry);
  return seen;
}

/** Module-level declarations that could hold state a run changes (scanned from the source). */
function moduleState(source: string): string[] {
  const found: string[] = [];
  for (const line of source.split('\n')) {
    const mutable = /^(?:export\s+)?(let|var)\s+(\w+)/.exec(line);
    if (mutable) found.push(`${mutable[1]} ${mutable[2]}`);
    // a collection is fine only when typed read-only (ReadonlySet, ReadonlyMap)
    const collection =
      /^(?:export\s+)?const\s+(\w+)\s*(:\s*([^=]+))?=\s*new\s+(Map|WeakMap|Set|WeakSet)\b/.exec(
        line,
      );
    if (collection && !/^Readonly(Set|Map)</.test(collection[3]?.trim() ?? '')) {
      found.push(`${collection[4]} ${collection[1]}`);
    }
  }
  return found;
}

/**
 * The modules of `@temporalio/workflow` a run evaluates itself, not shared by
 * the SDK already: those its index reaches beyond what the sandbox's bootstrap
 * (worker-interface.js, global-overrides.js) loads. Read from the installed
 * package's compiled files.
 */
function sdkModulesPerRun(): string[] {
  const lib = dirname(require.resolve('@temporalio/workflow/lib/index.js'));
  const reach = (entry: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(entry)) return seen;
    seen.add(entry);
    const source = readFileSync(resolve(lib, entry), 'utf8');
    for (const [, spec] of source.matchAll(/require\("(\.\/[^"]+)"\)/g)) {
      const file = `${spec!.slice(2).replace(/\.js$/, '')}.js`;
      if (existsSync(resolve(lib, file))) reach(file, seen);
    }
    return seen;
  };
  const boot = reach('global-overrides.js', reach('worker-interface.js'));
  return [...reach('index.js')].filter((m) => !boot.has(m)).sort();
}

describe('the workflow bundle, preloaded once per workflow thread (worker/preload.ts)', () => {
  const reached = [
    ...new Set(WORKFLOW_PRELOAD_MODULES.flatMap((entry) => [...closure(entry)])),
  ].sort();

  it('is every module the workflows import: the entry is preloaded', () => {
    expect(WORKFLOW_PRELOAD_MODULES).toEqual(['workflows/index']);
    expect(reached).toEqual([...closure('workflows/index')].sort());
    // the modules named where the preload's cost was measured are among them
    expect(reached).toEqual(
      expect.arrayContaining(['core/text', 'workflows/proxies', 'workflows/machine']),
    );
  });

  it('keeps no module-level state (no let or var, no collection that is not typed read-only)', () => {
    for (const module of reached) {
      const source = readFileSync(resolve(ROOT, `${module}.ts`), 'utf8');
      expect({ module, state: moduleState(source) }).toEqual({ module, state: [] });
    }
  });

  it("imports no package but the SDK's workflow and common libraries", () => {
    for (const module of reached) {
      const packages = importsOf(module).packages.filter(
        (p) => p !== '@temporalio/workflow' && p !== '@temporalio/common',
      );
      expect({ module, packages }).toEqual({ module, packages: [] });
    }
  });

  it('shares only the SDK modules audited as stateless (an SDK upgrade that changes them is audited again)', () => {
    expect(sdkModulesPerRun()).toEqual([
      'index.js',
      'interceptors.js',
      'metrics.js',
      'nexus.js',
      'random-streams.js',
      'trigger.js',
    ]);
  });

  it('the state scan finds what it is for', () => {
    expect(
      moduleState(
        [
          'let count = 0;',
          'export var legacy = 1;',
          'const cache = new Map<string, number>();',
          'const seen: Set<string> = new Set();',
          'const FIXED: ReadonlySet<number> = new Set([1]);',
          'export const TABLE: ReadonlyMap<string, number> = new Map();',
          '  let inside = 1;',
        ].join('\n'),
      ),
    ).toEqual(['let count', 'var legacy', 'Map cache', 'Set seen']);
  });

  it('is given to the bundler as files, unless PROVISIONER_WORKFLOW_PRELOAD is off', () => {
    const { preloadModules } = workflowBundlerOptions({});
    expect(preloadModules.map((file) => relative(ROOT, file))).toEqual(['workflows/index.ts']);
    expect(workflowBundlerOptions({ PROVISIONER_WORKFLOW_PRELOAD: 'on' }).preloadModules).toEqual(
      preloadModules,
    );
    expect(workflowBundlerOptions({ PROVISIONER_WORKFLOW_PRELOAD: 'off' })).toEqual({
      preloadModules: [],
    });
    expect(() => workflowBundlerOptions({ PROVISIONER_WORKFLOW_PRELOAD: 'yes' })).toThrow(
      new ConfigError('environment variable PROVISIONER_WORKFLOW_PRELOAD: "yes" is not on or off'),
    );
  });
});
