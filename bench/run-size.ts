import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Client, Connection } from '@temporalio/client';
import {
  describeInstances,
  type Ec2Client as EC2Client,
  type Ec2Instance as Instance,
} from '../ec2/instances';
import { lambdaEc2Client } from '../ec2/lambda-client';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InstanceOwners } from '../activities/instance-owners';
import { TAG_MODEL } from '../core/tags';
import {
  METRICS_CALLERS_ENV,
  METRICS_FILE_ENV,
  STATEMENT_FALLBACK,
  type CallerTotals,
  type CapacityTotals,
} from '../config/capacity-meter';
import { freePort, type ManagedProcess } from '../local/processes';
import { startStack, workerName, type RunningStack } from '../local/stack';
import type { StackInfo } from '../local/stack-info';
import { Repository } from '../state/repository';
import type { MachineRecord } from '../state/types';
import { machineOfWorkflowId, machineWorkflowId } from '../temporal/search-attributes';
import { auditInstances, type InstanceView } from './audit';
import type {
  CapacityUse,
  ProvisionerResult,
  SizeResult,
  TeardownResult,
  TemporalUse,
  TimedOutWorkflowTask,
} from './figures';
import { runFloor } from './floor';
import { runRemoval } from './removal';
import { removalWorkflowId } from '../temporal/removal';
import {
  machinePhases,
  machineTrail,
  phaseLines,
  removalMarks,
  slowestTrails,
  summarizePhases,
  trailLines,
  type MachinePhases,
  type MachineTrail,
} from './teardown-phases';
import { cpuSince, groupCpuSeconds, ownCpuSeconds } from './cpu';
import { isWorker, machinesPerZone } from './figures';
import { runningShare, starve, type Starvation, type Starver } from './starve';
import { countHistory, emptyTemporalUse, sumMetric, timedOutWorkflowTasks } from './history';
import { profiledCpuNote, profileText, readProfiles, summarizeProfiles } from './profile';
import { configureProxy, readStats, resetMoto, resetStats } from './proxy-admin';

const MODEL = 'bench';
const CREDENTIALS = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface SizeOptions {
  n: number;
  dir: string;
  timeoutMs: number;
  requestTimeoutMs: number;
  floor: boolean;
  /** The launch phase (floor and provisioner). */
  launch: boolean;
  /** The removal phase (bench/removal.ts). */
  removal: boolean;
  /** The launch phase's destroy-model once every machine runs (`--no-destroy`: skipped). */
  destroy: boolean;
  /** Worker processes on the stack. */
  workers: number;
  /** Profile the workers' CPU and summarize the launch phase's. */
  cpuProfile: boolean;
  /** DynamoDB totals by call site too (config/capacity-meter.ts `callerLabel`). */
  ddbCallers: boolean;
  /** Node options added to the workers' command line (`--worker-node-option`). */
  workerNodeOptions?: string[];
  /** The workers pulsed stopped and running through the launch phase (`--starve-worker`). */
  starveWorker?: Starvation;
  /** Told of the starver while it runs (undefined once it stops), so Ctrl-C continues the workers first. */
  onStarver?: (starver: Starver | undefined) => void;
  log: (line: string) => void;
  /** Told of each child process and of the stack, so Ctrl-C can stop them. */
  track: (proc: ManagedProcess) => void;
  onStack: (stack: RunningStack) => void;
}

/** Brings up a fresh stack, runs the floor then the provisioner on it, and stops it. */
export async function runSize(opts: SizeOptions): Promise<SizeResult> {
  const { n, log } = opts;
  const result: SizeResult = { n, notes: [] };
  const metrics = {
    worker: join(opts.dir, 'ddb-worker.json'),
    api: join(opts.dir, 'ddb-api.json'),
  };
  log(`N=${n}: starting a private stack (logs in ${opts.dir}/data/logs)`);
  const profileDir = join(opts.dir, 'cpu-profiles');
  const temporalMetrics = await freePort();
  const stack = await startStack({
    ports: {
      api: await freePort(),
      temporal: await freePort(),
      temporalUi: await freePort(),
      dynamodb: await freePort(),
      ec2: await freePort(),
      moto: await freePort(),
      temporalMetrics,
    },
    workers: opts.workers,
    workerNodeArgs: [
      ...(opts.cpuProfile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
      ...(opts.workerNodeOptions ?? []),
    ],
    token: randomBytes(16).toString('hex'),
    dataDir: join(opts.dir, 'data'),
    workerEnv: {
      // kept in the run's logs: a slow machine's teardown is read from what its workflow and
      // activities said (a few lines a machine; the launch path logs nothing at info)
      POWERTOOLS_LOG_LEVEL: 'INFO',
      [METRICS_FILE_ENV]: metrics.worker,
      ...(opts.ddbCallers ? { [METRICS_CALLERS_ENV]: '1' } : {}),
    },
    apiEnv: {
      [METRICS_FILE_ENV]: metrics.api,
      ...(opts.ddbCallers ? { [METRICS_CALLERS_ENV]: '1' } : {}),
    },
    log: (line) => log(`  ${line}`),
    track: opts.track,
  });
  opts.onStack(stack);
  const { info } = stack;
  const ec2 = lambdaEc2Client({
    region: info.region,
    endpoint: info.ec2Endpoint,
    credentials: CREDENTIALS,
    maxAttempts: 1,
  });
  const moto = lambdaEc2Client({
    region: info.region,
    endpoint: info.motoEndpoint,
    credentials: CREDENTIALS,
    maxAttempts: 3,
  });
  const ddb = new DynamoDBClient({
    region: info.region,
    endpoint: info.dynamodbEndpoint,
    credentials: CREDENTIALS,
  });
  const connection = await Connection.connect({ address: info.temporalAddress });
  const temporal = new Client({ connection, namespace: info.temporalNamespace });
  try {
    result.notes.push(...(await configureProxy(info.ec2Endpoint)));
    if (opts.floor) {
      log(`N=${n}: bare-SDK floor`);
      result.floor = await runFloor(
        ec2,
        {
          n,
          region: info.region,
          runTag: `floor-${n}`,
          deadline: Date.now() + opts.timeoutMs,
        },
        result.notes,
      );
      log(
        `N=${n}: floor launched in ${(result.floor.launchedMs / 1000).toFixed(1)} s, running in ${result.floor.runningMs === undefined ? '—' : (result.floor.runningMs / 1000).toFixed(1)} s`,
      );
      await resetMoto(info.motoEndpoint);
      await configureProxy(info.ec2Endpoint); // buckets full again for the provisioner
    }
    const repo = new Repository(ddb, info.tableName);
    if (opts.launch) {
      const pids = stack.processes
        .filter((p) => isWorker(p.name) && p.child.pid !== undefined)
        .map((p) => p.child.pid!);
      const starver = opts.starveWorker ? starve(pids, opts.starveWorker) : undefined;
      opts.onStarver?.(starver);
      try {
        result.provisioner = await runProvisioner({
          ...opts,
          info,
          stack,
          ec2,
          moto,
          repo,
          owners: InstanceOwners.ofTable(ddb, info.tableName),
          temporal,
          metrics,
          metricsUrl: `http://127.0.0.1:${temporalMetrics}/metrics`,
          notes: result.notes,
        });
      } finally {
        opts.onStarver?.(undefined);
        await starver?.stop();
      }
      if (starver && opts.starveWorker) {
        const { stopMs, runMs } = opts.starveWorker;
        result.notes.push(
          `N=${n}: the ${pids.length} worker process group(s) were starved through the launch phase${opts.destroy ? ' (its destroy-model included)' : ''}: stopped ${stopMs / 1000} s, running ${runMs / 1000} s, in turn (${Math.round(runningShare(opts.starveWorker) * 100)} % of the time running), ${starver.pulses} times (--starve-worker)`,
        );
      }
    }
    if (opts.removal) {
      result.removal = await runRemoval({ ...opts, info, repo, temporal });
      if (result.removal.note) result.notes.push(`N=${n}: removal: ${result.removal.note}`);
    }
  } finally {
    await connection.close().catch(() => undefined);
    ec2.destroy();
    moto.destroy();
    ddb.destroy();
    log(`N=${n}: stopping the stack`);
    if (opts.cpuProfile) {
      // a worker writes its profiles as it exits: it is given time to drain and exit on its own
      await Promise.all(stack.processes.filter((p) => isWorker(p.name)).map((p) => p.stop(90_000)));
    }
    await stack.stop();
  }
  const p = result.provisioner;
  if (opts.cpuProfile && p?.cpu) result.notes.push(profiledCpuNote(n, p.cpu.wallMs, opts.workers));
  if (opts.cpuProfile && p?.cpu?.windowUs) {
    const profiles = readProfiles(profileDir);
    if (profiles.length === 0) result.notes.push(`N=${n}: no CPU profile was written`);
    else {
      const summary = summarizeProfiles(profiles, p.cpu.windowUs);
      p.profile = profileText(summary);
      log(`N=${n}: workers' ${p.profile}`);
    }
  }
  return result;
}

interface PhaseContext extends SizeOptions {
  info: StackInfo;
  stack: RunningStack;
  ec2: EC2Client;
  moto: EC2Client;
  repo: Repository;
  owners: InstanceOwners;
  temporal: Client;
  metrics: { worker: string; api: string };
  /** The Temporal server's Prometheus metrics. */
  metricsUrl: string;
  notes: string[];
}

async function api(
  info: StackInfo,
  method: string,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${info.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    // keep the text
  }
  return { status: res.status, json };
}

/** Every worker's DynamoDB totals: the first's file, then `<file>.worker-2`… (local/stack.ts). */
function workerTotals(ctx: PhaseContext): CapacityTotals[] {
  return Array.from({ length: ctx.workers }, (_, i) =>
    readTotals(i === 0 ? ctx.metrics.worker : `${ctx.metrics.worker}.${workerName(i)}`),
  );
}

function readTotals(file: string): CapacityTotals {
  if (!existsSync(file)) return { readUnits: 0, writeUnits: 0, calls: {}, failed: {} };
  return JSON.parse(readFileSync(file, 'utf8')) as CapacityTotals;
}

/**
 * What the processes spent between two readings of their totals (`after`
 * less `before`), by call site too when the totals were kept so (the worker
 * and the API server: their labels are summed, the process not told apart).
 */
export function capacitySince(before: CapacityTotals[], after: CapacityTotals[]): CapacityUse {
  const use: CapacityUse = { readUnits: 0, writeUnits: 0, calls: {} };
  const byCaller: Record<string, CallerTotals> = {};
  const add = (into: CallerTotals, t: CallerTotals, sign: 1 | -1) => {
    into.readUnits += sign * t.readUnits;
    into.writeUnits += sign * t.writeUnits;
    for (const [k, v] of Object.entries(t.calls)) into.calls[k] = (into.calls[k] ?? 0) + sign * v;
    for (const [k, v] of Object.entries(t.failed ?? {}))
      into.failed[k] = (into.failed[k] ?? 0) + sign * v;
  };
  const total: CallerTotals = { readUnits: 0, writeUnits: 0, calls: {}, failed: {} };
  for (const [list, sign] of [
    [after, 1],
    [before, -1],
  ] as const) {
    for (const t of list) {
      add(total, t, sign);
      for (const [label, c] of Object.entries(t.byCaller ?? {}))
        add((byCaller[label] ??= { readUnits: 0, writeUnits: 0, calls: {}, failed: {} }), c, sign);
    }
  }
  use.readUnits = total.readUnits;
  use.writeUnits = total.writeUnits;
  for (const [k, v] of Object.entries(total.calls)) if (v !== 0) use.calls[k] = v;
  const failed = Object.entries(total.failed).filter(([, v]) => v !== 0);
  if (failed.length > 0) use.failed = Object.fromEntries(failed);
  for (const [label, c] of Object.entries(byCaller)) {
    const spent =
      Object.values(c.calls).some((v) => v !== 0) || Object.values(c.failed).some((v) => v !== 0);
    if (!spent) continue;
    for (const m of [c.calls, c.failed])
      for (const [k, v] of Object.entries(m)) if (v === 0) delete m[k];
    (use.byCaller ??= {})[label] = c;
  }
  return use;
}

/**
 * What the DynamoDB figures need said beside them: that a BatchExecuteStatement's
 * write units are the meter's estimate (DynamoDB Local reports none), and any
 * statement written again alone after a refusal other than its condition.
 */
export function capacityNotes(n: number, use: CapacityUse): string[] {
  const notes: string[] = [];
  if ((use.calls.BatchExecuteStatement ?? 0) > 0) {
    notes.push(
      `N=${n}: DynamoDB Local reports no capacity for BatchExecuteStatement; its WCU are the meter's ` +
        'estimate (1 per statement written, +1 per index key it sets or removes; items under 1 KB)',
    );
  }
  const fallbacks = use.failed?.[STATEMENT_FALLBACK] ?? 0;
  if (fallbacks > 0) {
    notes.push(
      `N=${n}: ${fallbacks} statements of BatchExecuteStatement were refused for another reason than ` +
        'their condition and written again alone (the worker logged their codes)',
    );
  }
  return notes;
}

/**
 * Of `ids`, those DescribeInstances reports `running` through `client`, asked
 * by id and state: the launch's polls ask only for instances not yet seen
 * running, so EC2 (moto, behind the proxy) describes each instance a few
 * times in a run instead of the whole model at every poll. A poll of the
 * model cost moto ~2 CPU-seconds per 1,000 instances (moto's response
 * serializer), CPU the stack's processes then lacked on this 2-core machine.
 */
async function runningAmong(
  client: EC2Client,
  ids: readonly string[],
  onCall: () => void,
): Promise<string[]> {
  const running: string[] = [];
  for (let i = 0; i < ids.length; i += 1000) {
    onCall();
    const out = await describeInstances(client, {
      InstanceIds: ids.slice(i, i + 1000),
      Filters: [{ Name: 'instance-state-name', Values: ['running'] }],
    });
    for (const instance of (out.Reservations ?? []).flatMap((r) => r.Instances ?? [])) {
      if (instance.InstanceId && instance.State?.Name === 'running') {
        running.push(instance.InstanceId);
      }
    }
  }
  return running;
}

/** Live instances tagged for the bench model, as DescribeInstances reports them through `client`. */
async function describeModel(
  client: EC2Client,
  owners: InstanceOwners,
  onCall: () => void,
): Promise<InstanceView[]> {
  const all: Instance[] = [];
  let token: string | undefined;
  do {
    onCall();
    const out = await describeInstances(client, {
      Filters: [{ Name: `tag:${TAG_MODEL}`, Values: [MODEL] }],
      MaxResults: 1000,
      NextToken: token,
    });
    all.push(...(out.Reservations ?? []).flatMap((r) => r.Instances ?? []));
    token = out.NextToken;
  } while (token);
  // each instance's machine, from its launch batch's record (no per-machine tag)
  const machineOf = await owners.of(MODEL, all);
  return all.flatMap((i) =>
    i.InstanceId
      ? [
          {
            instanceId: i.InstanceId,
            machine: machineOf.get(i.InstanceId),
            state: i.State?.Name ?? 'unknown',
          },
        ]
      : [],
  );
}

function peakRss(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Asks for the machines: one request of N, or several when that one is refused or times out. */
async function requestMachines(ctx: PhaseContext, p: ProvisionerResult): Promise<void> {
  const { n, info } = ctx;
  const start = performance.now();
  try {
    const res = await api(
      info,
      'POST',
      `/v1/models/${MODEL}/machines`,
      { count: n },
      ctx.requestTimeoutMs,
    );
    if (res.status === 201) {
      p.apiAnswerMs = performance.now() - start;
      return;
    }
    p.requestNote = `one request of ${n} answered ${res.status} ${JSON.stringify(res.json).slice(0, 200)}`;
  } catch (err) {
    p.requestNote = `one request of ${n} got no answer within ${ctx.requestTimeoutMs / 1000} s (${(err as Error).name})`;
  }
  ctx.log(`N=${n}: ${p.requestNote}; falling back to several requests`);
  await sleep(5000); // let a cut-off request finish what it was writing
  const chunk = 50;
  let have = (await ctx.repo.listMachines(MODEL)).length;
  while (have < n) {
    const count = Math.min(chunk, n - have);
    const res = await api(
      info,
      'POST',
      `/v1/models/${MODEL}/machines`,
      { count },
      ctx.requestTimeoutMs,
    );
    p.requests += 1;
    if (res.status !== 201) {
      throw new Error(
        `fallback request of ${count} answered ${res.status}: ${JSON.stringify(res.json)}`,
      );
    }
    have += count;
  }
  p.apiAnswerMs = performance.now() - start;
  p.requestNote += `; then ${p.requests - 1} requests of ≤ ${chunk}`;
  ctx.notes.push(`N=${n}: ${p.requestNote}`);
}

/**
 * The dry run of the request the bench is about to make (issue 28): asked
 * twice, the first with the API's caches cold (its first catalogue, zones and
 * prices), the second warm, whose answer is the one kept. Nothing is written.
 */
async function planMachines(ctx: PhaseContext, p: ProvisionerResult): Promise<void> {
  const { n, info } = ctx;
  const ask = async () => {
    const start = performance.now();
    const res = await api(
      info,
      'POST',
      `/v1/models/${MODEL}/machines`,
      { count: n, dryRun: true },
      ctx.requestTimeoutMs,
    );
    const ms = performance.now() - start;
    const plan = (
      res.json as {
        plan?: { estimatedSeconds?: unknown; notes?: unknown; machines?: unknown };
      }
    ).plan;
    if (res.status !== 200 || typeof plan?.estimatedSeconds !== 'number') {
      throw new Error(
        `the dry run answered ${res.status} ${JSON.stringify(res.json).slice(0, 200)}`,
      );
    }
    const notes = Array.isArray(plan.notes) ? plan.notes.map(String) : [];
    const zones = Array.isArray(plan.machines)
      ? [
          ...new Set(
            plan.machines.flatMap((m: unknown) => {
              const zone = (m as { zone?: unknown } | null)?.zone;
              return typeof zone === 'string' ? [zone] : [];
            }),
          ),
        ].sort()
      : [];
    return { ms, estimatedSeconds: plan.estimatedSeconds, notes, zones };
  };
  try {
    const cold = await ask();
    const warm = await ask();
    p.plan = {
      estimatedSeconds: warm.estimatedSeconds,
      coldAnswerMs: cold.ms,
      answerMs: warm.ms,
      notes: warm.notes,
      zones: warm.zones,
    };
    ctx.log(
      `N=${n}: the plan says the last machine is launched in ${warm.estimatedSeconds} s; ` +
        `it answered in ${(cold.ms / 1000).toFixed(1)} s cold, ${Math.round(warm.ms)} ms warm` +
        (warm.notes.length > 0 ? `; notes: ${warm.notes.join(' | ')}` : ''),
    );
  } catch (err) {
    p.planNote = `no plan: ${(err as Error).message}`;
    ctx.notes.push(`N=${n}: ${p.planNote}`);
    ctx.log(`N=${n}: ${p.planNote}`);
  }
}

async function runProvisioner(ctx: PhaseContext): Promise<ProvisionerResult> {
  const { n, info, log } = ctx;
  const model = await api(info, 'POST', '/v1/models', { name: MODEL }, 60_000);
  if (model.status !== 201) {
    throw new Error(`creating the model answered ${model.status}: ${JSON.stringify(model.json)}`);
  }
  const p: ProvisionerResult = {
    n,
    requests: 1,
    launched: 0,
    running: 0,
    inError: 0,
    duplicates: 0,
    strays: 0,
    timedOut: false,
    ec2Calls: {},
    throttled: 0,
  };
  // the plan of the very request, before it and before the launch's counts start
  await planMachines(ctx, p);
  await sleep(1500); // a metrics flush after the model's creation
  const capacityBefore = [...workerTotals(ctx), readTotals(ctx.metrics.api)];
  await resetStats(info.ec2Endpoint);
  let ownDescribes = 0;
  let ownThrottled = 0;
  const actionsBefore = await serverActions(ctx.metricsUrl, info.temporalNamespace);
  const startsBefore = await serverTaskStarts(ctx.metricsUrl, info.temporalNamespace);
  const cpuBefore = processCpu(ctx.stack);
  const fromUs = Number(process.hrtime.bigint() / 1000n);

  log(`N=${n}: asking the API for ${n} machines`);
  const start = performance.now();
  const startEpochMs = Date.now();
  const deadline = Date.now() + ctx.timeoutMs;
  await requestMachines(ctx, p);
  log(`N=${n}: answered in ${((p.apiAnswerMs ?? 0) / 1000).toFixed(1)} s`);

  const pollEvery = n >= 300 ? 2000 : 1000;
  let lastEc2 = 0;
  const seenRunning = new Set<string>();
  let lastLog = 0;
  let pollErrors = 0;
  const pollFailed = (what: string, err: unknown) => {
    pollErrors += 1;
    if (pollErrors <= 3)
      log(`N=${n}: ${what} failed (${(err as Error).name}: ${(err as Error).message}); polling on`);
  };
  let machines: MachineRecord[] = [];
  for (;;) {
    try {
      machines = await ctx.repo.listMachines(MODEL);
    } catch (err) {
      pollFailed('reading the machines', err);
      await sleep(pollEvery);
      if (Date.now() > deadline) {
        p.timedOut = true;
        break;
      }
      continue;
    }
    const launched = machines.filter((m) => m.instanceId).length;
    const inError = machines.filter((m) => m.status === 'error').length;
    p.launched = launched;
    p.inError = inError;
    if (p.launchedMs === undefined && machines.length >= n && launched === machines.length) {
      p.launchedMs = performance.now() - start;
      log(
        `N=${n}: all launched after ${(p.launchedMs / 1000).toFixed(1)} s` +
          (p.plan ? ` (the plan said ${p.plan.estimatedSeconds} s)` : ''),
      );
    }
    const settled = machines.length >= n && launched + inError >= machines.length;
    // EC2 is asked sparingly until everything has an instance, then every poll.
    if (settled || Date.now() - lastEc2 > 5000) {
      lastEc2 = Date.now();
      try {
        // only the recorded instances not yet seen running (a launch's instance stays so)
        const recorded = machines.flatMap((m) => (m.instanceId ? [m.instanceId] : []));
        const asked = recorded.filter((id) => !seenRunning.has(id));
        if (asked.length > 0) {
          let running: string[];
          try {
            running = await runningAmong(ctx.ec2, asked, () => (ownDescribes += 1));
          } catch (err) {
            // an id EC2 no longer knows refuses the whole call: the model's listing, as before
            if ((err as { name?: string }).name !== 'InvalidInstanceID.NotFound') throw err;
            const listed = await describeModel(ctx.ec2, ctx.owners, () => (ownDescribes += 1));
            running = listed.filter((i) => i.state === 'running').map((i) => i.instanceId);
          }
          for (const id of running) seenRunning.add(id);
        }
        p.running = recorded.filter((id) => seenRunning.has(id)).length;
      } catch (err) {
        if ((err as { name?: string }).name === 'RequestLimitExceeded') ownThrottled += 1;
        else pollFailed('DescribeInstances', err);
      }
      if (p.runningMs === undefined && p.launchedMs !== undefined && p.running >= n) {
        p.runningMs = performance.now() - start;
        log(`N=${n}: all running after ${(p.runningMs / 1000).toFixed(1)} s`);
      }
    }
    if (p.runningMs !== undefined || (settled && p.running >= launched)) break;
    if (Date.now() > deadline) {
      p.timedOut = true;
      log(`N=${n}: gave up after ${ctx.timeoutMs / 60_000} min`);
      break;
    }
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(
        `N=${n}: ${((performance.now() - start) / 1000).toFixed(0)} s: ${machines.length} recorded, ${launched} launched, ${p.running} running, ${inError} in error`,
      );
    }
    await sleep(pollEvery);
  }

  const cpuAfter = processCpu(ctx.stack);
  p.cpu = {
    seconds: cpuSince(cpuBefore, cpuAfter),
    wallMs: performance.now() - start,
    windowUs: { fromUs, toUs: Number(process.hrtime.bigint() / 1000n) },
    workerPids: Object.fromEntries(
      ctx.stack.processes
        .filter((x) => isWorker(x.name) && x.child.pid !== undefined)
        .map((x) => [x.name, x.child.pid!]),
    ),
  };
  const actionsAfter = await serverActions(ctx.metricsUrl, info.temporalNamespace);
  const startsAfter = await serverTaskStarts(ctx.metricsUrl, info.temporalNamespace);
  if (startsBefore && startsAfter) {
    p.serverTaskStarts = {
      recordTimedOut: startsAfter.recordTimedOut - startsBefore.recordTimedOut,
      droppedAsStarted: startsAfter.droppedAsStarted - startsBefore.droppedAsStarted,
    };
    log(
      `N=${n}: Temporal server, launch phase: ${p.serverTaskStarts.recordTimedOut} workflow-task starts timed out in matching, ${p.serverTaskStarts.droppedAsStarted} tasks dropped as already started (at most this many lost until their task timeout: a harmless duplicate offer is dropped the same way; the timed-out tasks listed from the histories are the lost ones)`,
    );
  }
  if (p.runningMs !== undefined) await statusCatchesUp(ctx, p, start);
  if (actionsBefore !== undefined && actionsAfter !== undefined) {
    p.serverActions = actionsAfter - actionsBefore;
  } else {
    ctx.notes.push(`N=${n}: the Temporal server reported no \`action\` metric`);
  }
  if (pollErrors > 0)
    ctx.notes.push(`N=${n}: ${pollErrors} of the bench's polls failed and were retried`);
  const stats = await readStats(info.ec2Endpoint);
  const calls = { ...stats.calls };
  if (calls.DescribeInstances !== undefined) {
    calls.DescribeInstances -= ownDescribes;
    if (calls.DescribeInstances <= 0) delete calls.DescribeInstances;
  }
  p.ec2Calls = calls;
  p.throttled = stats.throttled - ownThrottled;
  // every worker's (with --workers K there are K): the figure is the largest
  const rss = Object.fromEntries(
    ctx.stack.processes
      .filter((x) => isWorker(x.name))
      .map((x) => [x.name, peakRss(x.child.pid)] as const)
      .filter((e): e is readonly [string, number] => e[1] !== undefined),
  );
  if (Object.keys(rss).length > 0) {
    p.workerPeakRssBytesByWorker = rss;
    p.workerPeakRssBytes = Math.max(...Object.values(rss));
  }

  await sleep(1500); // the last metrics flush
  p.capacity = capacitySince(capacityBefore, [...workerTotals(ctx), readTotals(ctx.metrics.api)]);
  ctx.notes.push(...capacityNotes(n, p.capacity));

  machines = await ctx.repo.listMachines(MODEL);
  const audit = auditInstances(
    machines,
    await describeModel(ctx.moto, ctx.owners, () => undefined),
  );
  p.inError = audit.inError;
  p.duplicates = audit.duplicates;
  p.strays = audit.strays;
  p.perZone = machinesPerZone(machines, p.plan?.zones);

  log(`N=${n}: reading ${machines.length} workflow histories`);
  p.temporal = await temporalUse(
    ctx.temporal,
    machines.map((m) => machineWorkflowId(MODEL, m.id)),
    startEpochMs,
  );
  for (const t of p.temporal.timedOutWorkflowTasks ?? []) {
    log(
      `N=${n}: workflow task timed out: ${t.workflowId} attempt ${t.attempt} (${t.queue} queue) scheduled +${t.scheduledS} s, started +${t.startedS} s by ${t.identity} (request ${t.requestId}), timed out +${t.timedOutS} s`,
    );
  }
  if (ctx.destroy) {
    p.teardown = await destroyModel(
      ctx,
      machines.map((m) => machineWorkflowId(MODEL, m.id)),
    );
  } else {
    ctx.notes.push(`N=${n}: destroy-model not run (--no-destroy)`);
  }
  return p;
}

/**
 * After EC2 says every instance runs: how long until every machine's
 * recorded instanceStatus says so too (what the status answer shows). EC2's
 * state-change events carry it: in the cloud through EventBridge to the
 * instance-events Lambda, locally the stack's own emitter (local/ec2-events.ts)
 * to the same handler; the sweeper's listing (every PROVISIONER_SWEEP_INTERVAL)
 * is the backstop. Bounded at two minutes.
 */
async function statusCatchesUp(
  ctx: PhaseContext,
  p: ProvisionerResult,
  start: number,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const machines = await ctx.repo.listMachines(MODEL);
      p.statusRunning = machines.filter((m) => m.instanceStatus === 'running').length;
      if (p.statusRunning >= ctx.n) {
        p.statusRunningMs = performance.now() - start;
        ctx.log(
          `N=${ctx.n}: every machine's instanceStatus running after ${(p.statusRunningMs / 1000).toFixed(1)} s`,
        );
        return;
      }
    } catch {
      // polled again
    }
    if (Date.now() > deadline) return;
    await sleep(1000);
  }
}

/** CPU seconds so far of each of the stack's processes, and of this one (the EC2 proxy runs in it). */
function processCpu(stack: RunningStack): Record<string, number | undefined> {
  const out: Record<string, number | undefined> = {};
  for (const proc of stack.processes) out[proc.name] = groupCpuSeconds(proc.child.pid);
  out['bench (EC2 proxy, pricing emulator, polls)'] = ownCpuSeconds();
  return out;
}

/**
 * The server's late workflow-task starts so far (see ProvisionerResult.serverTaskStarts);
 * undefined when either counter cannot be read (a counter the server has not
 * created yet, because nothing was counted, reads 0).
 */
async function serverTaskStarts(
  url: string,
  namespace: string,
): Promise<{ recordTimedOut: number; droppedAsStarted: number } | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    const text = await res.text();
    return {
      recordTimedOut:
        sumMetric(text, 'client_errors', {
          namespace,
          operation: 'HistoryClientRecordWorkflowTaskStarted',
          error_type: 'serviceerror_DeadlineExceeded',
        }) ?? 0,
      droppedAsStarted:
        sumMetric(text, 'service_error_with_type', {
          namespace,
          operation: 'RecordWorkflowTaskStarted',
          error_type: 'serviceerror_TaskAlreadyStarted',
        }) ?? 0,
    };
  } catch {
    return undefined;
  }
}

/**
 * The Temporal server's `action` counter (Prometheus text), summed over the
 * series of the provisioner's namespace (the system namespace's own actions
 * left out): what the server itself counts as billable actions, heartbeats
 * included. Undefined when it has no such metric or cannot be read.
 */
async function serverActions(url: string, namespace: string): Promise<number | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    return sumMetric(await res.text(), 'action', { namespace });
  } catch {
    return undefined;
  }
}

/** Instances moto holds, live or not, by model tag (the bench's own calls bypass the proxy). */
async function motoInstances(ctx: PhaseContext): Promise<Instance[]> {
  const all: Instance[] = [];
  let token: string | undefined;
  do {
    const out = await describeInstances(ctx.moto, { MaxResults: 1000, NextToken: token });
    all.push(...(out.Reservations ?? []).flatMap((r) => r.Instances ?? []));
    token = out.NextToken;
  } while (token);
  return all;
}

const GONE_STATES = new Set(['shutting-down', 'terminated']);

/**
 * Issue 30: `DELETE /v1/models/{model}` with every machine running, timed
 * until every instance of the model is terminated (per moto) and the model
 * is gone from the table, with the EC2 calls the proxy counted meanwhile.
 */
async function destroyModel(ctx: PhaseContext, workflowIds: string[]): Promise<TeardownResult> {
  const { n, info, log } = ctx;
  const before = await motoInstances(ctx);
  const isOurs = (i: Instance) => i.Tags?.some((t) => t.Key === TAG_MODEL && t.Value === MODEL);
  const othersLiveBefore = new Set(
    before
      .filter((i) => !isOurs(i) && !GONE_STATES.has(i.State?.Name ?? ''))
      .map((i) => i.InstanceId),
  );
  const modelUid = (await ctx.repo.getModel(MODEL)).uid;
  await resetStats(info.ec2Endpoint);
  log(`N=${n}: destroying the model`);
  const start = performance.now();
  const wallStartS = Date.now() / 1000;
  /** When the bench first saw each instance of the model shutting down or terminated. */
  const goneAt = new Map<string, number>();
  const t: TeardownResult = {
    status: 0,
    leftRunning: 0,
    othersTerminated: 0,
    timedOut: false,
    ec2Calls: {},
    throttled: 0,
  };
  const res = await api(info, 'DELETE', `/v1/models/${MODEL}`, undefined, ctx.requestTimeoutMs);
  t.status = res.status;
  t.answerMs = performance.now() - start;
  if (res.status !== 202 && res.status !== 200 && res.status !== 204) {
    ctx.notes.push(
      `N=${n}: DELETE of the model answered ${res.status} ${JSON.stringify(res.json)}`,
    );
  }
  const deadline = Date.now() + Math.min(ctx.timeoutMs, 5 * 60_000);
  let lastLog = 0;
  for (;;) {
    if (t.modelGoneMs === undefined) {
      const gone = await ctx.repo.getModel(MODEL).then(
        () => false,
        (err: unknown) => (err as Error).name === 'EntityNotFoundError',
      );
      if (gone) {
        t.modelGoneMs = performance.now() - start;
        log(`N=${n}: model gone after ${(t.modelGoneMs / 1000).toFixed(1)} s`);
      }
    }
    const now = await motoInstances(ctx);
    const live = now.filter((i) => isOurs(i) && !GONE_STATES.has(i.State?.Name ?? ''));
    for (const i of now) {
      if (i.InstanceId && isOurs(i) && GONE_STATES.has(i.State?.Name ?? '')) {
        if (!goneAt.has(i.InstanceId)) goneAt.set(i.InstanceId, performance.now() - start);
      }
    }
    t.leftRunning = live.length;
    t.othersTerminated = now.filter(
      (i) => othersLiveBefore.has(i.InstanceId) && GONE_STATES.has(i.State?.Name ?? ''),
    ).length;
    if (t.terminatedMs === undefined && live.length === 0) {
      t.terminatedMs = performance.now() - start;
      log(`N=${n}: all instances terminated after ${(t.terminatedMs / 1000).toFixed(1)} s`);
    }
    if (t.terminatedMs !== undefined && t.modelGoneMs !== undefined) break;
    if (Date.now() > deadline) {
      t.timedOut = true;
      log(`N=${n}: teardown not done after ${(performance.now() - start) / 1000} s`);
      break;
    }
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      log(`N=${n}: teardown: ${live.length} instances live`);
    }
    await sleep(1000);
  }
  const stats = await readStats(info.ec2Endpoint);
  t.ec2Calls = { ...stats.calls };
  t.throttled = stats.throttled;
  const { phases, trails } = await teardownPhases(ctx.temporal, workflowIds, wallStartS);
  const gone = [...goneAt.values()].map((ms) => ({ 'instance seen shutting down': ms / 1000 }));
  const removal = await ctx.temporal.workflow
    .getHandle(removalWorkflowId({ model: MODEL, modelUid }))
    .fetchHistory()
    .then((h) => removalMarks(h.events ?? [], wallStartS))
    .catch(() => ({}));
  t.phases = summarizePhases([...phases, ...gone, removal]);
  for (const line of phaseLines(t.phases)) log(`N=${n}: teardown phases: ${line}`);
  const slowest = slowestTrails(trails, SLOWEST_SHOWN);
  t.slowest = slowest.flatMap((trail) => trailLines(trail, 3));
  for (const line of t.slowest) log(`N=${n}: slowest teardown: ${line}`);
  const file = join(ctx.dir, 'teardown-slowest.txt');
  writeFileSync(file, slowestReport(join(ctx.dir, 'data', 'logs'), slowest));
  log(`N=${n}: the slowest machines' histories and log lines: ${file}`);
  return t;
}

/** How many of the slowest machines' teardowns the bench shows, gap by gap. */
const SLOWEST_SHOWN = 3;

/**
 * The slowest machines' trails with every line the stack's logs hold about
 * them (the workers' at info, the Temporal server's warnings: a task the
 * server failed to hand to a worker names the workflow there).
 */
function slowestReport(logDir: string, trails: readonly MachineTrail[]): string {
  const out: string[] = [];
  const logs = existsSync(logDir)
    ? readdirSync(logDir)
        .filter((f) => /^(worker(-\d+)?|temporal)\.log$/.test(f))
        .map((f) => ({ name: f, lines: readFileSync(join(logDir, f), 'utf8').split('\n') }))
    : [];
  for (const trail of trails) {
    out.push(...trailLines(trail), '');
    const workflowId = machineWorkflowId(MODEL, trail.machine);
    const mentions = [`"${workflowId}"`, `wf-id=${workflowId} `, `"machineId":"${trail.machine}"`];
    for (const { name, lines } of logs) {
      const hits = lines.filter((l) => mentions.some((m) => l.includes(m)));
      if (hits.length === 0) continue;
      out.push(`${name}:`, ...hits.slice(0, 200).map((l) => `  ${l}`), '');
    }
  }
  return `${out.join('\n')}\n`;
}

/** Each machine workflow's teardown marks and trail (bench/teardown-phases.ts), read 8 at a time. */
async function teardownPhases(
  client: Client,
  workflowIds: string[],
  startS: number,
): Promise<{ phases: MachinePhases[]; trails: MachineTrail[] }> {
  const queue = [...workflowIds];
  const phases: MachinePhases[] = [];
  const trails: MachineTrail[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
          phases.push(machinePhases(events, startS));
          const trail = machineTrail(machineOfWorkflowId(id)?.machineId ?? id, events, startS);
          if (trail) trails.push(trail);
        } catch {
          // a machine without a workflow has no marks
        }
      }
    }),
  );
  return { phases, trails };
}

/**
 * Every machine workflow's history, plus every other workflow the run left in
 * the namespace (the model's sweeps, bulk starters): their cost is the
 * machines' too, so it is added to the totals; `otherWorkflows` says how many.
 */
async function temporalUse(
  client: Client,
  workflowIds: string[],
  fromMs: number,
): Promise<TemporalUse> {
  const use = emptyTemporalUse();
  const timedOut: TimedOutWorkflowTask[] = [];
  const others = emptyTemporalUse();
  const machineIds = new Set(workflowIds);
  const otherIds: string[] = [];
  for await (const wf of client.workflow.list()) {
    if (!machineIds.has(wf.workflowId)) otherIds.push(wf.workflowId);
  }
  const read = async (ids: string[], into: TemporalUse) => {
    const queue = [...new Set(ids)];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            const history = await client.workflow.getHandle(id).fetchHistory();
            countHistory(history.events ?? [], into);
            timedOut.push(...timedOutWorkflowTasks(id, history.events ?? [], fromMs));
          } catch {
            // a machine without a workflow is not counted
          }
        }
      }),
    );
  };
  await read(workflowIds, use);
  await read(otherIds, others);
  return {
    ...use,
    events: use.events + others.events,
    actions: use.actions + others.actions,
    workflowTasks: use.workflowTasks + others.workflowTasks,
    activityTasks: use.activityTasks + others.activityTasks,
    activityRetries: use.activityRetries + others.activityRetries,
    otherWorkflows: others.workflows,
    timedOutWorkflowTasks: timedOut.sort((a, b) => a.startedS - b.startedS),
    actionsByKind: {
      ...use.actionsByKind,
      ...Object.fromEntries(
        Object.entries(others.actionsByKind ?? {}).map(([k, v]) => [`other workflows: ${k}`, v]),
      ),
    },
  };
}
