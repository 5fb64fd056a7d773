import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { ONE_PER_TASK_LOCAL_ACTIVITIES } from '../../../worker/tuner';

/**
 * The backlog gate takes a task out of its backlog while one of
 * ONE_PER_TASK_LOCAL_ACTIVITIES runs (worker/tuner.ts), on the word that its
 * task awaits it alone, never beside another local activity: the slot info
 * names only the activity's type, so a task running two would be taken out
 * twice. This holds the workflows to that word.
 *
 * The rule: a call of a listed activity through a local-activity proxy is
 * the direct operand of an `await` (parentheses aside):
 * `await localRecords.loadMachine(…)`, or
 * `await localLaunching.startInstance.executeWithOptions(…)`. Anything else
 * is reported with its file and line: the call inside `Promise.all` or
 * `Promise.race`, its promise kept and awaited later, the activity passed
 * along or taken out of the proxy (`const { loadMachine } = localRecords`).
 *
 * A local-activity proxy: a const made by `proxyLocalActivities(…)`
 * (workflows/proxies.ts), under its name or an import alias; in a file, a
 * const whose value may be one (`const quick = ctx.local ? localRecords :
 * records`); and an expression that may be one
 * (`(ctx.local ? localRecords : records).loadMachine`). Syntax only, no type
 * checker: names are matched per file, not per scope, which can only report
 * more.
 */

interface Site {
  file: string;
  line: number;
  activity: string;
  /** The named function the site is in (`''` at module level). */
  inFunction: string;
  text: string;
}

/** The sites of listed local activities: awaited as the rule says, and the rest (`reported`). */
function checkLocalActivities(
  sources: ReadonlyArray<{ file: string; text: string }>,
  listed: ReadonlySet<string>,
): { awaited: Site[]; reported: Site[] } {
  const files = sources.map(({ file, text }) => ({
    file,
    source: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true),
  }));
  const made = new Set<string>();
  for (const { source } of files) {
    visit(source, (node) => {
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.initializer &&
        ts.isCallExpression(node.initializer) &&
        ts.isIdentifier(node.initializer.expression) &&
        node.initializer.expression.text === 'proxyLocalActivities'
      ) {
        made.add(node.name.text);
      }
    });
  }
  const awaited: Site[] = [];
  const reported: Site[] = [];
  for (const { file, source } of files) {
    const proxies = new Set(made);
    visit(source, (node) => {
      if (ts.isImportSpecifier(node) && made.has((node.propertyName ?? node.name).text)) {
        proxies.add(node.name.text);
      }
    });
    // consts that may hold a proxy (one may name another): until no more are found
    for (let more = true; more;) {
      more = false;
      visit(source, (node) => {
        if (
          ts.isVariableDeclaration(node) &&
          ts.isIdentifier(node.name) &&
          node.initializer &&
          !proxies.has(node.name.text) &&
          mayBeProxy(node.initializer, proxies)
        ) {
          proxies.add(node.name.text);
          more = true;
        }
      });
    }
    const site = (node: ts.Node, activity: string): Site => ({
      file,
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      activity,
      inFunction: functionOf(node),
      text: node.getText().split('\n')[0]!,
    });
    visit(source, (node) => {
      const activity = activityTaken(node, proxies, listed);
      if (activity !== undefined) {
        (awaitedAlone(node) ? awaited : reported).push(site(node, activity));
      }
      if (
        ts.isVariableDeclaration(node) &&
        ts.isObjectBindingPattern(node.name) &&
        node.initializer &&
        mayBeProxy(node.initializer, proxies)
      ) {
        for (const element of node.name.elements) {
          const name = (element.propertyName ?? element.name).getText();
          if (listed.has(name)) reported.push(site(element, name));
        }
      }
    });
  }
  return { awaited, reported };
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  node.forEachChild((child) => visit(child, each));
}

function unparenthesized(node: ts.Expression): ts.Expression {
  return ts.isParenthesizedExpression(node) ? unparenthesized(node.expression) : node;
}

/** Whether the expression's value may be a proxy: its name, or either branch or side of it. */
function mayBeProxy(node: ts.Expression, proxies: ReadonlySet<string>): boolean {
  const e = unparenthesized(node);
  if (ts.isIdentifier(e)) return proxies.has(e.text);
  if (ts.isConditionalExpression(e)) {
    return mayBeProxy(e.whenTrue, proxies) || mayBeProxy(e.whenFalse, proxies);
  }
  if (ts.isBinaryExpression(e)) {
    return mayBeProxy(e.left, proxies) || mayBeProxy(e.right, proxies);
  }
  return false;
}

/** The listed activity `node` takes from a proxy (`proxy.name`, `proxy['name']`), if it does. */
function activityTaken(
  node: ts.Node,
  proxies: ReadonlySet<string>,
  listed: ReadonlySet<string>,
): string | undefined {
  let name: string | undefined;
  if (ts.isPropertyAccessExpression(node)) name = node.name.text;
  else if (ts.isElementAccessExpression(node) && ts.isStringLiteral(node.argumentExpression)) {
    name = node.argumentExpression.text;
  }
  if (name === undefined || !listed.has(name)) return undefined;
  return mayBeProxy((node as ts.PropertyAccessExpression).expression, proxies) ? name : undefined;
}

/** Whether the activity taken at `node` is called, and the call is the operand of an `await`. */
function awaitedAlone(node: ts.Node): boolean {
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
  reason: string;
}> = [
  {
    file: 'workflows/machine.ts',
    inFunction: 'loadPrepared',
    activity: 'loadMachine',
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
  const excused = (s: Site) =>
    KEEPS_ITS_WORD.some(
      (k) => k.file === s.file && k.inFunction === s.inFunction && k.activity === s.activity,
    );

  it('every call of one through a local-activity proxy in workflows/ is the operand of an await', () => {
    expect(reported.filter((s) => !excused(s)).map(where)).toEqual([]);
  });

  it('each site excused still exists, once', () => {
    for (const k of KEEPS_ITS_WORD) {
      expect(
        reported
          .filter(
            (s) => s.file === k.file && s.inFunction === k.inFunction && s.activity === k.activity,
          )
          .map(where),
      ).toHaveLength(1);
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

describe('the check itself, over a workflow that breaks the rule', () => {
  const proxies = [
    "import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';",
    'export const records = proxyActivities<A>({ startToCloseTimeout: 1 });',
    'export const localRecords = proxyLocalActivities<A>({ startToCloseTimeout: 1 });',
    'export const localLaunching = proxyLocalActivities<A>({ startToCloseTimeout: 1 });',
  ].join('\n');
  const workflow = [
    /* 1 */ "import { localLaunching as launchHere, localRecords, records } from './proxies';",
    /* 2 */ 'export async function breaks(local: boolean, x: I) {',
    /* 3 */ '  await Promise.all([localRecords.loadMachine(x), localRecords.recordError(x)]);',
    /* 4 */ '  const quick = local ? localRecords : records;',
    /* 5 */ '  const kept = quick.loadMachine(x);',
    /* 6 */ '  await localRecords.recordError(x);',
    /* 7 */ '  await kept;',
    /* 8 */ '  await retried(launchHere.startInstance);',
    /* 9 */ '  const { startInstance } = launchHere;',
    /* 10 */ '  await Promise.race([(local ? localRecords : records).loadMachine(x), sleep(1)]);',
    /* 11 */ "  void launchHere['startInstance'].executeWithOptions(o, [x]);",
    /* 12 */ '}',
    /* 13 */ 'export async function keeps(local: boolean, x: I) {',
    /* 14 */ '  await localRecords.loadMachine(x);',
    /* 15 */ '  await (launchHere.startInstance.executeWithOptions(o, [x]));',
    /* 16 */ '  const quick = local ? localRecords : records;',
    /* 17 */ '  const read = await quick.loadMachine(x);',
    /* 18 */ '  // not listed, or not a local proxy: not the rule’s',
    /* 19 */ '  void localRecords.recordError(x);',
    /* 20 */ '  await Promise.all([records.loadMachine(x), records.loadMachine(x)]);',
    /* 21 */ '  return read;',
    /* 22 */ '}',
  ].join('\n');
  const { awaited, reported } = checkLocalActivities(
    [
      { file: 'workflows/proxies.ts', text: proxies },
      { file: 'workflows/bad.ts', text: workflow },
    ],
    ONE_PER_TASK_LOCAL_ACTIVITIES,
  );

  it('reports each call not awaited alone, by file and line', () => {
    expect(
      reported.map(({ file, line, activity, inFunction }) => ({
        file,
        line,
        activity,
        inFunction,
      })),
    ).toEqual([
      // inside Promise.all, beside another local activity
      { file: 'workflows/bad.ts', line: 3, activity: 'loadMachine', inFunction: 'breaks' },
      // kept and awaited after another local activity ran
      { file: 'workflows/bad.ts', line: 5, activity: 'loadMachine', inFunction: 'breaks' },
      // passed along
      { file: 'workflows/bad.ts', line: 8, activity: 'startInstance', inFunction: 'breaks' },
      // taken out of the proxy
      { file: 'workflows/bad.ts', line: 9, activity: 'startInstance', inFunction: 'breaks' },
      // inside Promise.race, through a proxy chosen in place
      { file: 'workflows/bad.ts', line: 10, activity: 'loadMachine', inFunction: 'breaks' },
      // not awaited at all, through an aliased import and an element access
      { file: 'workflows/bad.ts', line: 11, activity: 'startInstance', inFunction: 'breaks' },
    ]);
  });

  it('holds the awaited calls to be what the rule allows', () => {
    expect(awaited.map((s) => s.line)).toEqual([14, 15, 17]);
  });
});
