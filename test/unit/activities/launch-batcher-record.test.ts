import {
  LaunchBatcher,
  MAX_RESERVED_WAIT_MS,
  RESERVE_TIMEOUT_MS,
} from '../../../activities/launch-batcher';
import type { ActivityDeps } from '../../../activities/deps';
import type { CapacityMemory } from '../../../activities/capacity-memory';
import type { Ec2Instance } from '../../../ec2/instances';
import type { LaunchBatchCall } from '../../../state/launch-batches';
import { ReservationRefused, type ReserveOptions } from '../../../state/launch-record';

interface Recorded {
  region: string;
  calls: number;
  instances: number;
}

const CALL: LaunchBatchCall = {
  region: 'us-east-1',
  zone: 'us-east-1a',
  imageId: 'ami-1',
  instanceType: 'm5.large',
  rootDiskGiB: 8,
  tags: [],
  clientToken: 'token',
};

interface Shared {
  /** What `reserve` answers: a send time, or a refusal. */
  reserve: (opts: ReserveOptions) => Promise<number>;
  /** Instances handed to `countLater`. */
  later: Array<{ region: string; atMs: number; instances: number }>;
}

function batcher(
  send: () => Promise<unknown>,
  shared?: Shared,
): { recorded: Recorded[]; replay: Replay; fallbacks: () => number } {
  const recorded: Recorded[] = [];
  const deps = {
    ec2ForRegion: () => ({ ec2: { send } }),
    tuning: {
      launchBurst: 5,
      launchRatePerSecond: 2,
      launchBatchIdleMs: 10,
      launchBatchMaxMs: 100,
      launchSharedPacing: shared !== undefined,
    },
    launchRecord: {
      record: (region: string, _buckets: unknown, send: { calls: number; instances: number }) => {
        recorded.push({ region, calls: send.calls, instances: send.instances });
        return Promise.resolve();
      },
      reserve: (_region: string, _buckets: unknown, opts: ReserveOptions) => shared!.reserve(opts),
      countLater: (region: string, _b: unknown, l: { atMs: number; instances: number }) => {
        if (l.instances > 0) shared!.later.push({ region, ...l });
      },
    },
  } as unknown as ActivityDeps;
  const b = new LaunchBatcher(deps, {} as CapacityMemory);
  const inner = b as unknown as { replay: Replay };
  return {
    recorded,
    replay: (id, call, count) => inner.replay(id, call, count),
    fallbacks: () => b.localFallbacks,
  };
}

type Replay = (batchId: string, call: LaunchBatchCall, count: number) => Promise<Ec2Instance[]>;

describe('LaunchBatcher: a repeated batch (recover → replay) is recorded for plans', () => {
  it('records the repeat and the instances EC2 says it launched', async () => {
    const { recorded, replay } = batcher(() =>
      Promise.resolve({
        Instances: [
          { InstanceId: 'i-1', AmiLaunchIndex: 0 },
          { InstanceId: 'i-2', AmiLaunchIndex: 1 },
        ],
      }),
    );
    await expect(replay('b1', CALL, 2)).resolves.toHaveLength(2);
    expect(recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 2 }]);
  });

  it('records a repeat that fails, with or without an answer from EC2, as a call with no instances', async () => {
    const noStatus = batcher(() =>
      Promise.reject(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' })),
    );
    await expect(noStatus.replay('b2', CALL, 3)).rejects.toThrow('socket hang up');
    expect(noStatus.recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 0 }]);
    const answered = batcher(() =>
      Promise.reject(
        Object.assign(new Error('throttled'), {
          name: 'RequestLimitExceeded',
          $metadata: { httpStatusCode: 503 },
        }),
      ),
    );
    await expect(answered.replay('b3', CALL, 3)).rejects.toThrow('throttled');
    expect(answered.recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 0 }]);
  });

  it('members retried together share one repeat, recorded once', async () => {
    let sends = 0;
    const { recorded, replay } = batcher(() => {
      sends += 1;
      return Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
    });
    await Promise.all([replay('b4', CALL, 1), replay('b4', CALL, 1)]);
    expect(sends).toBe(1);
    expect(recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 1 }]);
  });
});

describe('LaunchBatcher: RunInstances paced in the shared launch record', () => {
  const twoInstances = () =>
    Promise.resolve({
      Instances: [
        { InstanceId: 'i-1', AmiLaunchIndex: 0 },
        { InstanceId: 'i-2', AmiLaunchIndex: 1 },
      ],
    });

  it('waits until the reserved send time, and counts the instances with a later write (no second call counted)', async () => {
    let sentAt = 0;
    const reservedAt = Date.now() + 400;
    const shared: Shared = { reserve: () => Promise.resolve(reservedAt), later: [] };
    const { recorded, replay, fallbacks } = batcher(() => {
      sentAt = Date.now();
      return twoInstances();
    }, shared);
    await expect(replay('s1', CALL, 2)).resolves.toHaveLength(2);
    // waited for the reserved time (400 ms off; a timer and the wall clock may differ by a few ms)
    expect(sentAt).toBeGreaterThanOrEqual(reservedAt - 20);
    expect(recorded).toEqual([]); // the reservation counted the call: no post-send record of it
    // counted at the batcher's send time, taken just before EC2's client is called
    expect(shared.later).toEqual([
      { region: 'us-east-1', atMs: expect.any(Number) as number, instances: 2 },
    ]);
    expect(Math.abs(shared.later[0]!.atMs - sentAt)).toBeLessThanOrEqual(50);
    expect(fallbacks()).toBe(0);
  });

  it('a reservation DynamoDB refuses: the call still goes out, paced on the local bucket, recorded whole', async () => {
    const refused = Object.assign(new Error('Requested resource not found'), {
      name: 'ResourceNotFoundException',
    });
    const shared: Shared = { reserve: () => Promise.reject(refused), later: [] };
    let sends = 0;
    const { recorded, replay, fallbacks } = batcher(() => {
      sends += 1;
      return twoInstances();
    }, shared);
    await expect(replay('s2', CALL, 2)).resolves.toHaveLength(2);
    expect(sends).toBe(1);
    expect(fallbacks()).toBe(1);
    expect(shared.later).toEqual([]);
    expect(recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 2 }]);
  });

  it('a reservation that hangs: paced locally once RESERVE_TIMEOUT_MS has passed', async () => {
    const shared: Shared = { reserve: () => new Promise<number>(() => undefined), later: [] };
    const { recorded, replay, fallbacks } = batcher(twoInstances, shared);
    const started = Date.now();
    await expect(replay('s3', CALL, 2)).resolves.toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(RESERVE_TIMEOUT_MS - 5);
    expect(fallbacks()).toBe(1);
    expect(recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 2 }]);
  });

  it('a turn absurdly far off (a clock far ahead) is refused by the record, unwritten: paced locally, counted once', async () => {
    const asked: ReserveOptions[] = [];
    const shared: Shared = {
      // as the store does: the turn is computed, found too far, and nothing is written
      reserve: (opts) => {
        asked.push(opts);
        const turn = Date.now() + MAX_RESERVED_WAIT_MS + 60_000;
        return turn - Date.now() > opts.maxWaitMs!
          ? Promise.reject(new ReservationRefused('the next turn is 120 s away'))
          : Promise.resolve(turn);
      },
      later: [],
    };
    const started = Date.now();
    const { recorded, replay, fallbacks } = batcher(twoInstances, shared);
    await expect(replay('s4', CALL, 2)).resolves.toHaveLength(2);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.maxWaitMs).toBe(MAX_RESERVED_WAIT_MS);
    // the caller's deadline is its reservation timeout
    expect(asked[0]!.deadlineMs! - started).toBeGreaterThanOrEqual(RESERVE_TIMEOUT_MS - 5);
    expect(asked[0]!.deadlineMs! - started).toBeLessThanOrEqual(RESERVE_TIMEOUT_MS + 5_000);
    expect(fallbacks()).toBe(1);
    expect(shared.later).toEqual([]);
    expect(recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 2 }]);
  });
});
