import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Reads the V8 CPU profiles a worker wrote (`node --cpu-prof`: one file per
 * thread, the workflow sandbox's thread included) and says where the time
 * went, in a window of time: self time and total time per function, and
 * self time per area (our code by file, each package, Node, V8's own work).
 * The window is in the profile's clock, which on Linux is the monotonic
 * clock `process.hrtime` reads, in microseconds.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
  /** Which thread wrote it (from its file name, {@link threadOf}); not in V8's format. */
  thread?: string;
}

export interface ProfileItem {
  /** Function name and where it is (area, file:line). */
  name: string;
  ms: number;
  /** Of all sampled time in the window, idle left out. */
  percent: number;
}

export interface ProfileSummary {
  files: number;
  /** Sampled time in the window, idle left out, ms. */
  busyMs: number;
  self: ProfileItem[];
  total: ProfileItem[];
  areas: ProfileItem[];
  /** Each thread's sampled busy time and its top areas (main first), when the files say which. */
  threads: ThreadSummary[];
}

export interface ThreadSummary {
  thread: string;
  busyMs: number;
  areas: ProfileItem[];
}

/**
 * The thread a `node --cpu-prof` file is from: Node names it
 * `CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile`, thread 0 being the
 * main thread (the Temporal worker's workflow thread is a later id).
 */
export function threadOf(fileName: string): string | undefined {
  const m = /^CPU\.\d+\.\d+\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(fileName);
  if (!m) return undefined;
  return m[2] === '0' ? `main (pid ${m[1]})` : `thread ${m[2]} (pid ${m[1]})`;
}

const ROOT = join(__dirname, '..');

/** What a script belongs to: our file, a package, Node itself, or V8. */
export function areaOf(url: string): string {
  if (url === '') return 'V8 / native';
  if (url.startsWith('node:')) return 'node';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) {
    const name = pkg[1]!;
    if (name.startsWith('@aws-sdk/') || name.startsWith('@smithy/') || name === 'fast-xml-parser')
      return `aws-sdk (${name})`;
    return name;
  }
  if (/workflow-bundle|webpack/.test(path)) return 'workflow bundle';
  if (path.startsWith('/')) return relative(ROOT, path);
  return path;
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const fn = functionName || '(anonymous)';
  if (!url) return fn;
  const area = areaOf(url);
  const file = url.replace(/^.*\//, '');
  return `${fn} [${area} ${file}:${lineNumber + 1}]`;
}

const IDLE = new Set(['(idle)']);

/** Adds one profile's samples within [fromUs, toUs] to the tallies. */
function tally(
  profile: CpuProfile,
  window: { fromUs?: number; toUs?: number },
  self: Map<string, number>,
  total: Map<string, number>,
  areas: Map<string, number>,
): number {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let t = profile.startTime;
  let busy = 0;
  for (let i = 0; i < samples.length; i++) {
    t += deltas[i] ?? 0;
    // each sample stands for the time until the next one
    const span = (deltas[i + 1] ?? 0) / 1000;
    if (window.fromUs !== undefined && t < window.fromUs) continue;
    if (window.toUs !== undefined && t > window.toUs) break;
    const leaf = byId.get(samples[i]!);
    if (!leaf || IDLE.has(leaf.callFrame.functionName)) continue;
    busy += span;
    const leafName = label(leaf);
    self.set(leafName, (self.get(leafName) ?? 0) + span);
    const area = leaf.callFrame.url ? areaOf(leaf.callFrame.url) : leaf.callFrame.functionName;
    areas.set(area, (areas.get(area) ?? 0) + span);
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id)!;
      if (node.callFrame.functionName === '(root)') continue;
      const name = label(node);
      if (seen.has(name)) continue;
      seen.add(name);
      total.set(name, (total.get(name) ?? 0) + span);
    }
  }
  return busy;
}

function top(map: Map<string, number>, busy: number, count: number): ProfileItem[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => ({ name, ms, percent: busy > 0 ? (100 * ms) / busy : 0 }));
}

export function summarizeProfiles(
  profiles: readonly CpuProfile[],
  window: { fromUs?: number; toUs?: number } = {},
  count = 25,
): ProfileSummary {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const areas = new Map<string, number>();
  let busy = 0;
  const threads: ThreadSummary[] = [];
  for (const p of profiles) {
    const own = new Map<string, number>();
    const ownBusy = tally(p, window, self, total, own);
    for (const [area, ms] of own) areas.set(area, (areas.get(area) ?? 0) + ms);
    busy += ownBusy;
    if (p.thread !== undefined)
      threads.push({ thread: p.thread, busyMs: ownBusy, areas: top(own, ownBusy, 8) });
  }
  threads.sort((a, b) => Number(b.thread.startsWith('main')) - Number(a.thread.startsWith('main')));
  return {
    files: profiles.length,
    busyMs: busy,
    self: top(self, busy, count),
    total: top(total, busy, count),
    areas: top(areas, busy, count),
    threads,
  };
}

/** Every `.cpuprofile` in a folder. */
export function readProfiles(dir: string): CpuProfile[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  } catch {
    return [];
  }
  return names.sort().map((f) => {
    const profile = JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile;
    const thread = threadOf(f);
    return thread === undefined ? profile : { ...profile, thread };
  });
}

/** The summary as text: busy time, then areas, self and total time, one item a line. */
export function profileText(s: ProfileSummary, count = 15): string {
  const line = (x: ProfileItem) =>
    `  ${x.ms.toFixed(0).padStart(7)} ms ${x.percent.toFixed(1).padStart(5)}%  ${x.name}`;
  return [
    `CPU profile: ${s.files} thread(s), ${(s.busyMs / 1000).toFixed(1)} s sampled busy`,
    'self time by area:',
    ...s.areas.slice(0, count).map(line),
    ...s.threads.flatMap((t) => [
      `${t.thread}: ${(t.busyMs / 1000).toFixed(1)} s sampled busy (${s.busyMs > 0 ? ((100 * t.busyMs) / s.busyMs).toFixed(1) : '0'} % of all); its areas:`,
      ...t.areas.map(line),
    ]),
    'self time by function:',
    ...s.self.slice(0, count).map(line),
    'total time by function (callees included):',
    ...s.total.slice(0, count).map(line),
  ].join('\n');
}

/** `tsx bench/profile.ts <dir> [fromUs toUs]`: prints a worker profile's summary. */
if (require.main === module) {
  const [dir, from, to] = process.argv.slice(2);
  if (!dir) {
    process.stderr.write('usage: tsx bench/profile.ts <dir of .cpuprofile> [fromUs toUs]\n');
    process.exit(2);
  }
  const window = {
    ...(from ? { fromUs: Number(from) } : {}),
    ...(to ? { toUs: Number(to) } : {}),
  };
  process.stdout.write(`${profileText(summarizeProfiles(readProfiles(dir), window), 30)}\n`);
}

/**
 * The profiler's own CPU a second, per profiled worker: its threads
 * (`v8:ProfEvntProc`) and the sampled threads' signal work, measured on an
 * idle worker at a 2 ms sampling interval (issue 26, 2026-11-27: ~60 ms/s
 * profiled against ~10 unprofiled). The bench samples every 1 ms (Node's
 * default), so there it is likely more: a lower bound.
 */
export const PROFILER_CPU_MS_PER_S = 50;

/**
 * What a profiled run's worker CPU figures need said beside them: they hold
 * the profiler's own CPU, which grows with the phase's length and not with
 * the machines, so they are not comparable with an unprofiled run's "worker
 * CPU per machine".
 */
export function profiledCpuNote(n: number, phaseMs: number, workers: number): string {
  const atLeastMs = (PROFILER_CPU_MS_PER_S * (phaseMs / 1000) * workers) / n;
  return (
    `N=${n}: profiled (--cpu-prof): "worker CPU per machine" includes the profiler's own CPU ` +
    `(~${PROFILER_CPU_MS_PER_S} ms of CPU a second a worker, measured at a 2 ms interval; the bench ` +
    `samples every 1 ms): at least ${atLeastMs.toFixed(1)} ms a machine over this ` +
    `${(phaseMs / 1000).toFixed(1)} s phase with ${workers} worker(s). Not comparable with an ` +
    `unprofiled run's figure: compare profiled runs with each other, or run again without --cpu-prof`
  );
}
