import { relative, join } from 'node:path';
import { readProfiles, type CpuProfile } from './profile';

/**
 * Where a worker's CPU went, by what the time was spent for rather than by
 * which file's function was on top (bench/profile.ts): each sample is put in
 * the first category its stack matches (`owner`, so the shares add up), and
 * counted in every category and every one of our own files and functions on
 * its stack (`inclusive`). A stack is the synchronous one V8 sampled, so
 * work in a promise continuation (an AWS SDK middleware answering, say) is
 * the continuation's, not its caller's.
 *
 * `tsx bench/profile-categories.ts <dir of .cpuprofile> [fromUs toUs] [bench json]`;
 * with a bench JSON of the run instead of the window, the launch phase's window.
 */

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface Node {
  id: number;
  callFrame: Frame;
  children?: number[];
}

const ROOT = join(__dirname, '..');

/** Our own code: a file of the repository outside node_modules. */
export function ownFile(url: string): string | undefined {
  if (!url.startsWith('file://') || url.includes('/node_modules/')) return undefined;
  return relative(ROOT, url.slice('file://'.length));
}

interface Category {
  name: string;
  test: (f: Frame) => boolean;
}

const url = (re: RegExp) => (f: Frame) => re.test(f.url);

/** In the order a sample is given to one (its owner): the first its stack matches. */
export const CATEGORIES: readonly Category[] = [
  { name: 'garbage collector', test: (f) => f.functionName === '(garbage collector)' },
  {
    name: 'logging',
    test: url(
      /@aws-lambda-powertools\/logger|config\/logger\.ts$|worker\/logging\.ts$|activities\/log\.ts$/,
    ),
  },
  {
    name: 'metrics',
    test: (f) =>
      /@aws-lambda-powertools\/metrics|config\/(worker-)?metrics\.ts$|activities\/metrics\.ts$|worker\/telemetry\.ts$/.test(
        f.url,
      ) || /MetricsBuffer|MetricMeter/.test(f.functionName),
  },
  {
    name: 'AWS SDK: EC2 (client, XML)',
    test: url(/@aws-sdk\/(client-ec2|xml-builder)|fast-xml-parser/),
  },
  {
    name: 'AWS SDK: DynamoDB (client, marshalling)',
    test: url(/@aws-sdk\/(client-dynamodb|lib-dynamodb|util-dynamodb)/),
  },
  { name: 'AWS SDK: signing', test: url(/@smithy\/signature-v4/) },
  { name: 'AWS SDK: HTTP handler', test: url(/@smithy\/(node-http-handler|fetch-http-handler)/) },
  { name: 'AWS SDK: shared (middleware, serde, retries)', test: url(/@aws-sdk\/|@smithy\//) },
  // after the SDK: its middleware runs the rest of a call's middleware on its stack
  { name: 'bench only: DynamoDB capacity meter', test: url(/config\/capacity-meter\.ts$/) },
  { name: 'Temporal client (gRPC)', test: url(/@temporalio\/client|@grpc\/grpc-js/) },
  { name: 'protobuf', test: url(/@temporalio\/proto|protobufjs/) },
  { name: 'Temporal core bridge', test: url(/@temporalio\/core-bridge/) },
  { name: 'workflow sandbox: runInContext', test: (f) => f.functionName === 'runInContext' },
  { name: 'workflow bundle', test: url(/workflow-bundle|webpack/) },
  { name: 'workflow thread messages', test: (f) => f.functionName === 'postMessage' },
  { name: 'Temporal worker (other)', test: url(/@temporalio\/(worker|common|activity)|rxjs/) },
  {
    name: 'AsyncLocalStorage / promise hooks',
    test: (f) =>
      /node:internal\/async_hooks|node:async_hooks|async_context_frame/.test(f.url) ||
      f.functionName === 'promiseInitHook',
  },
  {
    name: 'HTTP (node)',
    test: url(/node:_http|node:net|node:internal\/http|node:internal\/stream/),
  },
  {
    name: 'JSON',
    test: (f) => f.url === '' && /^(parse|stringify|JSONParse|JSONStringify)$/.test(f.functionName),
  },
  { name: 'our code (not above)', test: (f) => ownFile(f.url) !== undefined },
];

export interface CategorySummary {
  busyMs: number;
  owner: Map<string, number>;
  inclusive: Map<string, number>;
  ownFiles: Map<string, number>;
  ownFunctions: Map<string, number>;
}

export function categorize(
  profiles: readonly CpuProfile[],
  window: { fromUs?: number; toUs?: number } = {},
): CategorySummary {
  const s: CategorySummary = {
    busyMs: 0,
    owner: new Map(),
    inclusive: new Map(),
    ownFiles: new Map(),
    ownFunctions: new Map(),
  };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const p of profiles) {
    const nodes = p.nodes as Node[];
    const byId = new Map<number, Node>();
    const parent = new Map<number, number>();
    for (const n of nodes) {
      byId.set(n.id, n);
      for (const c of n.children ?? []) parent.set(c, n.id);
    }
    const stacks = new Map<number, Frame[]>();
    const stackOf = (id: number): Frame[] => {
      let st = stacks.get(id);
      if (!st) {
        st = [];
        for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
          const f = byId.get(at)!.callFrame;
          if (f.functionName !== '(root)') st.push(f);
        }
        stacks.set(id, st);
      }
      return st;
    };
    const samples = p.samples ?? [];
    const deltas = p.timeDeltas ?? [];
    let t = p.startTime;
    for (let i = 0; i < samples.length; i++) {
      t += deltas[i] ?? 0;
      const span = (deltas[i + 1] ?? 0) / 1000;
      if (window.fromUs !== undefined && t < window.fromUs) continue;
      if (window.toUs !== undefined && t > window.toUs) break;
      const stack = stackOf(samples[i]!);
      const leaf = stack[0];
      if (!leaf || leaf.functionName === '(idle)') continue;
      s.busyMs += span;
      const owner = CATEGORIES.find((c) => stack.some((f) => c.test(f)));
      const thread = p.thread?.startsWith('main') === false ? 'workflow thread: ' : '';
      add(s.owner, `${thread}${owner?.name ?? 'other (node, V8)'}`, span);
      for (const c of CATEGORIES) if (stack.some((f) => c.test(f))) add(s.inclusive, c.name, span);
      const files = new Set<string>();
      const fns = new Set<string>();
      for (const f of stack) {
        const file = ownFile(f.url);
        if (file === undefined) continue;
        files.add(file);
        fns.add(`${f.functionName || '(anonymous)'} [${file}:${f.lineNumber + 1}]`);
      }
      for (const file of files) add(s.ownFiles, file, span);
      for (const fn of fns) add(s.ownFunctions, fn, span);
    }
  }
  return s;
}

export function categoryText(s: CategorySummary, perMachine?: number, count = 25): string {
  const line = ([name, ms]: [string, number]) =>
    `  ${ms.toFixed(0).padStart(7)} ms ${((100 * ms) / s.busyMs).toFixed(1).padStart(5)}%` +
    (perMachine ? ` ${(ms / perMachine).toFixed(2).padStart(6)} ms/machine` : '') +
    `  ${name}`;
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return [
    `${(s.busyMs / 1000).toFixed(1)} s sampled busy`,
    'by owner (first category on the stack; adds up):',
    ...sorted(s.owner).map(line),
    'inclusive (on the stack at all):',
    ...sorted(s.inclusive).map(line),
    'our files, inclusive:',
    ...sorted(s.ownFiles).slice(0, count).map(line),
    'our functions, inclusive:',
    ...sorted(s.ownFunctions).slice(0, count).map(line),
  ].join('\n');
}

if (require.main === module) {
  const [dir, a, b, c] = process.argv.slice(2);
  if (!dir) {
    process.stderr.write(
      'usage: tsx bench/profile-categories.ts <dir of .cpuprofile> [fromUs toUs | bench.json] [N]\n',
    );
    process.exit(2);
  }
  let window: { fromUs?: number; toUs?: number } = {};
  let n: number | undefined;
  if (a?.endsWith('.json')) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const run = require(a.startsWith('/') ? a : join(process.cwd(), a)) as {
      results: { size?: number; provisioner?: { cpu?: { windowUs?: typeof window } } }[];
    };
    window = run.results[0]?.provisioner?.cpu?.windowUs ?? {};
    n = b ? Number(b) : run.results[0]?.size;
  } else {
    window = {
      ...(a ? { fromUs: Number(a) } : {}),
      ...(b ? { toUs: Number(b) } : {}),
    };
    n = c ? Number(c) : undefined;
  }
  process.stdout.write(`${categoryText(categorize(readProfiles(dir), window), n, 40)}\n`);
}
