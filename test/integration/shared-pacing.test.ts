import {
  DescribeAvailabilityZonesCommand,
  DescribeImagesCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CapacityMemory } from '../../activities/capacity-memory';
import type { ActivityDeps } from '../../activities/deps';
import { LaunchBatcher, type LaunchRequest } from '../../activities/launch-batcher';
import type { StartedInstance } from '../../activities/types';
import { readStats, resetStats } from '../../bench/proxy-admin';
import { workerEc2Client } from '../../ec2/client';
import { startEc2Proxy, type Ec2Proxy } from '../../local/ec2-proxy';
import { LaunchBatchStore } from '../../state/launch-batches';
import { LaunchRecordStore } from '../../state/launch-record';
import { Repository } from '../../state/repository';
import { uniqueName } from './api-client';
import { modelInstances } from './ec2-test-kit';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

/**
 * Two workers' launch batchers (each its own LaunchBatcher, LaunchRecordStore
 * and EC2 client, as two worker processes have) launch one model's machines
 * together over the stack's real DynamoDB Local table, through an EC2 proxy
 * of this file's own in front of moto with a small RunInstances bucket.
 * Each paces its calls in the deployment's launch record (state/launch-record.ts
 * `reserve`): together they must stay within the one bucket, where each
 * pacing alone on its own copy of it spends it twice and EC2 refuses the
 * excess (the control case shows the proxy does refuse). And when the record
 * cannot be written, launches still go out, each worker pacing alone.
 *
 * Zone claims are not part of this (the test gives each machine its zone,
 * 100 per zone); the two-worker test runs the whole workflow on two worker
 * processes.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
// its own table: the stack's worker sweeps the stack's table, and would start workflows for the
// machines written here and launch them a second time once a run takes longer than a sweep
const table = privateTable(ddb, 'shared-pacing');
const repo = new Repository(ddb, table.tableName);
const moto = new EC2Client({
  region: stack.region,
  endpoint: stack.motoEndpoint,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  maxAttempts: 3,
});
let proxy: Ec2Proxy;
let imageId = '';
let zones: string[] = [];
const clients: EC2Client[] = [];
const recordClients: DynamoDBClient[] = [];

/** The proxy's RunInstances bucket, and the workers' (EC2's model: a burst, then a rate). */
const BUCKET = { burst: 3, perSecond: 2 };
const N = 300;

beforeAll(async () => {
  await table.create();
  proxy = await startEc2Proxy({ upstream: stack.motoEndpoint, port: 0 });
  const images = await moto.send(new DescribeImagesCommand({}));
  imageId = images.Images?.find((i) => i.ImageId)?.ImageId ?? '';
  expect(imageId).not.toBe('');
  const out = await moto.send(new DescribeAvailabilityZonesCommand({}));
  zones = (out.AvailabilityZones ?? [])
    .flatMap((z) => (z.ZoneName ? [z.ZoneName] : []))
    .sort()
    .slice(0, 3);
  expect(zones).toHaveLength(3);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.destroy();
  for (const c of recordClients) c.destroy();
  moto.destroy();
  await proxy?.close();
  await table.drop();
  ddb.destroy();
});

async function setRunInstancesBucket(bucket?: { burst: number; perSecond: number }) {
  const res = await fetch(`${proxy.url}/_admin/limits`, {
    method: bucket ? 'PUT' : 'DELETE',
    ...(bucket
      ? {
          body: JSON.stringify({
            runInstances: { burst: bucket.burst, refillPerSecond: bucket.perSecond },
          }),
          headers: { 'content-type': 'application/json' },
        }
      : {}),
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.status).toBe(200);
}

/** One worker's launch batcher: its own record store (on `recordTable`) and EC2 client. */
function worker(
  deployment: string,
  opts: {
    shared: boolean;
    recordTable?: string;
    bucket?: { burst: number; perSecond: number };
    keySpacingMs?: number;
  },
) {
  const bucket = opts.bucket ?? BUCKET;
  // a deployed worker's EC2 client: its retries (a throttled call is retried, and counted by
  // the proxy), except a batcher's RunInstances, which takes a fresh turn instead
  const ec2 = workerEc2Client(
    {
      region: stack.region,
      endpoint: proxy.url,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    },
    { launchBurst: bucket.burst },
  );
  clients.push(ec2);
  // as the worker has it (worker/main.ts): a DynamoDB client of its own for the record, so a
  // reservation is not queued for a socket behind the batch's marks
  const recordClient = dynamoClientFor(stack);
  recordClients.push(recordClient);
  const launchRecord = new LaunchRecordStore(
    recordClient,
    opts.recordTable ?? table.tableName,
    deployment,
    // as the reserve timeout below: a write of seconds on a shared machine is not a failure here
    { requestTimeoutMs: 120_000 },
  );
  const deps = {
    store: { batches: new LaunchBatchStore(ddb, table.tableName) },
    ec2ForRegion: () => ({ ec2 }),
    tuning: {
      launchBurst: bucket.burst,
      launchRatePerSecond: bucket.perSecond,
      ...(opts.keySpacingMs !== undefined ? { launchKeySpacingMs: opts.keySpacingMs } : {}),
      launchBatchIdleMs: 50,
      launchBatchMaxMs: 250,
      capacityMemoryMs: 0,
      launchSharedPacing: opts.shared,
      // a machine shared with other test runs can take seconds per write: this checks the
      // pacing, not the fallback on a slow table (its unit test does, with the default)
      launchReserveTimeoutMs: 120_000,
    },
    deployment,
    launchRecord,
  } as unknown as ActivityDeps;
  return { batcher: new LaunchBatcher(deps, new CapacityMemory(0)), launchRecord };
}

/**
 * N machines of a fresh model, launched by the two workers in turn (machine i
 * on worker i mod 2, in zone i mod 3), arriving in waves of 10 every 100 ms.
 */
async function launchTogether(workers: ReadonlyArray<{ batcher: LaunchBatcher }>) {
  const model = await seedModel(repo, 'pace', { region: stack.region });
  const ids = Array.from({ length: N }, (_, i) => String(i));
  await repo.putNewMachines(ids.map((id) => pendingMachine(model, id)));
  await resetStats(proxy.url);
  const started = Date.now();
  const launches: Array<Promise<StartedInstance>> = [];
  for (let i = 0; i < N; i++) {
    if (i > 0 && i % 10 === 0) await new Promise((r) => setTimeout(r, 100));
    const zone = zones[i % 3]!;
    const request: LaunchRequest = {
      model,
      machineId: ids[i]!,
      zone,
      tokenSeed: `machine:${model}:${i}/run-1/1/1/${zone}`,
      plan: {
        region: stack.region,
        instanceType: 'm5.large',
        imageId,
        hardware: { arch: 'amd64', cores: 2, mem: 8192, rootDisk: 8192 },
        zonesConstraint: [],
        applications: [],
      },
    };
    const launch = workers[i % 2]!.batcher.launch(request);
    // settled below, after the last wave: a launch refused meanwhile is not an unhandled rejection
    launch.catch(() => undefined);
    launches.push(launch);
  }
  const results = await Promise.allSettled(launches);
  const elapsedS = (Date.now() - started) / 1000;
  const stats = await readStats(proxy.url);
  return { model, results, elapsedS, stats };
}

/** Every instance moto holds for the model, live or not. */
async function instancesOf(model: string): Promise<string[]> {
  return (await modelInstances(moto, model)).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
}

function launched(results: ReadonlyArray<PromiseSettledResult<StartedInstance>>) {
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
  const instanceIds = results.flatMap((r) =>
    r.status === 'fulfilled' ? [r.value.instanceId] : [],
  );
  const perZone: Record<string, number> = {};
  for (const r of results)
    if (r.status === 'fulfilled') perZone[r.value.zone] = (perZone[r.value.zone] ?? 0) + 1;
  return { failed, instanceIds, perZone };
}

describe('RunInstances paced across workers in the launch record', () => {
  it(
    'two workers launching 300 machines together stay within one bucket: 0 throttled, one instance each',
    async () => {
      await setRunInstancesBucket(BUCKET);
      const deployment = uniqueName('pace-shared');
      const workers = [worker(deployment, { shared: true }), worker(deployment, { shared: true })];
      const { model, results, elapsedS, stats } = await launchTogether(workers);
      const { failed, instanceIds, perZone } = launched(results);
      const calls = stats.calls.RunInstances ?? 0;
      process.stderr.write(
        `[shared pacing] ${N} machines, two workers: ${calls} RunInstances in ${elapsedS.toFixed(1)} s, throttled ${stats.throttled}, per zone ${JSON.stringify(perZone)}, lost races ${workers.map((w) => w.launchRecord.lostRaces).join('+')}, paced alone ${workers.map((w) => w.batcher.localFallbacks).join('+')}, repaced after a throttle ${workers.map((w) => w.batcher.throttledAttempts).join('+')}, turns booked again (late) ${workers.map((w) => w.batcher.staleTurns).join('+')}, late after the turn (max / mean ms) ${workers.map((w) => `${w.batcher.lateness.maxMs} / ${Math.round(w.batcher.lateness.totalMs / Math.max(1, w.batcher.lateness.calls))}`).join(', ')}, spaced for another worker (batches / s) ${workers.map((w) => `${w.batcher.spaced.batches} / ${(w.batcher.spaced.totalMs / 1000).toFixed(1)}`).join(', ')}\n`,
      );
      expect(failed).toEqual([]);
      expect(new Set(instanceIds).size).toBe(N);
      expect((await instancesOf(model)).sort()).toEqual([...instanceIds].sort());
      expect(Object.values(perZone)).toEqual([100, 100, 100]);
      // the one bucket: no more calls than it allows, and EC2 refused none of them (0 in every
      // run at load 4-8) but at most a call or two released late together by a stalled event
      // loop (the two batchers, the proxy and jest share one on a busy 2-core machine), each
      // repeated on a paced turn (none failed, above); pacing alone, the control meets 12-19
      expect(stats.throttled).toBeLessThanOrEqual(2);
      expect(calls).toBeLessThanOrEqual(BUCKET.burst + Math.ceil(BUCKET.perSecond * elapsedS));
      // both workers sent calls, each reserving its turn in the record (no fallback)
      for (const w of workers) expect(w.batcher.localFallbacks).toBe(0);
      // the instances reached the record: by the next reservation, or the flush 2 s after
      const record = await workers[0]!.launchRecord.read(stack.region);
      expect(record?.version).toBeGreaterThanOrEqual(calls);
    },
    5 * 60_000,
  );

  it(
    "key spacing: two workers' batches of one zone alternate, far fewer calls than each batching alone",
    async () => {
      // a bucket that never binds here: the calls are as many as the batches the workers form
      await setRunInstancesBucket(undefined);
      const wide = { burst: 100, perSecond: 100 };
      const run = async (keySpacingMs: number) => {
        const deployment = uniqueName(`pace-key${keySpacingMs}`);
        const opts = { shared: true, bucket: wide, keySpacingMs };
        const workers = [worker(deployment, opts), worker(deployment, opts)];
        const out = await launchTogether(workers);
        const { failed, instanceIds } = launched(out.results);
        expect(failed).toEqual([]);
        expect(new Set(instanceIds).size).toBe(N);
        expect((await instancesOf(out.model)).sort()).toEqual([...instanceIds].sort());
        return {
          calls: out.stats.calls.RunInstances ?? 0,
          elapsedS: out.elapsedS,
          spaced: workers.map((w) => w.batcher.spaced.batches),
          spacedS: workers.map((w) => w.batcher.spaced.totalMs / 1000),
          fallbacks: workers.map((w) => w.batcher.localFallbacks),
        };
      };
      const alone = await run(0);
      // a spacing of 1 s (the default is the batch's max window, 250 ms here, which a busy
      // table's marks and commits outlast): at most a call per zone per second while both launch
      const spaced = await run(1_000);
      process.stderr.write(
        `[shared pacing] key spacing, ${N} machines, two workers: ${spaced.calls} RunInstances in ${spaced.elapsedS.toFixed(1)} s (batches spaced ${spaced.spaced.join('+')}, waiting ${spaced.spacedS.map((x) => x.toFixed(1)).join('+')} s), without it ${alone.calls} in ${alone.elapsedS.toFixed(1)} s\n`,
      );
      // both workers saw the other's calls of their keys and waited for them
      for (const n of spaced.spaced) expect(n).toBeGreaterThan(0);
      expect(alone.spaced).toEqual([0, 0]);
      expect([...spaced.fallbacks, ...alone.fallbacks]).toEqual([0, 0, 0, 0]);
      // each worker alone sends a batch per zone as often as its windows and its writes
      // allow; spaced, a zone's calls are a second apart at least while both launch it.
      // Measured 26 against 68 (load ~16): asserted with room for a slow machine
      expect(spaced.calls).toBeLessThanOrEqual(Math.ceil(0.6 * alone.calls));
    },
    8 * 60_000,
  );

  it(
    'the control: each worker pacing alone on its own copy of the bucket spends it twice, and EC2 throttles',
    async () => {
      await setRunInstancesBucket(BUCKET);
      const deployment = uniqueName('pace-alone');
      const workers = [
        worker(deployment, { shared: false }),
        worker(deployment, { shared: false }),
      ];
      const { model, results, stats, elapsedS } = await launchTogether(workers);
      process.stderr.write(
        `[shared pacing] control, each worker alone: ${stats.calls.RunInstances ?? 0} RunInstances in ${elapsedS.toFixed(1)} s, throttled ${stats.throttled}, repaced after a throttle ${workers.map((w) => w.batcher.throttledAttempts).join('+')}\n`,
      );
      expect(stats.throttled).toBeGreaterThan(0);
      // throttled calls back off before their repeats: every machine is launched all the same
      const { failed, instanceIds } = launched(results);
      expect(failed).toEqual([]);
      expect(new Set(instanceIds).size).toBe(N);
      expect((await instancesOf(model)).sort()).toEqual([...instanceIds].sort());
    },
    5 * 60_000,
  );

  it(
    'the record refused (DynamoDB: no such table): launches still go out, each worker pacing alone',
    async () => {
      await setRunInstancesBucket(undefined);
      const deployment = uniqueName('pace-refused');
      const opts = { shared: true, recordTable: 'no-such-table' };
      const workers = [worker(deployment, opts), worker(deployment, opts)];
      const { model, results, stats } = await launchTogether(workers);
      const { failed, instanceIds } = launched(results);
      expect(failed).toEqual([]);
      expect(new Set(instanceIds).size).toBe(N);
      expect((await instancesOf(model)).sort()).toEqual([...instanceIds].sort());
      // every call was paced locally, each after a refused reservation
      const fallbacks = workers.reduce((a, w) => a + w.batcher.localFallbacks, 0);
      expect(fallbacks).toBe(stats.calls.RunInstances ?? 0);
      expect(fallbacks).toBeGreaterThan(0);
    },
    5 * 60_000,
  );
});
