import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bucketsLeft,
  estimateLaunch,
  type Bucket,
  type LaunchBudget,
} from '../../core/launch-estimate';
import type { ManagedProcess } from '../../local/processes';
import { launchBatchSk } from '../../state/launch-batches';
import { LaunchRecordStore } from '../../state/launch-record';
import { modelPk } from '../../state/keys';
import { documentClient } from '../../state/table';
import { priceDeadlineNote, PRICE_DEADLINE_MS } from '../../service/plans';
import { apiClient, eventually, uniqueName } from './api-client';
import { startPrivateApi } from './private-api';
import { startPrivateWorker } from './private-worker';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Plans (issue 28, API.md "Plans (dry run)"), the parts that need the API
 * under settings of their own: `estimatedSeconds` counts what this deployment
 * launched recently (the worker's launch record, state/launch-record.ts), and
 * a price list that does not answer gives a plan within a few seconds, with
 * `pricePerHour: null` and a note, never a 500.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const doc = documentClient(ddb);
/** A busy 2-core machine launches slowly; bounds are generous, never sleeps. */
const SLOW = 600_000;
const logDir = mkdtempSync(join(tmpdir(), 'provisioner-plans-budget-'));

/**
 * A deployment of the test's own: its worker's launch record is its alone
 * (the shared worker records under `local`), with a small, slow instance
 * bucket so that three launches are still missing from it minutes later.
 */
const deployment = `plans-${randomUUID().slice(0, 8)}`;
const taskQueue = `provisioner-${deployment}`;
// refills in 4,000 s: the plan after the launch sees it drained however long the machines take
const INSTANCE_BUCKET: Bucket = { burst: 4, perSecond: 0.001 };
const bucketEnv = {
  PROVISIONER_DEPLOYMENT: deployment,
  PROVISIONER_LAUNCH_INSTANCE_BURST: String(INSTANCE_BUCKET.burst),
  PROVISIONER_LAUNCH_INSTANCE_RATE: String(INSTANCE_BUCKET.perSecond),
};

let worker: ManagedProcess | undefined;
let budgetApi: ManagedProcess | undefined;
let deadApi: ManagedProcess | undefined;
let api: ReturnType<typeof apiClient>;
let noPrices: ReturnType<typeof apiClient>;
/** Accepts connections and never answers: a price list that does not answer. */
let blackHole: Server | undefined;
const held: Socket[] = [];

beforeAll(async () => {
  blackHole = createServer((socket) => {
    held.push(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => blackHole!.listen(0, '127.0.0.1', resolve));
  const { port } = blackHole.address() as { port: number };
  const [w, budgeted, dead] = await Promise.all([
    startPrivateWorker(stack, {
      name: 'worker-plans-budget',
      taskQueue,
      logFile: join(logDir, 'worker.log'),
      env: bucketEnv,
    }),
    startPrivateApi(stack, {
      name: 'api-plans-budget',
      logFile: join(logDir, 'api.log'),
      env: { ...bucketEnv, PROVISIONER_TASK_QUEUE: taskQueue },
    }),
    startPrivateApi(stack, {
      name: 'api-plans-no-prices',
      logFile: join(logDir, 'api-no-prices.log'),
      env: { PRICING_ENDPOINT: `http://127.0.0.1:${port}` },
    }),
  ]);
  worker = w;
  budgetApi = budgeted.proc;
  deadApi = dead.proc;
  api = apiClient(budgeted.stack);
  noPrices = apiClient(dead.stack);
}, 180_000);

afterAll(async () => {
  await Promise.all([worker?.stop(), budgetApi?.stop(), deadApi?.stop()]);
  for (const s of held) s.destroy();
  await new Promise<void>((resolve) => (blackHole ? blackHole.close(() => resolve()) : resolve()));
  ddb.destroy();
});

async function newModel(client: ReturnType<typeof apiClient>, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  const res = await client.post('/v1/models', { name });
  expect(res.status).toBe(201);
  return name;
}

/** A plan, and the wall-clock times just before it was asked and just after it answered. */
async function timedPlan(
  client: ReturnType<typeof apiClient>,
  path: string,
  body: Record<string, unknown>,
): Promise<{ plan: any; askedAt: number; answeredAt: number }> {
  // a plan whose EC2 reads do not answer within 20 s (a cold catalogue on a loaded machine)
  // answers 503 `unavailable`, "try again shortly", and its reads go on filling the caches:
  // asked again, as a client would, at most 3 times
  for (let tries = 1; ; tries++) {
    const askedAt = Date.now();
    const res = await client.post(path, { ...body, dryRun: true });
    const answeredAt = Date.now();
    if (res.status === 503 && tries < 3) {
      expect(res.body.error.code).toBe('unavailable');
      expect(res.body.error.message).toMatch(/^EC2 did not answer within 20 s for this plan /);
      process.stderr.write(`[plans-budget] plan refused, asked again: ${res.body.error.message}\n`);
      continue;
    }
    expect(res.status).toBe(200);
    return { plan: res.body.plan, askedAt, answeredAt };
  }
}

/** The plan's launches as the worker batches them: machines per zone and type. */
function batchesOf(plan: any): number[] {
  const byKey = new Map<string, number>();
  for (const m of plan.machines) {
    const key = JSON.stringify([m.zone, m.instanceType, m.base]);
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
  }
  return [...byKey.values()];
}

/** The sent launch batches recorded in a model's partition. */
async function sentBatches(model: string): Promise<number> {
  const out = await doc.send(
    new QueryCommand({
      TableName: stack.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': modelPk(model), ':sk': launchBatchSk('') },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).filter((i) => i.state === 'sent').length;
}

describe("estimatedSeconds counts this deployment's recent launches", () => {
  it(
    'a plan made after three launches waits for the refill the record says, where the same plan before did not',
    async () => {
      const model = await newModel(api, 'planbudget');
      const path = `/v1/models/${model}/machines`;
      const body = { count: 3, base: 'ubuntu@22.04' };
      const records = new LaunchRecordStore(ddb, stack.tableName, deployment);
      expect(await records.read(stack.region)).toBeUndefined();

      // before: nothing launched by this deployment: 3 of the bucket's 4 at once
      const before = await timedPlan(api, path, body);
      expect(before.plan.machines).toHaveLength(3);
      const calls = batchesOf(before.plan).length;
      // 1 s batch wait + 2 s round trip, nothing to wait for
      expect(before.plan.estimatedSeconds).toBe(3);
      expect(before.plan.notes.join('\n')).not.toMatch(/recent launches leave/);

      const real = await api.post(path, body);
      expect(real.status).toBe(201);
      const ids = real.body.machines.map((m: any) => m.id as string);
      await eventually(
        () => api.get(`/v1/models/${model}/status`),
        (s) => ids.every((id: string) => s.body.machines[id]?.status === 'running'),
        SLOW,
        1000,
      );
      // the record is written after each RunInstances answers, not awaited by the launch
      const record = (await eventually(
        () => records.read(stack.region),
        (r) => r !== undefined && r.version >= 1,
        60_000,
        200,
      ))!;
      const batches = await sentBatches(model);
      const budget: LaunchBudget = {
        requests: { burst: 5, perSecond: 2 },
        instances: INSTANCE_BUCKET,
        maxPerCall: 1000,
        batchWaitSeconds: 1,
        roundTripSeconds: 2,
      };
      // a call's instances are counted by the next reservation, or by a write of their own
      // 2 s after the last call (state/launch-record.ts countLater): wait until all 3 are
      const settled = await eventually(
        () => records.read(stack.region),
        (r) => r !== undefined && bucketsLeft(r, budget, Date.now()).instances < 1.5,
        60_000,
        200,
      );
      // per RunInstances its reservation (booked again, at most 3 times, when the call left more
      // than 250 ms late on a busy machine) and at most one write counting its instances when no
      // later reservation did: bounded per call, whatever the number of machines in it
      expect(settled!.version).toBeGreaterThanOrEqual(batches);
      expect(settled!.version).toBeLessThanOrEqual(5 * batches);
      expect(batches).toBeLessThanOrEqual(3);
      expect(record.instances).toMatchObject(INSTANCE_BUCKET);
      expect(settled!.instances).toMatchObject(INSTANCE_BUCKET);
      // the request bucket as the workers book it, shared (activities/launch-batcher.ts): a token
      // and a tenth of EC2's 5 + 2/s held back as slack; plans count from it as recorded
      expect(settled!.requests).toMatchObject({ burst: 4, perSecond: 1.8 });

      const after = await timedPlan(api, path, body);
      expect(batchesOf(after.plan)).toHaveLength(calls);
      // the arithmetic, from the record, at the moments the plan was asked and answered
      const at = (t: number) =>
        estimateLaunch(batchesOf(after.plan), budget, bucketsLeft(settled, budget, t));
      const earliest = at(after.askedAt);
      const latest = at(after.answeredAt);
      expect(after.plan.estimatedSeconds).toBeLessThanOrEqual(earliest.seconds);
      expect(after.plan.estimatedSeconds).toBeGreaterThanOrEqual(latest.seconds);
      // three instances taken from four at 0.001 a second: ~1 + 0.001 per second back
      const left = bucketsLeft(settled, budget, after.answeredAt).instances;
      expect(left).toBeLessThan(4);
      expect(after.plan.estimatedSeconds).toBeGreaterThan(before.plan.estimatedSeconds);
      expect(after.plan.estimatedSeconds).toBeGreaterThanOrEqual(
        Math.floor(1 + (3 - left) / INSTANCE_BUCKET.perSecond + 2),
      );
      // the note's count, as at some moment between asking and answering
      const leftAsked = Math.floor(bucketsLeft(settled, budget, after.askedAt).instances);
      const note = (n: number) =>
        `this deployment's recent launches leave ${n} of the 4 instances EC2 launches at once; they come back at 0.001 a second`;
      expect(after.plan.notes).toEqual(
        expect.arrayContaining([
          leftAsked === Math.floor(left)
            ? note(leftAsked)
            : expect.stringMatching(
                new RegExp(
                  `^this deployment's recent launches leave (${leftAsked}|${Math.floor(left)}) of the 4 `,
                ),
              ),
        ]),
      );
      process.stderr.write(
        `[plans-budget] ${batches} RunInstances for 3 machines → ${settled!.version} record writes; ` +
          `plan before ${before.plan.estimatedSeconds} s, after ${after.plan.estimatedSeconds} s ` +
          `(${left.toFixed(2)} instances left; expected ${latest.seconds}–${earliest.seconds} s)\n`,
      );
    },
    SLOW + 120_000,
  );

  it('two writers recording at once each count (optimistic concurrency on the one item)', async () => {
    const name = `${deployment}-race`;
    const a = new LaunchRecordStore(ddb, stack.tableName, name);
    const b = new LaunchRecordStore(ddb, stack.tableName, name);
    const buckets = {
      requests: { burst: 100, perSecond: 2 },
      instances: { burst: 1000, perSecond: 2 },
    };
    const atMs = Date.now();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).record(stack.region, buckets, { atMs, calls: 1, instances: 10 }),
      ),
    );
    const r = await a.read(stack.region);
    expect(r!.version).toBe(20);
    // 200 instances and 20 calls taken at one moment from full buckets
    expect(r!.instances.fullAt).toBe(atMs + (200 / 2) * 1000);
    expect(r!.requests.fullAt).toBe(atMs + (20 / 2) * 1000);
  });
});

describe('a price list that does not answer', () => {
  it('the plan answers after the price deadline with null prices and a note, every time, never a 500', async () => {
    const model = await newModel(noPrices, 'plannoprice');
    const path = `/v1/models/${model}/machines`;
    const check = (plan: any) => {
      expect(plan.machines).toHaveLength(2);
      for (const m of plan.machines) {
        expect(m.pricePerHour).toBeNull();
        expect(m.instanceType).toEqual(expect.any(String));
        expect(m.zone).toEqual(expect.any(String));
      }
      expect(plan.pricePerHour).toBeNull();
      expect(plan.pricePerMonth).toBeNull();
      expect(plan.notes).toContain(priceDeadlineNote(PRICE_DEADLINE_MS));
    };
    // cold: the catalogue and zones are read too (the rest of the plan's time)
    const cold = await timedPlan(noPrices, path, { count: 2 });
    check(cold.plan);
    // warm catalogue, price list still silent: the deadline and little more
    const warm = await timedPlan(noPrices, path, { count: 2 });
    check(warm.plan);
    const coldMs = cold.answeredAt - cold.askedAt;
    const warmMs = warm.answeredAt - warm.askedAt;
    process.stderr.write(
      `[plans-budget] price list silent: cold plan ${coldMs} ms, warm plan ${warmMs} ms (deadline ${PRICE_DEADLINE_MS} ms)\n`,
    );
    expect(warmMs).toBeGreaterThanOrEqual(PRICE_DEADLINE_MS - 50);
    // the deadline plus a warm plan's own work, on a busy machine
    expect(warmMs).toBeLessThan(PRICE_DEADLINE_MS + 10_000);
  }, 120_000);
});
