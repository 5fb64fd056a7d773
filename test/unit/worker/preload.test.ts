import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';
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

/**
 * Calls whose result keeps no state of its own: the SDK's proxies and
 * definitions resolve the running workflow each time they are used
 * (`@temporalio/workflow` 1.24.0, read: workflow.js, sinks.js), and hold
 * nothing a run can change.
 */
const STATELESS_FACTORIES: ReadonlySet<string> = new Set([
  'proxyActivities',
  'proxyLocalActivities',
  'proxySinks',
  'defineSignal',
  'defineQuery',
  'defineUpdate',
  'defineSearchAttributeKey',
]);

/** Module-level values the scan flags that are not state, each with why. */
const STATE_ALLOWED: readonly { module: string; found: string; reason: string }[] = [
  {
    module: 'temporal/failures',
    found: 'call Object.values NON_RETRYABLE_FAILURES',
    reason:
      "typed string[] for the SDK's RetryPolicy.nonRetryableErrorTypes; only read (compileRetryPolicy copies it), and the SDK deep-freezes it as an export, so a write would throw rather than leak",
  },
];

/** Whether a type annotation is read-only all the way down (syntactically: no type checker). */
function readonlyType(type: ts.TypeNode): boolean {
  if (ts.isParenthesizedTypeNode(type)) return readonlyType(type.type);
  if (ts.isLiteralTypeNode(type) || ts.isTemplateLiteralTypeNode(type)) return true;
  if (ts.isFunctionTypeNode(type)) return true;
  if (ts.isUnionTypeNode(type) || ts.isIntersectionTypeNode(type)) {
    return type.types.every(readonlyType);
  }
  if (ts.isTypeOperatorNode(type) && type.operator === ts.SyntaxKind.ReadonlyKeyword) {
    const inner = type.type;
    if (ts.isArrayTypeNode(inner)) return readonlyType(inner.elementType);
    if (ts.isTupleTypeNode(inner)) {
      return inner.elements.every((e) => readonlyType(ts.isNamedTupleMember(e) ? e.type : e));
    }
    return false;
  }
  if (ts.isTypeLiteralNode(type)) {
    return type.members.every(
      (m) =>
        ts.isPropertySignature(m) &&
        m.modifiers?.some((k) => k.kind === ts.SyntaxKind.ReadonlyKeyword) === true &&
        m.type !== undefined &&
        readonlyType(m.type),
    );
  }
  if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName)) {
    const args = type.typeArguments ?? [];
    switch (type.typeName.text) {
      case 'ReadonlyArray':
      case 'ReadonlySet':
      case 'ReadonlyMap':
        return args.length > 0 && args.every(readonlyType);
      case 'Readonly': {
        const [inner] = args;
        if (!inner) return false;
        // Readonly<Record<K, V>>, Readonly<{ a: V }>: read-only when the values are
        if (ts.isTypeReferenceNode(inner) && ts.isIdentifier(inner.typeName)) {
          if (inner.typeName.text === 'Record') {
            return (inner.typeArguments ?? []).every(readonlyType);
          }
        }
        if (ts.isTypeLiteralNode(inner)) {
          return inner.members.every(
            (m) => ts.isPropertySignature(m) && m.type !== undefined && readonlyType(m.type),
          );
        }
        return readonlyType(inner);
      }
      default:
        return false;
    }
  }
  return [
    ts.SyntaxKind.StringKeyword,
    ts.SyntaxKind.NumberKeyword,
    ts.SyntaxKind.BooleanKeyword,
    ts.SyntaxKind.BigIntKeyword,
    ts.SyntaxKind.SymbolKeyword,
    ts.SyntaxKind.UndefinedKeyword,
    ts.SyntaxKind.NeverKeyword,
  ].includes(type.kind);
}

function unwrap(node: ts.Expression): ts.Expression {
  return ts.isParenthesizedExpression(node) ? unwrap(node.expression) : node;
}

function calleeName(call: ts.CallExpression | ts.NewExpression): string {
  const callee = unwrap(call.expression);
  return ts.isIdentifier(callee) || ts.isPropertyAccessExpression(callee)
    ? callee.getText()
    : '(expression)';
}

function isIife(node: ts.Node): boolean {
  if (!ts.isCallExpression(node)) return false;
  const callee = unwrap(node.expression);
  return ts.isArrowFunction(callee) || ts.isFunctionExpression(callee);
}

/** A class's static fields and blocks: a class is evaluated once per module. */
function classState(node: ts.ClassLikeDeclaration): string[] {
  const name = node.name?.text ?? '(class)';
  return node.members.flatMap((member) => {
    if (ts.isClassStaticBlockDeclaration(member)) return [`static block ${name}`];
    const isStatic = ts
      .getModifiers(member as ts.HasModifiers)
      ?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
    if (isStatic && ts.isPropertyDeclaration(member)) {
      return [`static ${name}.${member.name.getText()}`];
    }
    return [];
  });
}

/**
 * What a module-level expression holds that a run could change, wherever it
 * sits in the expression (function bodies left out: they run per call).
 * Always: IIFEs, `g`/`y` regular expressions, classes' statics. In an `open`
 * value also object and array literals, `new`s and calls (but the SDK's
 * STATELESS_FACTORIES); under `as const`, `new`s and calls; in a value typed
 * read-only, nothing more.
 */
function expressionState(name: string, node: ts.Expression, typed: boolean): string[] {
  const found: string[] = [];
  type Mode = 'open' | 'asConst' | 'typed';
  const visit = (n: ts.Node, mode: Mode): void => {
    if (ts.isFunctionLike(n) && !ts.isClassLike(n)) return;
    if (isIife(n)) {
      found.push(`IIFE ${name}`);
      return;
    }
    if (ts.isClassLike(n)) {
      found.push(...classState(n));
      return;
    }
    if (ts.isRegularExpressionLiteral(n)) {
      const flags = n.text.slice(n.text.lastIndexOf('/') + 1);
      if (/[gy]/.test(flags)) found.push(`regex /${flags} ${name}`);
      return;
    }
    if (ts.isAsExpression(n) || ts.isTypeAssertionExpression(n)) {
      if (ts.isTypeReferenceNode(n.type) && n.type.typeName.getText() === 'const') {
        visit(n.expression, mode === 'typed' ? 'typed' : 'asConst');
      } else {
        visit(n.expression, readonlyType(n.type) ? 'typed' : mode);
      }
      return;
    }
    let flagged = false;
    if (mode === 'open' && ts.isObjectLiteralExpression(n))
      flagged = !!found.push(`object ${name}`);
    if (mode === 'open' && ts.isArrayLiteralExpression(n)) flagged = !!found.push(`array ${name}`);
    if (mode !== 'typed' && ts.isNewExpression(n)) {
      flagged = !!found.push(`new ${calleeName(n)} ${name}`);
    }
    if (mode !== 'typed' && ts.isCallExpression(n)) {
      // what a factory is given is its options, read, not state of the module
      flagged = STATELESS_FACTORIES.has(calleeName(n))
        ? true
        : !!found.push(`call ${calleeName(n)} ${name}`);
    }
    // one finding per value; inside it, only what is state whatever its type
    ts.forEachChild(n, (c) => visit(c, flagged ? 'typed' : mode));
  };
  visit(node, typed ? 'typed' : 'open');
  return [...new Set(found)];
}

/**
 * Module-level values that are state a run could change and a later run on
 * the same workflow thread would see: the preloaded modules are shared by
 * every run the thread hosts, and the SDK deep-freezes only what a module
 * exports (never module-local values, a Map's or Set's contents, or a
 * function's properties). Scanned from the syntax tree: at module top level,
 * any `let` or `var` (destructuring too); a class's static field or block;
 * an IIFE; a regular expression with `g` or `y` (its `lastIndex`); a `const`
 * bound to an object or array literal, a `new` or a call, unless `as const`
 * or typed read-only all the way down (`Readonly<Record<K, V>>`,
 * `ReadonlyMap<K, V>`, `readonly T[]` of read-only values), or a call of a
 * STATELESS_FACTORIES. Each finding is `<kind> <name>`.
 */
function moduleState(source: string): string[] {
  const file = ts.createSourceFile('module.ts', source, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const names = (name: ts.BindingName): string[] =>
    ts.isIdentifier(name)
      ? [name.text]
      : name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : names(e.name)));
  for (const statement of file.statements) {
    if (ts.isVariableStatement(statement)) {
      const { flags, declarations } = statement.declarationList;
      const keyword =
        flags & ts.NodeFlags.Let ? 'let' : flags & ts.NodeFlags.Const ? 'const' : 'var';
      for (const declaration of declarations) {
        const name = names(declaration.name).join(', ');
        if (keyword !== 'const') found.push(`${keyword} ${name}`);
        else if (declaration.initializer) {
          const typed = declaration.type !== undefined && readonlyType(declaration.type);
          found.push(...expressionState(name, declaration.initializer, typed));
        }
      }
    } else if (ts.isClassDeclaration(statement)) {
      found.push(...classState(statement));
    } else if (ts.isExpressionStatement(statement) || ts.isExportAssignment(statement)) {
      found.push(...expressionState('(statement)', statement.expression, false));
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

  it("preloads the entry the worker bundles (worker/main.ts's workflowsPath)", () => {
    const main = readFileSync(resolve(ROOT, 'worker/main.ts'), 'utf8');
    expect(main).toContain("workflowsPath: require.resolve('../workflows'),");
    expect(main).toContain('bundlerOptions: workflowBundlerOptions(),');
    // what '../workflows' resolves to from worker/: the same file
    expect(workflowBundlerOptions({}).preloadModules).toEqual([
      require.resolve('../../../workflows'),
    ]);
    // the modules named where the preload's cost was measured are among those it reaches
    expect(reached).toEqual(
      expect.arrayContaining(['core/text', 'workflows/proxies', 'workflows/machine']),
    );
  });

  it('keeps no module-level state a run could change (moduleState), but what STATE_ALLOWED says why', () => {
    const found = reached.flatMap((module) =>
      moduleState(readFileSync(resolve(ROOT, `${module}.ts`), 'utf8')).map((state) => ({
        module,
        found: state,
      })),
    );
    const allowed = (f: { module: string; found: string }) =>
      STATE_ALLOWED.some((a) => a.module === f.module && a.found === f.found);
    expect(found.filter((f) => !allowed(f))).toEqual([]);
    // and every exception is still there to be allowed (none outlives its reason)
    expect(
      STATE_ALLOWED.filter((a) => !found.some((f) => allowed(f) && f.found === a.found)),
    ).toEqual([]);
  });

  it("imports no package but the SDK's workflow and common libraries", () => {
    for (const module of reached) {
      const packages = importsOf(module).packages.filter(
        (p) => p !== '@temporalio/workflow' && p !== '@temporalio/common',
      );
      expect({ module, packages }).toEqual({ module, packages: [] });
    }
  });

  it('shares only the SDK modules audited as stateless, of the version audited (an upgrade fails here and is audited again)', () => {
    // the audit (worker/preload.ts) read these files of @temporalio/workflow 1.24.0
    const sdk = resolve(dirname(require.resolve('@temporalio/workflow/lib/index.js')), '..');
    const { name, version } = JSON.parse(readFileSync(resolve(sdk, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    expect({ name, version }).toEqual({ name: '@temporalio/workflow', version: '1.24.0' });
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
    // the review's nine stateful forms, each flagged on its own (the line scan found none)
    const stateful: [string, string[]][] = [
      ['const memo: Record<string, number> = {};', ['object memo']],
      ['const seen: string[] = [];', ['array seen']],
      ['const byId =\n  new Map<string, number>();', ['new Map byId']],
      ['export let { a } = x;', ['let a']],
      ['class C { static n = 0; }', ['static C.n']],
      ['const next = (() => { let n = 0; return () => n++; })();', ['IIFE next']],
      ['const RE = /x/g;', ['regex /g RE']],
      ['const store = new AsyncLocalStorage();', ['new AsyncLocalStorage store']],
      ['const m: ReadonlyMap<string, number[]> = new Map();', ['new Map m']],
      // and the rest of what it is for
      ['let count = 0;', ['let count']],
      ['export var legacy = 1;', ['var legacy']],
      ['  let indented = 1;', ['let indented']],
      ['const seenIds: Set<string> = new Set();', ['new Set seenIds']],
      ['const sticky = /x/y;', ['regex /y sticky']],
      ['const T = { re: /x/g } as const;', ['regex /g T']],
      ['const L = [new Map()] as const;', ['new Map L']],
      ['const counts = new WeakMap<object, number>();', ['new WeakMap counts']],
      ['const pending = makeQueue();', ['call makeQueue pending']],
      ['const K = class { static made = 0; };', ['static (class).made']],
      ['class S { static { setUp(); } }', ['static block S']],
      ['(function () { register(); })();', ['IIFE (statement)']],
      ['const opts: Readonly<Record<string, string[]>> = {};', ['object opts']],
      ['const rows: ReadonlyArray<{ n: number }> = [];', ['array rows']],
    ];
    for (const [source, found] of stateful) {
      expect({ source, found: moduleState(source) }).toEqual({ source, found });
    }
    // read-only forms and per-call state: nothing
    const stateless = [
      'const FIXED: ReadonlySet<number> = new Set([1]);',
      'export const TABLE: ReadonlyMap<string, number> = new Map();',
      "const UNITS = ['s', 'm'] as const;",
      "const LIST: readonly string[] = ['a'];",
      'const UNIT_MS: Readonly<Record<string, number>> = { s: 1000 };',
      "const NAMES: ReadonlyArray<{ readonly name: string }> = [{ name: 'a' }];",
      "const SA = { a: { name: 'A', type: 'KEYWORD' } } as const;",
      'const TRACK = /^(\\d+)$/u;',
      'const LIMIT = 3;',
      "const NAME = `machine-${'x'}`;",
      "const acts = proxyActivities<A>({ startToCloseTimeout: '1 minute' });",
      "export const destroySignal = defineSignal<[string]>('destroy');",
      'function f() { let inside = 1; const m = new Map(); return /x/g.test(String(inside + m.size)); }',
      'const g = () => { let n = 0; return [n++]; };',
      'class D { n = 0; static make(): D { return new D(); } }',
      'export type T = { a: string[] };',
      "import { x } from './x';",
    ];
    for (const source of stateless) {
      expect({ source, found: moduleState(source) }).toEqual({ source, found: [] });
    }
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
    // a bench's own workflows: that entry instead, and off still off
    expect(workflowBundlerOptions({}, '/bench/floor.ts')).toEqual({
      preloadModules: ['/bench/floor.ts'],
    });
    expect(
      workflowBundlerOptions({ PROVISIONER_WORKFLOW_PRELOAD: 'off' }, '/bench/floor.ts'),
    ).toEqual({ preloadModules: [] });
    expect(() => workflowBundlerOptions({ PROVISIONER_WORKFLOW_PRELOAD: 'yes' })).toThrow(
      new ConfigError('environment variable PROVISIONER_WORKFLOW_PRELOAD: "yes" is not on or off'),
    );
  });
});
