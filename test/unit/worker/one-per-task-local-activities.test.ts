import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { ONE_PER_TASK_LOCAL_ACTIVITIES } from '../../../worker/tuner';

/**
 * The backlog gate takes a task out of its backlog while one of
 * ONE_PER_TASK_LOCAL_ACTIVITIES runs (worker/tuner.ts), on the word that its
 * task awaits it alone, never beside another local activity: the slot info
 * names only the activity's type, so a task running two would be taken out
 * twice. This checks, by syntax, each place in workflows/ that starts one.
 *
 * The rule: a listed activity taken from a local-activity proxy is called
 * where it is taken, the call is the direct operand of an `await`
 * (parentheses aside), and the function that awaits it is one of its
 * module's own: a function declaration, a class's method, or a const's arrow
 * or function expression, at the module's top level. So
 * `await localRecords.loadMachine(…)` or
 * `await localLaunching.startInstance.executeWithOptions(…)` in such a
 * function. Reported, each with its file and line:
 * - a call not awaited where it is made: inside `Promise.all` or
 *   `Promise.race`, its promise kept and awaited later, the activity passed
 *   along;
 * - a call awaited in an inline function, which may run beside another: a
 *   callback (`xs.map(async (x) => …)`, a handler given to `setHandler`), an
 *   async IIFE, a const's arrow inside a function;
 * - the activity taken out of its proxy (`const { loadMachine } =
 *   localRecords`) or by a computed key;
 * - a listed name taken from anything not traced to a proxy: a parameter, an
 *   object's property (`ctx.quick.loadMachine`), a call's result. Only what
 *   is traced to plain activity proxies alone (`proxyActivities`) is let go.
 *
 * Traced: a const made by `proxyLocalActivities(…)` or `proxyActivities(…)`
 * (workflows/proxies.ts), under its name or an alias imported from a
 * workflow file; in a file, a const whose value is one of those (`const
 * quick = ctx.local ? localRecords : records`); and such an expression in
 * place (`(ctx.local ? localRecords : records).loadMachine`). Names are
 * matched per file, not per scope, so a name is traced only when every
 * declaration of it in the file is: a parameter or a `let` of the same name
 * anywhere in the file leaves it untraced, and its sites reported.
 *
 * Not checked: whether the module functions that await these are themselves
 * run one beside another (`Promise.all([stopIfDead(ctx), …])`); that is left
 * to review. Nor a listed activity taken by a computed key from something not
 * traced to a proxy, or by a destructuring assignment (`({ loadMachine } =
 * localRecords)`, not a declaration).
 */

/** Why a site is reported. */
type Breach =
  | 'not awaited where it is made'
  | 'awaited in an inline function'
  | 'taken out of its proxy'
  | 'taken by a computed key'
  | 'not traced to a proxy';

interface Site {
  file: string;
  line: number;
  activity: string;
  /** The named function the site is in (`''` at module level). */
  inFunction: string;
  text: string;
}

interface Reported extends Site {
  why: Breach;
}

/** What a name or an expression may hold: a local-activity proxy, a plain one, or both. */
type Proxies = ReadonlySet<'local' | 'plain'>;

/** A declaration of a name in a file, as far as tracing a proxy goes. */
type Declared = { made: 'local' | 'plain' } | { value: ts.Expression } | { untraced: true };

/** The sites of listed local activities: kept as the rule says (`awaited`), and the rest (`reported`). */
function checkLocalActivities(
  sources: ReadonlyArray<{ file: string; text: string }>,
  listed: ReadonlySet<string>,
): { awaited: Site[]; reported: Reported[] } {
  const files = sources.map(({ file, text }) => ({
    file,
    source: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true),
  }));
  const made = new Map<string, 'local' | 'plain'>();
  for (const { source } of files) {
    visit(source, (node) => {
      if (!ts.isVariableDeclaration(node) || !ts.isIdentifier(node.name)) return;
      const kind = madeProxy(node);
      if (kind) made.set(node.name.text, kind);
    });
  }
  const awaited: Site[] = [];
  const reported: Reported[] = [];
  for (const { file, source } of files) {
    const traced = tracer(declarations(source, made));
    const site = (node: ts.Node, activity: string): Site => ({
      file,
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      activity,
      inFunction: functionOf(node),
      text: node.getText().split('\n')[0]!,
    });
    const report = (node: ts.Node, activity: string, why: Breach) =>
      reported.push({ ...site(node, activity), why });
    visit(source, (node) => {
      if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
        const activity = ts.isPropertyAccessExpression(node)
          ? node.name.text
          : ts.isStringLiteralLike(node.argumentExpression)
            ? node.argumentExpression.text
            : undefined;
        const from = traced(node.expression);
        if (activity === undefined) {
          // a computed key on a local proxy may name a listed activity
          if (from?.has('local')) report(node, '[computed]', 'taken by a computed key');
          return;
        }
        if (!listed.has(activity) || (from && !from.has('local'))) return;
        if (!from) report(node, activity, 'not traced to a proxy');
        else if (!awaitedWhereMade(node)) report(node, activity, 'not awaited where it is made');
        else if (!inModuleFunction(node)) report(node, activity, 'awaited in an inline function');
        else awaited.push(site(node, activity));
      }
      if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
        const key = node.propertyName ?? node.name;
        const activity = ts.isIdentifier(key) || ts.isStringLiteral(key) ? key.text : undefined;
        if (activity === undefined || !listed.has(activity)) return;
        const holder = node.parent.parent;
        const from =
          ts.isVariableDeclaration(holder) && holder.initializer
            ? traced(holder.initializer)
            : undefined;
        if (!from) report(node, activity, 'not traced to a proxy');
        else if (from.has('local')) report(node, activity, 'taken out of its proxy');
      }
    });
  }
  return { awaited, reported };
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  node.forEachChild((child) => visit(child, each));
}

/** Whether the declaration is a const made by `proxyLocalActivities(…)` or `proxyActivities(…)`. */
function madeProxy(node: ts.VariableDeclaration): 'local' | 'plain' | undefined {
  if (!ts.isIdentifier(node.name) || !isConst(node) || !node.initializer) return undefined;
  const value = node.initializer;
  if (!ts.isCallExpression(value) || !ts.isIdentifier(value.expression)) return undefined;
  const callee = value.expression.text;
  return callee === 'proxyLocalActivities'
    ? 'local'
    : callee === 'proxyActivities'
      ? 'plain'
      : undefined;
}

function isConst(node: ts.VariableDeclaration): boolean {
  return (
    ts.isVariableDeclarationList(node.parent) && (node.parent.flags & ts.NodeFlags.Const) !== 0
  );
}

/** Every name the file declares, each with all its declarations (names per file, not per scope). */
function declarations(
  source: ts.SourceFile,
  made: ReadonlyMap<string, 'local' | 'plain'>,
): Map<string, Declared[]> {
  const declared = new Map<string, Declared[]>();
  const add = (name: ts.Node | undefined, as: Declared) => {
    if (name && ts.isIdentifier(name)) {
      declared.set(name.text, [...(declared.get(name.text) ?? []), as]);
    }
  };
  const untraced = { untraced: true } as const;
  visit(source, (node) => {
    if (ts.isVariableDeclaration(node)) {
      const kind = madeProxy(node);
      add(
        node.name,
        kind
          ? { made: kind }
          : isConst(node) && node.initializer
            ? { value: node.initializer }
            : untraced,
      );
    } else if (ts.isImportSpecifier(node)) {
      const imported = made.get((node.propertyName ?? node.name).text);
      const from = node.parent.parent.parent.moduleSpecifier;
      const local = ts.isStringLiteral(from) && from.text.startsWith('.');
      add(node.name, imported && local ? { made: imported } : untraced);
    } else if (
      ts.isBindingElement(node) ||
      ts.isParameter(node) ||
      ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isClassDeclaration(node) ||
      ts.isImportClause(node) ||
      ts.isNamespaceImport(node) ||
      ts.isImportEqualsDeclaration(node) ||
      ts.isEnumDeclaration(node)
    ) {
      add(node.name, untraced);
    }
  });
  return declared;
}

/** What an expression may hold, or `undefined` when it is not traced to proxies alone. */
function tracer(
  declared: ReadonlyMap<string, Declared[]>,
): (node: ts.Expression) => Proxies | undefined {
  const names = new Map<string, Proxies | undefined>();
  const resolving = new Set<string>();
  const name = (text: string): Proxies | undefined => {
    if (names.has(text)) return names.get(text);
    // a name met again while it is resolved is not traced (`const a = b` … `const b = a` in two scopes)
    if (resolving.has(text)) return undefined;
    resolving.add(text);
    let holds: Set<'local' | 'plain'> | undefined = new Set();
    for (const d of declared.get(text) ?? [{ untraced: true }]) {
      const one = 'made' in d ? new Set([d.made]) : 'value' in d ? expression(d.value) : undefined;
      if (!one) {
        holds = undefined;
        break;
      }
      for (const kind of one) holds.add(kind);
    }
    resolving.delete(text);
    names.set(text, holds);
    return holds;
  };
  const expression = (node: ts.Expression): Proxies | undefined => {
    if (ts.isParenthesizedExpression(node)) return expression(node.expression);
    if (ts.isIdentifier(node)) return name(node.text);
    const sides = ts.isConditionalExpression(node)
      ? [node.whenTrue, node.whenFalse]
      : ts.isBinaryExpression(node) &&
          (node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken ||
            node.operatorToken.kind === ts.SyntaxKind.BarBarToken)
        ? [node.left, node.right]
        : [];
    const each = sides.map(expression);
    if (each.length === 0 || each.some((one) => one === undefined)) return undefined;
    return new Set(each.flatMap((one) => [...one!]));
  };
  return expression;
}

/** Whether the activity taken at `node` is called there, and the call is the operand of an `await`. */
function awaitedWhereMade(node: ts.Node): boolean {
  let call: ts.Node = node;
  const parent = node.parent;
  if (ts.isCallExpression(parent) && parent.expression === node) {
    call = parent;
  } else if (
    ts.isPropertyAccessExpression(parent) &&
    parent.name.text === 'executeWithOptions' &&
    ts.isCallExpression(parent.parent) &&
    parent.parent.expression === parent
  ) {
    call = parent.parent;
  } else {
    return false;
  }
  let up = call.parent;
  while (ts.isParenthesizedExpression(up)) up = up.parent;
  return ts.isAwaitExpression(up);
}

/**
 * Whether the nearest function around `node` is one of its module's own: a
 * function declaration, a class's method or a const's function, at the
 * module's top level. An inline function (a callback, an IIFE, a function
 * made inside another) may be run beside another of its kind.
 */
function inModuleFunction(node: ts.Node): boolean {
  let fn = node.parent;
  while (fn && !ts.isFunctionLike(fn)) fn = fn.parent;
  if (!fn) return false;
  if (ts.isFunctionDeclaration(fn)) return ts.isSourceFile(fn.parent);
  if (ts.isMethodDeclaration(fn)) {
    return ts.isClassDeclaration(fn.parent) && ts.isSourceFile(fn.parent.parent);
  }
  if (!ts.isArrowFunction(fn) && !ts.isFunctionExpression(fn)) return false;
  const declaration = fn.parent;
  return (
    ts.isVariableDeclaration(declaration) &&
    declaration.initializer === fn &&
    isConst(declaration) &&
    ts.isVariableStatement(declaration.parent.parent) &&
    ts.isSourceFile(declaration.parent.parent.parent)
  );
}

/** The name of the function `node` is in, the nearest named one. */
function functionOf(node: ts.Node): string {
  for (let up = node.parent; up; up = up.parent) {
    if ((ts.isFunctionDeclaration(up) || ts.isMethodDeclaration(up)) && up.name) {
      return up.name.getText();
    }
    if (ts.isVariableDeclaration(up) && up.initializer && ts.isFunctionLike(up.initializer)) {
      return up.name.getText();
    }
  }
  return '';
}

/**
 * Sites the rule reports that keep its word another way, each with why. A
 * site here that the checker no longer finds fails the test, so the list
 * never outlives the code.
 */
const KEEPS_ITS_WORD: ReadonlyArray<{
  file: string;
  inFunction: string;
  activity: string;
  why: Breach;
  reason: string;
}> = [
  {
    file: 'workflows/machine.ts',
    inFunction: 'loadPrepared',
    activity: 'loadMachine',
    why: 'not awaited where it is made',
    reason:
      "the first read's promise is kept only to wait for it or a destroy (`condition`), then awaited (after cancelling its scope on a destroy: WAIT_CANCELLATION_COMPLETED); the function starts nothing else meanwhile",
  },
];

const ROOT = resolve(__dirname, '../../..');

function workflowSources(): Array<{ file: string; text: string }> {
  return readdirSync(join(ROOT, 'workflows'))
    .filter((name) => name.endsWith('.ts'))
    .sort()
    .map((name) => ({
      file: `workflows/${name}`,
      text: readFileSync(join(ROOT, 'workflows', name), 'utf8'),
    }));
}

const where = (s: Site) => `${s.file}:${s.line} (${s.inFunction}) ${s.text}`;

describe('ONE_PER_TASK_LOCAL_ACTIVITIES: each awaited alone by its task', () => {
  const { awaited, reported } = checkLocalActivities(
    workflowSources(),
    ONE_PER_TASK_LOCAL_ACTIVITIES,
  );
  const excusedBy = (s: Reported) =>
    KEEPS_ITS_WORD.filter(
      (k) =>
        k.file === s.file &&
        k.inFunction === s.inFunction &&
        k.activity === s.activity &&
        k.why === s.why,
    );

  it('every site of one in workflows/ is awaited where it is made, in a function of its module', () => {
    expect(
      reported.filter((s) => excusedBy(s).length === 0).map((s) => `${where(s)}: ${s.why}`),
    ).toEqual([]);
  });

  it('each site excused still exists, once', () => {
    for (const k of KEEPS_ITS_WORD) {
      expect(reported.filter((s) => excusedBy(s).includes(k)).map(where)).toHaveLength(1);
    }
  });

  it('sees the calls it holds to the rule (the check is not empty)', () => {
    const seen = new Set(awaited.map((s) => `${s.file} ${s.activity}`));
    // the launch step in the task, the machine read, and the re-read before a stop
    expect(seen).toContain('workflows/launch.ts startInstance');
    expect(seen).toContain('workflows/launch.ts loadMachine');
    expect(seen).toContain('workflows/machine.ts loadMachine');
  });
});

describe('the check itself, over workflows that break the rule', () => {
  const proxies = [
    "import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';",
    'export const records = proxyActivities<A>({ startToCloseTimeout: 1 });',
    'export const localRecords = proxyLocalActivities<A>({ startToCloseTimeout: 1 });',
    'export const localLaunching = proxyLocalActivities<A>({ startToCloseTimeout: 1 });',
  ].join('\n');
  const workflow = [
    /* 1 */ "import { localLaunching as launchHere, localRecords, records } from './proxies';",
    /* 2 */ 'export async function breaks(local: boolean, x: I, xs: I[]) {',
    /* 3 */ '  await Promise.all([localRecords.loadMachine(x), localRecords.recordError(x)]);',
    /* 4 */ '  const quick = local ? localRecords : records;',
    /* 5 */ '  const kept = quick.loadMachine(x);',
    /* 6 */ '  await localRecords.recordError(x);',
    /* 7 */ '  await kept;',
    /* 8 */ '  await retried(launchHere.startInstance);',
    /* 9 */ '  const { startInstance } = launchHere;',
    /* 10 */ '  await Promise.race([(local ? localRecords : records).loadMachine(x), sleep(1)]);',
    /* 11 */ "  void launchHere['startInstance'].executeWithOptions(o, [x]);",
    /* 12 */ '  await Promise.all(xs.map(async (y) => await localRecords.loadMachine(y)));',
    /* 13 */ '  await Promise.all([(async () => await launchHere.startInstance(x))(), other()]);',
    /* 14 */ '  setHandler(read, async () => { await quick.loadMachine(x); });',
    /* 15 */ '  const again = async () => await localRecords.loadMachine(x);',
    /* 16 */ '  await Promise.all([again(), again()]);',
    /* 17 */ '  await Promise.all([viaParam(localRecords), viaObject({ read: localRecords })]);',
    /* 18 */ "  await localRecords[local ? 'loadMachine' : 'recordError'](x);",
    /* 19 */ '}',
    /* 20 */ 'async function viaParam(p: typeof localRecords) {',
    /* 21 */ '  await p.loadMachine(x);',
    /* 22 */ '}',
    /* 23 */ 'async function viaObject(ctx: { read: typeof localRecords }) {',
    /* 24 */ '  await ctx.read.loadMachine(x);',
    /* 25 */ '}',
    /* 26 */ 'const holder = { quick: localRecords };',
    /* 27 */ 'export async function viaHolder() { await holder.quick.startInstance(x); }',
    /* 28 */ 'export async function keeps(local: boolean, x: I, xs: I[]) {',
    /* 29 */ '  await localRecords.loadMachine(x);',
    /* 30 */ '  await (launchHere.startInstance.executeWithOptions(o, [x]));',
    /* 31 */ '  const quick = local ? localRecords : records;',
    /* 32 */ '  const read = await quick.loadMachine(x);',
    /* 33 */ '  // not listed, or not a local proxy: not the rule’s',
    /* 34 */ '  void localRecords.recordError(x);',
    /* 35 */ '  await Promise.all([records.loadMachine(x), records.loadMachine(x)]);',
    /* 36 */ '  await Promise.all(xs.map(async (y) => await records.loadMachine(y)));',
    /* 37 */ '  return read;',
    /* 38 */ '}',
    /* 39 */ 'export const keepsToo = async (x: I) => await localRecords.loadMachine(x);',
    /* 40 */ 'class Steps { async read(x: I) { return await localRecords.loadMachine(x); } }',
  ].join('\n');
  // a proxy's name declared again (a parameter) in its file: no longer traced, anywhere in it
  const shadowed = [
    /* 1 */ "import { records } from './proxies';",
    /* 2 */ 'export async function shadows(x: I) {',
    /* 3 */ '  await records.loadMachine(x);',
    /* 4 */ '}',
    /* 5 */ 'function choose(records: R) { return records; }',
  ].join('\n');
  const { awaited, reported } = checkLocalActivities(
    [
      { file: 'workflows/proxies.ts', text: proxies },
      { file: 'workflows/bad.ts', text: workflow },
      { file: 'workflows/shadow.ts', text: shadowed },
    ],
    ONE_PER_TASK_LOCAL_ACTIVITIES,
  );
  const bad = (line: number, activity: string, inFunction: string, why: Breach) => ({
    file: 'workflows/bad.ts',
    line,
    activity,
    inFunction,
    why,
  });

  it('reports each site that breaks it, by file, line and why', () => {
    expect(
      reported.map(({ file, line, activity, inFunction, why }) => ({
        file,
        line,
        activity,
        inFunction,
        why,
      })),
    ).toEqual([
      // inside Promise.all, beside another local activity
      bad(3, 'loadMachine', 'breaks', 'not awaited where it is made'),
      // kept and awaited after another local activity ran
      bad(5, 'loadMachine', 'breaks', 'not awaited where it is made'),
      // passed along
      bad(8, 'startInstance', 'breaks', 'not awaited where it is made'),
      // taken out of the proxy
      bad(9, 'startInstance', 'breaks', 'taken out of its proxy'),
      // inside Promise.race, through a proxy chosen in place
      bad(10, 'loadMachine', 'breaks', 'not awaited where it is made'),
      // not awaited at all, through an aliased import and an element access
      bad(11, 'startInstance', 'breaks', 'not awaited where it is made'),
      // awaited, but in an async callback that Promise.all runs beside its others
      bad(12, 'loadMachine', 'breaks', 'awaited in an inline function'),
      // awaited, but in an async IIFE run beside another
      bad(13, 'startInstance', 'breaks', 'awaited in an inline function'),
      // awaited, but in a handler, which runs whenever its signal comes
      bad(14, 'loadMachine', 'breaks', 'awaited in an inline function'),
      // awaited, but in a function made inside another, run twice at once
      bad(15, 'loadMachine', 'again', 'awaited in an inline function'),
      // a computed key, which may name a listed activity
      bad(18, '[computed]', 'breaks', 'taken by a computed key'),
      // the proxy passed as a parameter
      bad(21, 'loadMachine', 'viaParam', 'not traced to a proxy'),
      // the proxy in an object's property, passed in
      bad(24, 'loadMachine', 'viaObject', 'not traced to a proxy'),
      // the proxy in a module const's property
      bad(27, 'startInstance', 'viaHolder', 'not traced to a proxy'),
      // a plain proxy's name that a parameter in the same file also declares
      {
        file: 'workflows/shadow.ts',
        line: 3,
        activity: 'loadMachine',
        inFunction: 'shadows',
        why: 'not traced to a proxy',
      },
    ]);
  });

  it('holds the awaited calls to be what the rule allows', () => {
    expect(awaited.map((s) => `${s.line} ${s.inFunction}`)).toEqual([
      '29 keeps',
      '30 keeps',
      '32 keeps',
      '39 keepsToo',
      '40 read',
    ]);
  });
});
