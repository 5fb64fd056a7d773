import { columns } from '../cli/table';
import { decimalSeconds } from '../core/duration';
import {
  checkScaleOutTargets,
  checkScaleTargets,
  isWorker,
  checkTargets,
  derive,
  spreadOf,
  type SizeResult,
  type TargetCheck,
} from './figures';

const NUMERIC = /^[-+]?[\d.,]+( ?[a-zA-Z%×]*)?$|^—$/;

/** A plain-text table with a rule under the header; numbers right-aligned (cli/table.ts draws it). */
export function renderTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
): string {
  return columns(header, rows, { rule: true, right: (c, i) => i > 0 && NUMERIC.test(c) });
}

export function seconds(ms: number | undefined): string {
  return ms === undefined ? '—' : decimalSeconds(ms);
}

export function num(v: number | undefined, digits = 2): string {
  if (v === undefined) return '—';
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}

function mib(bytes: number | undefined): string {
  return bytes === undefined ? '—' : `${Math.round(bytes / 1024 / 1024)} MiB`;
}

/** Processes whose CPU was read, workers first. */
function cpuNames(results: readonly SizeResult[]): string[] {
  const names = new Set(results.flatMap((r) => Object.keys(r.provisioner?.cpu?.seconds ?? {})));
  return [...names].sort((a, b) => Number(isWorker(b)) - Number(isWorker(a)) || a.localeCompare(b));
}

/** The workers whose peak RSS was read, when there are several. */
function rssNames(results: readonly SizeResult[]): string[] {
  const names = new Set(
    results.flatMap((r) => Object.keys(r.provisioner?.workerPeakRssBytesByWorker ?? {})),
  );
  return names.size > 1 ? [...names].sort() : [];
}

/** What the actions were (bench/history.ts actionsByKind), most first. */
function actionKinds(results: readonly SizeResult[]): string[] {
  const totals = new Map<string, number>();
  for (const r of results) {
    for (const [kind, n] of Object.entries(r.provisioner?.temporal?.actionsByKind ?? {})) {
      totals.set(kind, (totals.get(kind) ?? 0) + n);
    }
  }
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k]) => k);
}

function workerNames(results: readonly SizeResult[]): string[] {
  const names = new Set(results.flatMap((r) => Object.keys(r.provisioner?.cpu?.workerPids ?? {})));
  return names.size > 1 ? [...names].sort() : [];
}

/** One row per figure, one column per size. */
export function figuresTable(results: readonly SizeResult[]): string {
  const header = ['figure', ...results.map((r) => `N=${r.n}`)];
  const d = results.map(derive);
  const p = results.map((r) => r.provisioner);
  const f = results.map((r) => r.floor);
  const rm = results.map((r) => r.removal);
  const actions = [...new Set(d.flatMap((x) => Object.keys(x.ec2CallsPerMachineByAction)))].sort();
  const row = (label: string, cell: (i: number) => string): string[] => [
    label,
    ...results.map((_, i) => cell(i)),
  ];
  const rows: string[][] = [
    row('requests (fallback when > 1)', (i) => num(p[i]?.requests)),
    row('API answer', (i) => seconds(p[i]?.apiAnswerMs)),
    row('all launched (instance id)', (i) => seconds(p[i]?.launchedMs)),
    row("  the plan's estimatedSeconds (dry run first)", (i) => {
      const x = p[i]?.plan;
      return x ? `${x.estimatedSeconds} s` : '—';
    }),
    row('  the plan answered in (cold / warm caches)', (i) => {
      const x = p[i]?.plan;
      return x ? `${seconds(x.coldAnswerMs)} / ${Math.round(x.answerMs)} ms` : '—';
    }),
    row('all running per EC2', (i) => seconds(p[i]?.runningMs)),
    row('instanceStatus running, all (table)', (i) => {
      const x = p[i];
      if (!x || x.runningMs === undefined) return '—';
      if (x.statusRunningMs === undefined) return `${x.statusRunning ?? 0} of ${x.n} after 2 min`;
      return `${seconds(x.statusRunningMs)} (+${seconds(x.statusRunningMs - x.runningMs)})`;
    }),
    row('launched / running at end', (i) =>
      p[i] ? `${p[i].launched} / ${p[i].running}${p[i].timedOut ? ' (timed out)' : ''}` : '—',
    ),
    row('floor: all launched', (i) => seconds(f[i]?.launchedMs)),
    row('floor: all running', (i) => seconds(f[i]?.runningMs)),
    row('floor: RunInstances calls', (i) => num(f[i]?.runInstancesCalls)),
    row('floor: throttled calls', (i) => num(f[i]?.throttled)),
    row('launched ÷ floor', (i) => num(d[i]?.launchedVsFloor, 1)),
    row('running ÷ floor', (i) => num(d[i]?.runningVsFloor, 1)),
    row('EC2 calls per machine', (i) => num(d[i]?.ec2CallsPerMachine)),
    ...actions.map((a) =>
      row(`  ${a}`, (i) => {
        const calls = p[i]?.ec2Calls[a];
        return calls === undefined ? '—' : `${num(d[i]?.ec2CallsPerMachineByAction[a])} (${calls})`;
      }),
    ),
    row('throttled calls', (i) => num(p[i]?.throttled)),
    row('machines in error', (i) => num(p[i]?.inError)),
    row('duplicates', (i) => num(p[i]?.duplicates)),
    row('strays', (i) => num(p[i]?.strays)),
    row('machines per zone (spread)', (i) => perZoneCell(p[i]?.perZone)),
    row('DynamoDB RCU per machine', (i) => num(d[i]?.readUnitsPerMachine)),
    row('DynamoDB WCU per machine', (i) => num(d[i]?.writeUnitsPerMachine)),
    row('Temporal actions per machine (history, no heartbeats)', (i) =>
      num(d[i]?.actionsPerMachine, 1),
    ),
    ...actionKinds(results).map((kind) =>
      row(`    ${kind}`, (i) => {
        const count = p[i]?.temporal?.actionsByKind?.[kind];
        return count === undefined ? '—' : num(count / (p[i]?.n ?? 1), 2);
      }),
    ),
    row('  history events per machine', (i) => num(d[i]?.eventsPerMachine, 1)),
    row('  workflow tasks per machine', (i) => num(d[i]?.workflowTasksPerMachine, 1)),
    row('  activity tasks per machine', (i) => num(d[i]?.activityTasksPerMachine, 1)),
    row('  other workflows counted in', (i) => num(p[i]?.temporal?.otherWorkflows)),
    row('  as counted before (each local activity one)', (i) =>
      num(d[i]?.actionsEachMarkerPerMachine, 1),
    ),
    row("  Temporal server's action metric per machine (heartbeats included)", (i) =>
      num(d[i]?.serverActionsPerMachine, 1),
    ),
    row('worker peak RSS (the largest worker)', (i) => mib(p[i]?.workerPeakRssBytes)),
    ...rssNames(results).map((name) =>
      row(`  peak RSS ${name}`, (i) => mib(p[i]?.workerPeakRssBytesByWorker?.[name])),
    ),
    row('worker CPU per machine (all workers)', (i) =>
      d[i]?.workerCpuMsPerMachine === undefined ? '—' : `${num(d[i].workerCpuMsPerMachine, 1)} ms`,
    ),
    ...cpuNames(results).map((name) =>
      row(`  CPU ${name}`, (i) => {
        const c = p[i]?.cpu;
        const v = c?.seconds[name];
        if (v === undefined || !c) return '—';
        const perMachine = isWorker(name)
          ? `, ${num((1000 * v) / (p[i]?.n ?? 1), 1)} ms/machine`
          : '';
        return `${num(v, 1)} s${perMachine}`;
      }),
    ),
    ...workerNames(results).map((name) =>
      row(`  ${name}: workflow / activity tasks`, (i) => {
        const pid = p[i]?.cpu?.workerPids?.[name];
        const by = p[i]?.temporal?.byIdentity;
        if (pid === undefined || !by) return '—';
        let wf = 0;
        let act = 0;
        for (const [identity, c] of Object.entries(by)) {
          if (!identity.startsWith(`${pid}@`)) continue;
          wf += c.workflowTasks;
          act += c.activityTasks;
        }
        return `${wf} / ${act}`;
      }),
    ),
    row('destroy-model: DELETE answered', (i) => {
      const t = p[i]?.teardown;
      return t ? `${t.status} in ${seconds(t.answerMs)}` : '—';
    }),
    row('destroy-model: all terminated', (i) => seconds(p[i]?.teardown?.terminatedMs)),
    row('destroy-model: model gone', (i) => seconds(p[i]?.teardown?.modelGoneMs)),
    row('destroy-model: left running', (i) => num(p[i]?.teardown?.leftRunning)),
    row('teardown EC2 calls per machine', (i) => {
      const t = p[i]?.teardown;
      if (!t || !p[i]) return '—';
      const total = Object.values(t.ec2Calls).reduce((a, b) => a + b, 0);
      return `${num(total / p[i].n, 3)} (${total})`;
    }),
    ...[...new Set(p.flatMap((x) => Object.keys(x?.teardown?.ec2Calls ?? {})))]
      .sort()
      .map((a) => row(`  teardown ${a}`, (i) => num(p[i]?.teardown?.ec2Calls[a]))),
    row('teardown throttled calls', (i) => num(p[i]?.teardown?.throttled)),
    row('removal: deploy N units, answer', (i) => seconds(rm[i]?.deployMs)),
    row('removal: destroy-model, 202', (i) => seconds(rm[i]?.answerMs)),
    row('removal: every unit gone, machine Dead', (i) => seconds(rm[i]?.deadMs)),
    row('removal: every Dead machine told', (i) => seconds(rm[i]?.toldMs)),
    row('removal: model removed', (i) =>
      rm[i] ? `${seconds(rm[i].goneMs)}${rm[i].timedOut ? ' (timed out)' : ''}` : '—',
    ),
  ];
  return renderTable(header, rows);
}

/** Targets per size: the measured figure and its verdict in each cell. */
export function targetsTable(results: readonly SizeResult[]): string {
  const baseline = results.find((r) => r.n === 100);
  const checks: TargetCheck[][] = results.map((r) => checkTargets(r, baseline));
  // in the order of the fullest list (a size with a baseline has the growth check in its place)
  const fullest = checks.reduce<TargetCheck[]>((a, c) => (c.length > a.length ? c : a), []);
  const targets = [...new Set([...fullest, ...checks.flat()].map((x) => x.target))];
  const rows = targets.map((t) => [
    t,
    ...checks.map((c) => {
      const hit = c.find((x) => x.target === t);
      return hit ? `${hit.measured} ${hit.verdict}` : '—';
    }),
  ]);
  return renderTable(['target (issue 10)', ...results.map((r) => `N=${r.n}`)], rows);
}

/** Issue 30's targets (launch and teardown EC2 calls, the model gone in time) per size. */
export function scaleTargetsTable(results: readonly SizeResult[]): string {
  const checks = results.map((r) => checkScaleTargets(r));
  const targets = (checks[0] ?? []).map((x) => x.target);
  const rows = targets.map((t) => [
    t,
    ...checks.map((c) => {
      const hit = c.find((x) => x.target === t);
      return hit ? `${hit.measured} ${hit.verdict}` : '—';
    }),
  ]);
  return renderTable(['target (issue 30)', ...results.map((r) => `N=${r.n}`)], rows);
}

/** Issue 26's targets (worker CPU, Temporal actions, launch time, DynamoDB units, nothing lost) per size. */
export function scaleOutTargetsTable(results: readonly SizeResult[]): string {
  const checks = results.map((r) => checkScaleOutTargets(r));
  const targets = (checks[0] ?? []).map((x) => x.target);
  const rows = targets.map((t) => [
    t,
    ...checks.map((c) => {
      const hit = c.find((x) => x.target === t);
      return hit ? `${hit.measured} ${hit.verdict}` : '—';
    }),
  ]);
  return renderTable(['target (issue 26)', ...results.map((r) => `N=${r.n}`)], rows);
}

/** Rows of the by-caller table before the rest are summed into one. */
const CALLER_ROWS = 16;

/**
 * Where one size's DynamoDB units went, by call site (`--ddb-callers`):
 * units per machine and the calls behind them, most units first. A refused
 * conditional write is charged ≥ 1 WCU that DynamoDB does not report: its
 * count is shown, not added in. Empty when the totals were not kept so.
 */
export function capacityByCallerTable(result: SizeResult): string {
  const capacity = result.provisioner?.capacity;
  const byCaller = capacity?.byCaller;
  if (!byCaller) return '';
  const n = result.n;
  const ops = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const entries = Object.entries(byCaller).sort(
    (a, b) => b[1].readUnits + b[1].writeUnits - (a[1].readUnits + a[1].writeUnits),
  );
  const shown = entries.slice(0, CALLER_ROWS);
  const rest = entries.slice(CALLER_ROWS);
  const rows = shown.map(([label, c]) => [
    label,
    num(c.readUnits / n),
    num(c.writeUnits / n),
    ops(c.calls) || '—',
    ops(c.failed) || '—',
  ]);
  if (rest.length > 0) {
    const sum = (f: (c: (typeof rest)[number][1]) => number) =>
      rest.reduce((t, [, c]) => t + f(c), 0);
    const calls = sum((c) => Object.values(c.calls).reduce((a, b) => a + b, 0));
    rows.push([
      `${rest.length} other call sites`,
      num(sum((c) => c.readUnits) / n),
      num(sum((c) => c.writeUnits) / n),
      `${calls} calls`,
      '',
    ]);
  }
  rows.push([
    'all',
    num(capacity.readUnits / n),
    num(capacity.writeUnits / n),
    ops(capacity.calls),
    ops(capacity.failed ?? {}) || '—',
  ]);
  return (
    `N=${n}: DynamoDB by call site (worker and API)\n` +
    renderTable(['call site', 'RCU/machine', 'WCU/machine', 'calls', 'refused'], rows)
  );
}

/** Machines per zone, by zone name, and the spread (most − least; machines with no zone shown, not counted in it). */
export function perZoneCell(perZone: Record<string, number> | undefined): string {
  const spread = spreadOf(perZone);
  if (!perZone || Object.keys(perZone).length === 0) return '—';
  const cells = Object.entries(perZone)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([z, n]) => `${z.replace(/^[a-z]+-[a-z]+-\d+/, '')} ${n}`);
  return `${cells.join(' / ')}${spread === undefined ? '' : ` (±${spread})`}`;
}
