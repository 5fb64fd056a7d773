import { MockActivityEnvironment } from '@temporalio/testing';
import { RecentReads } from '../../../activities/recent-reads';
import { SingleFlight } from '../../../activities/single-flight';
import type { MachineRecord } from '../../../state/types';
import { pendingMachine } from '../../support/machines';

const machine = (id: string, constraints = ''): MachineRecord =>
  pendingMachine('demo', id, {
    base: 'ubuntu@22.04',
    constraints,
    createdAt: '2026-11-23T00:00:00.000Z',
    updatedAt: '2026-11-23T00:00:00.000Z',
  });

/** Runs `fn` as an activity of the workflow run `runId`. */
function inRun<T>(runId: string, fn: () => T): Promise<T> {
  const env = new MockActivityEnvironment({
    workflowExecution: { workflowId: 'machine:demo:0', runId },
  });
  return env.run(async () => Promise.resolve(fn()));
}

describe('RecentReads', () => {
  test("serves the same run's next step once, with the record it read", async () => {
    const reads = new RecentReads();
    const ref = { model: 'demo', machineId: '0' };
    await inRun('run-1', () => reads.remember(ref, machine('0', 'mem=4G')));
    expect(await inRun('run-1', () => reads.take(ref)?.constraints)).toBe('mem=4G');
    // taken: the next step reads DynamoDB again
    expect(await inRun('run-1', () => reads.take(ref))).toBeUndefined();
  });

  test('never serves another run, so a machine recorded again under the same id reads afresh', async () => {
    const reads = new RecentReads();
    const ref = { model: 'demo', machineId: '0' };
    await inRun('old-run', () => reads.remember(ref, machine('0', 'mem=4G')));
    expect(await inRun('new-run', () => reads.take(ref))).toBeUndefined();
    // nor another machine of the same run
    expect(
      await inRun('old-run', () => reads.take({ model: 'demo', machineId: '1' })),
    ).toBeUndefined();
  });

  test('a read older than the TTL is not served', async () => {
    let now = 1_000;
    const reads = new RecentReads(30_000, () => now);
    const ref = { model: 'demo', machineId: '0' };
    await inRun('run-1', () => reads.remember(ref, machine('0')));
    now += 30_001;
    expect(await inRun('run-1', () => reads.take(ref))).toBeUndefined();
  });

  test('outside an activity nothing is kept', () => {
    const reads = new RecentReads();
    reads.remember({ model: 'demo', machineId: '0' }, machine('0'));
    expect(reads.size).toBe(0);
    expect(reads.take({ model: 'demo', machineId: '0' })).toBeUndefined();
  });
});

describe('SingleFlight', () => {
  test('concurrent reads of one key share one call; later reads call again', async () => {
    const flights = new SingleFlight<string>();
    let calls = 0;
    let release!: (v: string) => void;
    const load = () => {
      calls += 1;
      return new Promise<string>((resolve) => {
        release = resolve;
      });
    };
    const a = flights.read('demo', load);
    const b = flights.read('demo', load);
    expect(calls).toBe(1);
    release('model v1');
    expect(await Promise.all([a, b])).toEqual(['model v1', 'model v1']);
    expect(flights.pending).toBe(0);
    const c = flights.read('demo', () => Promise.resolve('model v2'));
    expect(await c).toBe('model v2');
  });

  test('a failed read fails every sharer and is not kept', async () => {
    const flights = new SingleFlight<string>();
    const failing = () => Promise.reject(new Error('ProvisionedThroughputExceeded'));
    const both = Promise.allSettled([flights.read('demo', failing), flights.read('demo', failing)]);
    const settled = await both;
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(flights.pending).toBe(0);
    expect(await flights.read('demo', () => Promise.resolve('ok'))).toBe('ok');
  });
});
