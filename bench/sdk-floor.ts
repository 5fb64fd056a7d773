import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { inLanes } from '../activities/lanes';
import { groupCpuSeconds } from './cpu';
import { freePort, spawnManaged, waitUntilHealthy } from '../local/processes';
import { ensureToolchain } from '../local/toolchain';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../temporal/search-attributes';
import { WORKER_SEMI_SPACE_MIB } from '../worker/heap';
import { workerLogger } from '../worker/logging';
import { installTelemetry, temporalMetricsFromEnv } from '../worker/telemetry';
import { withLeanSandbox } from '../worker/sandbox';
import { workerOptions, workerSettingsFromEnv } from '../worker/settings';
import { workflowBundlerOptions } from '../worker/preload';
import type { FloorActivities, FloorInput } from './sdk-floor-workflows';

/**
 * The Temporal SDK's own CPU per machine (issue 26): a worker with the
 * provisioner's settings (worker/settings.ts, the lean sandbox, the heap of
 * worker/heap.ts) runs N machine-shaped workflows that do nothing of their
 * own (bench/sdk-floor-workflows.ts): no DynamoDB, no EC2, no batching, no
 * logging of its own (the worker's Runtime is installed as the worker installs
 * it: its logger, and the SDK's metrics drained as EMF unless
 * `PROVISIONER_TEMPORAL_METRICS=off`). What it spends per workflow is the floor
 * the SDK puts under `npm run bench`'s "worker CPU per machine" on this
 * machine.
 *
 * `npm run bench:sdk-floor -- [N=1000] [runs=1]`: starts a Temporal dev server
 * (the local stack's SQLite settings, loopback, a free port), and for each
 * shape and run starts N workflows on a fresh task queue, then a worker, and
 * measures the worker process's CPU (every thread: the workflow thread, the
 * SDK's core, GC) from the worker's start until every workflow has published
 * its status, and the server's CPU over the starts and over the run: the
 * floor under the bench's "CPU temporal" for the same shape.
 */

const SHAPES = ['floorBare', 'floorShaped', 'floorLocal', 'floorOneLocal'] as const;
type Shape = (typeof SHAPES)[number];

/** About the size of a machine's start input (its `created` hint and ids), in JSON. */
const PADDING = 'x'.repeat(600);

const log = (line: string) =>
  console.log(`[sdk-floor ${new Date().toISOString().slice(11, 19)}] ${line}`);

function args(): { n: number; runs: number } {
  const [nText = '1000', runsText = '1'] = process.argv.slice(2);
  const n = Number(nText);
  const runs = Number(runsText);
  if (!Number.isInteger(n) || n < 1 || !Number.isInteger(runs) || runs < 1) {
    throw new Error(`usage: npm run bench:sdk-floor -- [N] [runs] (got "${nText}" "${runsText}")`);
  }
  return { n, runs };
}

function activities(): FloorActivities {
  return {
    async launch(input) {
      await new Promise((resolve) => setTimeout(resolve, input.waitMs));
      return { instanceId: `i-${input.id}` };
    },
    prepare() {
      return Promise.resolve({ zone: 'a' });
    },
  };
}

interface Measured {
  /** The worker's CPU, ms, from its start until every workflow published. */
  cpuMs: number;
  seconds: number;
  /** The Temporal server's CPU, ms, over the N starts, and over the worker's run. */
  serverStartMs: number | undefined;
  serverRunMs: number | undefined;
}

async function measure(
  client: Client,
  connection: NativeConnection,
  code: string,
  shape: Shape,
  n: number,
  serverPid: number | undefined,
): Promise<Measured> {
  const stamp = `${shape}-${Date.now()}`;
  const taskQueue = `sdk-floor-${stamp}`;
  const label = `floor-${stamp}`;
  const ids = Array.from({ length: n }, (_, i) => String(i));
  const serverBeforeStarts = groupCpuSeconds(serverPid);
  await inLanes(ids, 50, async (id) => {
    const input: FloorInput = { id, label, waitMs: 1000, padding: PADDING };
    await client.workflow.start(shape, { taskQueue, workflowId: `${stamp}-${id}`, args: [input] });
  });
  const worker = await withLeanSandbox(() =>
    Worker.create({
      connection,
      taskQueue,
      workflowBundle: { code },
      activities: activities(),
      // the gate off unless asked for: its counted local activities are the provisioner's types,
      // not this floor's, so with it on the floor's local shapes ran ~100 tasks at a time and
      // their figures stopped being comparable with the runs before it
      ...workerOptions(
        workerSettingsFromEnv({
          PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off',
          ...process.env,
        }),
      ),
    }),
  );
  const serverBeforeRun = groupCpuSeconds(serverPid);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const running = worker.run();
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    const { count } = await client.workflow.count(`ProvisionerStatus = "${label}"`);
    if (count >= n) break;
    if (Date.now() > deadline) throw new Error(`${shape}: ${count} of ${n} published in 10 min`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  const serverAfterRun = groupCpuSeconds(serverPid);
  const ms = (from: number | undefined, to: number | undefined) =>
    from !== undefined && to !== undefined ? (to - from) * 1000 : undefined;
  worker.shutdown();
  await running;
  return {
    cpuMs: (used.user + used.system) / 1000,
    seconds,
    serverStartMs: ms(serverBeforeStarts, serverBeforeRun),
    serverRunMs: ms(serverBeforeRun, serverAfterRun),
  };
}

async function main(): Promise<void> {
  const { n, runs } = args();
  // the worker's own Runtime: its logger and the SDK's metrics as PROVISIONER_TEMPORAL_METRICS says
  // (`emf`, the default: drained every second and written as EMF lines on stdout, as the worker does)
  const stopTelemetry = installTelemetry(workerLogger, temporalMetricsFromEnv());
  const tools = await ensureToolchain(log);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sdk-floor-'));
  const server = spawnManaged(
    'temporal',
    tools.temporal,
    [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--headless',
      // the local stack's database settings (local/stack.ts), so the server's CPU compares
      '--db-filename',
      join(dir, 'temporal.sqlite'),
      '--sqlite-pragma',
      'journal_mode=wal',
      '--sqlite-pragma',
      'synchronous=off',
      '--log-level',
      'warn',
      ...SEARCH_ATTRIBUTE_REGISTRATIONS.flatMap((sa) => [
        '--search-attribute',
        `${sa.name}=${sa.cliType}`,
      ]),
    ],
    { logFile: join(dir, 'temporal.log') },
  );
  const address = `127.0.0.1:${port}`;
  try {
    let clientConnection: Connection | undefined;
    await waitUntilHealthy(
      server,
      'the Temporal dev server',
      async () => {
        clientConnection ??= await Connection.connect({ address, connectTimeout: 1000 });
        await clientConnection.workflowService.getSystemInfo({});
        return true;
      },
      120_000,
    );
    const client = new Client({ connection: clientConnection! });
    const connection = await NativeConnection.connect({ address });
    // preloaded as the worker preloads its workflows (PROVISIONER_WORKFLOW_PRELOAD=off: not)
    const workflowsPath = require.resolve('./sdk-floor-workflows');
    const { code } = await bundleWorkflowCode({
      workflowsPath,
      logger: new DefaultLogger('WARN'),
      ...workflowBundlerOptions(process.env, workflowsPath),
    });
    const semiSpace = `${WORKER_SEMI_SPACE_MIB} MiB semi-spaces asked`;
    log(
      `N=${n}, ${runs} run(s) per shape; heap limit ${Math.round(getHeapStatistics().heap_size_limit / 2 ** 20)} MiB, ${semiSpace}; load ${loadAverage()}`,
    );
    const rows: string[] = [];
    for (let run = 1; run <= runs; run += 1) {
      for (const shape of SHAPES) {
        const m = await measure(client, connection, code, shape, n, server.child.pid);
        const perWorkflow = (v: number | undefined) => (v === undefined ? '?' : (v / n).toFixed(1));
        const line =
          `${shape.padEnd(12)} run ${run}: ${perWorkflow(m.cpuMs)} ms of worker CPU per workflow ` +
          `(${(m.cpuMs / 1000).toFixed(1)} s over ${m.seconds.toFixed(1)} s); Temporal server ` +
          `${perWorkflow(m.serverStartMs)} ms per start + ${perWorkflow(m.serverRunMs)} ms per run ` +
          `(load ${loadAverage()})`;
        log(line);
        rows.push(line);
      }
    }
    console.log(
      `\nSDK floor, N=${n} (floorBare: start, 1 activity, 1 update; floorShaped: a local activity first, as a machine; floorLocal: both local, one workflow task; floorOneLocal: one local activity)`,
    );
    for (const row of rows) console.log(row);
    await connection.close();
    await clientConnection!.close();
  } finally {
    stopTelemetry();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function loadAverage(): string {
  return loadavg()[0]!.toFixed(1);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
