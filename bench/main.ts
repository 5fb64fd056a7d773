import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ManagedProcess } from '../local/processes';
import { PROJECT_ROOT, type RunningStack } from '../local/stack';
import { BenchArgsError, parseArgs, USAGE } from './args';
import {
  checkScaleOutTargets,
  checkScaleTargets,
  checkTargets,
  derive,
  type SizeResult,
} from './figures';
import { EC2_LATENCY, EC2_REQUEST_LIMITS, EC2_RESOURCE_LIMITS } from './proxy-admin';
import { runSize } from './run-size';
import type { Starver } from './starve';
import {
  capacityByCallerTable,
  figuresTable,
  scaleOutTargetsTable,
  scaleTargetsTable,
  targetsTable,
} from './table';

/**
 * `npm run bench`: for each size, a fresh private stack, the bare-SDK floor,
 * then N machines in one API request; prints the figures and the issue's
 * targets, and writes them as JSON under `.provisioner/bench/`. Every
 * process it starts is stopped at the end, on error and on Ctrl-C.
 */
const children = new Set<ManagedProcess>();
let stack: RunningStack | undefined;
let stopping = false;
/** The launch phase's `--starve-worker` pulses, while they run. */
let starver: Starver | undefined;

async function stopAll(): Promise<void> {
  // workers continued first: a stopped worker cannot drain on SIGTERM
  await starver?.stop().catch(() => undefined);
  await stack?.stop().catch(() => undefined);
  await Promise.all([...children].map((c) => c.stop().catch(() => undefined)));
  children.clear();
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\n${signal}: stopping every process the benchmark started…\n`);
    void stopAll().finally(() => process.exit(130));
  });
}

function gitRevision(): string {
  try {
    const rev = execSync('git rev-parse --short HEAD', { cwd: PROJECT_ROOT }).toString().trim();
    const dirty = execSync('git status --porcelain', { cwd: PROJECT_ROOT }).toString().trim();
    return dirty ? `${rev} (with uncommitted changes)` : rev;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const args = parseArgs(process.argv.slice(2));
  const startedAt = new Date();
  const runId = startedAt.toISOString().replace(/[:.]/g, '-');
  const outDir = join(PROJECT_ROOT, '.provisioner', 'bench');
  const runDir = join(outDir, runId);
  mkdirSync(runDir, { recursive: true });
  const log = (line: string) =>
    process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  const revision = gitRevision();
  log(
    `code ${revision}; sizes ${args.sizes.join(', ')}; ${args.timeoutMs / 60_000} min per size; ${args.workers} worker(s)${args.cpuProfile ? ', CPU profiled' : ''}${args.workerNodeOptions.length > 0 ? `; worker node options ${args.workerNodeOptions.join(' ')}` : ''}${args.starveWorker ? `; workers starved ${args.starveWorker.stopMs / 1000} s / ${args.starveWorker.runMs / 1000} s` : ''}`,
  );

  const results: SizeResult[] = [];
  const write = () => {
    const doc = {
      startedAt: startedAt.toISOString(),
      revision,
      settings: {
        limits: { ...EC2_REQUEST_LIMITS, ...EC2_RESOURCE_LIMITS },
        latencyMs: EC2_LATENCY,
        ...args,
      },
      results: results.map((r) => ({
        ...r,
        derived: derive(r),
        targets: checkTargets(
          r,
          results.find((b) => b.n === 100),
        ),
        scaleTargets: checkScaleTargets(r),
        scaleOutTargets: checkScaleOutTargets(r),
      })),
    };
    const text = `${JSON.stringify(doc, null, 2)}\n`;
    writeFileSync(join(outDir, `${runId}.json`), text);
    writeFileSync(join(outDir, 'latest.json'), text);
  };

  for (const n of args.sizes) {
    if (stopping) break;
    try {
      results.push(
        await runSize({
          n,
          dir: join(runDir, `n${n}`),
          timeoutMs: args.timeoutMs,
          requestTimeoutMs: args.requestTimeoutMs,
          floor: args.floor,
          launch: args.launch,
          removal: args.removal,
          destroy: args.destroy,
          workers: args.workers,
          cpuProfile: args.cpuProfile,
          ddbCallers: args.ddbCallers,
          workerNodeOptions: args.workerNodeOptions,
          ...(args.starveWorker ? { starveWorker: args.starveWorker } : {}),
          onStarver: (s) => (starver = s),
          log,
          track: (proc) => children.add(proc),
          onStack: (s) => (stack = s),
        }),
      );
    } catch (err) {
      if (stopping) break;
      log(`N=${n} failed: ${(err as Error).stack ?? String(err)}`);
      results.push({ n, notes: [`failed: ${(err as Error).message}`] });
    } finally {
      stack = undefined;
      await Promise.all([...children].map((c) => c.stop().catch(() => undefined)));
      children.clear();
    }
    write();
  }

  const out: string[] = [
    '',
    `Benchmark on ${revision}, ${startedAt.toISOString()}`,
    `Asked of the EC2 proxy (see the notes for what it could not take): RunInstances burst 5 refill 2/s, launched instances burst 1000 refill 2/s, TerminateInstances burst 100 refill 5/s, CreateTags burst 100 refill 10/s, Describe* burst 100 refill 20/s; latency RunInstances ${EC2_LATENCY.runInstances} ms, others ${EC2_LATENCY.default} ms, pending→running ${EC2_LATENCY.pendingToRunning} ms`,
    '',
    figuresTable(results),
    '',
    targetsTable(results),
    '',
    scaleTargetsTable(results),
    '',
    scaleOutTargetsTable(results),
    ...results.flatMap((r) => {
      const table = capacityByCallerTable(r);
      return table ? ['', table] : [];
    }),
    ...results.flatMap((r) =>
      r.provisioner?.profile ? ['', `N=${r.n}, workers' ${r.provisioner.profile}`] : [],
    ),
  ];
  // most notes name their size already (`N=…: `): not twice
  const notes = results.flatMap((r) =>
    r.notes.map((note) => (note.startsWith(`N=${r.n}: `) ? note : `N=${r.n}: ${note}`)),
  );
  if (notes.length > 0) out.push('', 'Notes:', ...notes.map((note) => `- ${note}`));
  out.push('', `JSON: ${join(outDir, `${runId}.json`)}`, '');
  process.stdout.write(out.join('\n'));
}

main()
  .catch(async (err: unknown) => {
    if (err instanceof BenchArgsError) {
      process.stderr.write(`${err.message}\nusage: ${USAGE}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    }
    await stopAll();
  })
  .finally(() => {
    if (!stopping) void stopAll();
  });
