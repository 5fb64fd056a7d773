import {
  LaunchBatcher,
  KEY_SPACING_MAX_WAITS,
  KEY_SPACING_ROUNDS,
  MAX_REBOOKS,
  MAX_RESERVED_WAIT_MS,
  RESERVE_TIMEOUT_MS,
  SEND_MARGIN_MS,
} from '../../../activities/launch-batcher';
import type { ActivityDeps } from '../../../activities/deps';
import { EC2_MAX_ATTEMPTS } from '../../../ec2/client';
import type { CapacityMemory } from '../../../activities/capacity-memory';
import type { Ec2Instance } from '../../../ec2/instances';
import type { LaunchBatchCall } from '../../../state/launch-batches';
import { ReservationRefused, type ReserveOptions } from '../../../state/launch-record';
import type { KeySpacing } from '../../../core/launch-estimate';
import { M5_LARGE_PLAN } from '../../support/launch-plan';

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
  launchThrottleBackoffMs = 20,
): {
  recorded: Recorded[];
  replay: Replay;
  fallbacks: () => number;
  throttled: () => number;
  stale: () => number;
} {
  const recorded: Recorded[] = [];
  const deps = {
    ec2ForRegion: () => ({ ec2: { send } }),
    tuning: {
      launchBurst: 5,
      launchRatePerSecond: 2,
      launchBatchIdleMs: 10,
      launchBatchMaxMs: 100,
      launchSharedPacing: shared !== undefined,
      launchThrottleBackoffMs,
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
    throttled: () => b.throttledAttempts,
    stale: () => b.staleTurns,
  };
}

type Replay = (batchId: string, call: LaunchBatchCall, count: number) => Promise<Ec2Instance[]>;

/** The launch of one machine of the plan every paced-batch test uses. */
function launchOf(b: LaunchBatcher) {
  return (machineId: string, zone = 'us-east-1a', liveUntil?: number) =>
    b.launch({
      model: 'm',
      machineId,
      zone,
      tokenSeed: `seed-${machineId}`,
      ...(liveUntil !== undefined ? { liveUntil } : {}),
      plan: M5_LARGE_PLAN,
    });
}

/**
 * A shared-paced batcher over fakes: marks and commits that succeed, an EC2
 * that launches one instance, batches of 10-100 ms at 5 + 2/s, unless the
 * test says otherwise; the launch record is the test's.
 */
function pacedBatcher(parts: {
  mark?: (model: string, machineId: string) => Promise<{ marked: boolean }>;
  commit?: () => Promise<boolean>;
  send?: (cmd: { input: { MaxCount: number } }) => Promise<unknown>;
  tuning?: Record<string, number>;
  launchRecord: Record<string, unknown>;
}): LaunchBatcher {
  const deps = {
    store: {
      batches: {
        mark: parts.mark ?? (() => Promise.resolve({ marked: true })),
        commit: parts.commit ?? (() => Promise.resolve(true)),
      },
    },
    ec2ForRegion: () => ({
      ec2: {
        send:
          parts.send ??
          (() => Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] })),
      },
    }),
    tuning: {
      launchBurst: 5,
      launchRatePerSecond: 2,
      launchBatchIdleMs: 10,
      launchBatchMaxMs: 100,
      capacityMemoryMs: 0,
      launchSharedPacing: true,
      ...parts.tuning,
    },
    deployment: 'test',
    launchRecord: {
      countLater: () => undefined,
      record: () => Promise.resolve(),
      ...parts.launchRecord,
    },
  } as unknown as ActivityDeps;
  return new LaunchBatcher(deps, { forget: () => undefined } as unknown as CapacityMemory);
}

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
        Object.assign(new Error('Invalid id: ami-1'), {
          name: 'InvalidAMIID.NotFound',
          $metadata: { httpStatusCode: 400 },
        }),
      ),
    );
    await expect(answered.replay('b3', CALL, 3)).rejects.toThrow('Invalid id: ami-1');
    expect(answered.recorded).toEqual([{ region: 'us-east-1', calls: 1, instances: 0 }]);
  });

  it('a throttled call is repeated on a fresh turn (each attempt counted as a call), at most EC2_MAX_ATTEMPTS times', async () => {
    const throttle = () =>
      Promise.reject(
        Object.assign(new Error('Request limit exceeded.'), {
          name: 'RequestLimitExceeded',
          $metadata: { httpStatusCode: 503 },
        }),
      );
    let sends = 0;
    const twice = batcher(() => {
      sends += 1;
      return sends <= 2
        ? throttle()
        : Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
    });
    await expect(twice.replay('b5', CALL, 1)).resolves.toHaveLength(1);
    expect(sends).toBe(3);
    expect(twice.throttled()).toBe(2);
    expect(twice.recorded).toEqual([
      { region: 'us-east-1', calls: 1, instances: 0 },
      { region: 'us-east-1', calls: 1, instances: 0 },
      { region: 'us-east-1', calls: 1, instances: 1 },
    ]);
    let tries = 0;
    const always = batcher(() => {
      tries += 1;
      return throttle();
    });
    await expect(always.replay('b6', CALL, 1)).rejects.toThrow('Request limit exceeded.');
    expect(tries).toBe(EC2_MAX_ATTEMPTS);
    expect(always.throttled()).toBe(EC2_MAX_ATTEMPTS - 1);
    expect(always.recorded).toHaveLength(EC2_MAX_ATTEMPTS);
  }, 20_000);

  it('with shared pacing, each repeat of a throttled call books a turn of its own first', async () => {
    const booked: number[] = [];
    const shared: Shared = {
      reserve: () => {
        booked.push(Date.now());
        return Promise.resolve(Date.now());
      },
      later: [],
    };
    let sends = 0;
    const { replay, throttled, recorded } = batcher(() => {
      sends += 1;
      return sends === 1
        ? Promise.reject(
            Object.assign(new Error('Request limit exceeded.'), {
              name: 'RequestLimitExceeded',
              $metadata: { httpStatusCode: 503 },
            }),
          )
        : Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
    }, shared);
    await expect(replay('b7', CALL, 1)).resolves.toHaveLength(1);
    expect(sends).toBe(2);
    expect(booked).toHaveLength(2);
    expect(throttled()).toBe(1);
    expect(recorded).toEqual([]); // both attempts counted by their reservations
    expect(shared.later).toEqual([
      { region: 'us-east-1', atMs: expect.any(Number) as number, instances: 1 },
    ]);
  });

  it('a throttle empties the local bucket: the repeat waits for a refilled token (2/s), not one of the burst left', async () => {
    const sentAt: number[] = [];
    const { replay, throttled } = batcher(() => {
      sentAt.push(Date.now());
      return sentAt.length === 1
        ? Promise.reject(
            Object.assign(new Error('Request limit exceeded.'), {
              name: 'RequestLimitExceeded',
              $metadata: { httpStatusCode: 503 },
            }),
          )
        : Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
    });
    await expect(replay('b8', CALL, 1)).resolves.toHaveLength(1);
    expect(throttled()).toBe(1);
    // 4 of the burst's 5 tokens were left; emptied, the next one is 500 ms away (a timer may fire a little early)
    expect(sentAt[1]! - sentAt[0]!).toBeGreaterThanOrEqual(480);
  });

  it('each shared repeat of a throttled call is booked after a backoff that doubles (0.2 s, then 0.4 s here)', async () => {
    const booked: number[] = [];
    const sentAt: number[] = [];
    const shared: Shared = {
      reserve: () => {
        booked.push(Date.now());
        return Promise.resolve(Date.now());
      },
      later: [],
    };
    const { replay, throttled } = batcher(
      () => {
        sentAt.push(Date.now());
        return sentAt.length <= 2
          ? Promise.reject(
              Object.assign(new Error('Request limit exceeded.'), {
                name: 'RequestLimitExceeded',
                $metadata: { httpStatusCode: 503 },
              }),
            )
          : Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
      },
      shared,
      200,
    );
    await expect(replay('b9', CALL, 1)).resolves.toHaveLength(1);
    expect(throttled()).toBe(2);
    expect(booked).toHaveLength(3);
    expect(booked[1]! - sentAt[0]!).toBeGreaterThanOrEqual(190);
    expect(booked[2]! - sentAt[1]!).toBeGreaterThanOrEqual(390);
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
    let reserves = 0;
    const shared: Shared = {
      reserve: () => {
        reserves += 1;
        return Promise.reject(refused);
      },
      later: [],
    };
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
    // the breaker: for RECORD_BREAKER_MS the next call paces locally without asking the record
    await expect(replay('s2b', CALL, 2)).resolves.toHaveLength(2);
    expect(reserves).toBe(1);
    expect(fallbacks()).toBe(2);
    expect(recorded).toHaveLength(2);
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

describe('LaunchBatcher: a shared turn passed by more than LATE_TURN_MS is booked again', () => {
  it('a call that could not go on its turn (a stalled event loop) takes another before it is sent', async () => {
    const turns = [Date.now() - 1_000, Date.now() - 10_000];
    const booked: number[] = [];
    const shared: Shared = {
      reserve: () => {
        booked.push(Date.now());
        // the first two turns are stale by the time they are answered; the third is now
        return Promise.resolve(turns[booked.length - 1] ?? Date.now());
      },
      later: [],
    };
    let sends = 0;
    const b = batcher(() => {
      sends += 1;
      return Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
    }, shared);
    await expect(b.replay('l1', CALL, 1)).resolves.toHaveLength(1);
    expect(booked).toHaveLength(3);
    expect(sends).toBe(1);
    expect(b.stale()).toBe(2);
  });

  it('goes out after MAX_REBOOKS turns booked again, however late (the record is not given up on)', async () => {
    let booked = 0;
    const shared: Shared = {
      reserve: () => {
        booked += 1;
        return Promise.resolve(Date.now() - 5_000);
      },
      later: [],
    };
    const b = batcher(
      () => Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] }),
      shared,
    );
    await expect(b.replay('l2', CALL, 1)).resolves.toHaveLength(1);
    expect(booked).toBe(1 + MAX_REBOOKS);
    expect(b.stale()).toBe(MAX_REBOOKS);
    expect(b.fallbacks()).toBe(0);
  });
});

describe('LaunchBatcher: a batch books its shared turn once it is recorded, just before its call', () => {
  it('waits at the gate for the turn the record predicts (nothing booked), then marks, commits, books and calls', async () => {
    const events: string[] = [];
    const predictedAt = Date.now() + 300;
    let gatePassedAt = 0;
    const b = pacedBatcher({
      mark: () => {
        gatePassedAt ||= Date.now();
        events.push('mark');
        return Promise.resolve({ marked: true });
      },
      commit: () => {
        events.push('commit');
        return Promise.resolve(true);
      },
      send: () => {
        events.push('RunInstances');
        return Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
      },
      launchRecord: {
        predictTurn: (
          _region: string,
          buckets: { requests: { burst: number; perSecond: number } },
        ) => {
          events.push(`predict ${buckets.requests.burst}+${buckets.requests.perSecond}/s`);
          return Promise.resolve({ at: predictedAt });
        },
        reserve: (_region: string, buckets: { requests: { burst: number; perSecond: number } }) => {
          events.push(`reserve ${buckets.requests.burst}+${buckets.requests.perSecond}/s`);
          return Promise.resolve(Date.now());
        },
      },
    });
    const started = await launchOf(b)('1');
    expect(started.instanceId).toBe('i-1');
    // booked with slack: a burst one below EC2's 5, a rate 10 % under its 2/s
    expect(events).toEqual([
      'predict 4+1.8/s',
      'mark',
      'commit',
      'reserve 4+1.8/s',
      'RunInstances',
    ]);
    // the batch waited for the predicted turn before it was fixed (a timer may fire a little early)
    expect(gatePassedAt).toBeGreaterThanOrEqual(predictedAt - 20);
    expect(b.localFallbacks).toBe(0);
    expect(b.lateness.calls).toBe(1);
  });
});

describe("LaunchBatcher: the gate counts this worker's batches that passed it and have not booked yet", () => {
  it('a second batch waits one turn (at 90 % of the rate) behind a first one still committing', async () => {
    const markedAt = new Map<string, number>();
    let releaseCommit!: () => void;
    const commitHeld = new Promise<void>((r) => (releaseCommit = r));
    let commits = 0;
    const b = pacedBatcher({
      mark: (_m, machineId) => {
        markedAt.set(machineId, Date.now());
        return Promise.resolve({ marked: true });
      },
      commit: async () => {
        commits += 1;
        if (commits === 1) await commitHeld;
        return true;
      },
      launchRecord: {
        // the record shows a token free now: it does not know the first batch's coming turn
        predictTurn: () => Promise.resolve({ at: Date.now() }),
        reserve: () => Promise.resolve(Date.now()),
      },
    });
    const request = launchOf(b);
    const first = request('1', 'us-east-1a');
    while (commits === 0) await new Promise((r) => setTimeout(r, 5));
    const secondAsked = Date.now();
    const second = request('2', 'us-east-1b');
    // one turn at 1.8/s is 556 ms: the second batch is marked no sooner
    await new Promise((r) => setTimeout(r, 300));
    expect(markedAt.has('2')).toBe(false);
    releaseCommit();
    await Promise.all([first, second]);
    expect(markedAt.get('2')! - secondAsked).toBeGreaterThanOrEqual(540);
  });

  it('a batch counts as booked once its reservation is answered, not after the wait for its turn', async () => {
    const markedAt = new Map<string, number>();
    let firstTurn = 0;
    let reserves = 0;
    const b = pacedBatcher({
      mark: (_m, machineId) => {
        markedAt.set(machineId, Date.now());
        return Promise.resolve({ marked: true });
      },
      // one turn at 90 % of 0.5/s is 2.2 s: the difference a double count makes
      tuning: { launchRatePerSecond: 0.5 },
      launchRecord: {
        // once the first turn is booked the record shows it: the next turn is 200 ms after it
        predictTurn: () => Promise.resolve({ at: firstTurn === 0 ? Date.now() : firstTurn + 200 }),
        reserve: () => {
          reserves += 1;
          if (reserves === 1) firstTurn = Date.now() + 1500;
          return Promise.resolve(reserves === 1 ? firstTurn : Date.now());
        },
      },
    });
    const request = launchOf(b);
    const first = request('1', 'us-east-1a');
    // the first batch has its turn booked and is waiting for it
    while (reserves === 0) await new Promise((r) => setTimeout(r, 5));
    const second = request('2', 'us-east-1b');
    await Promise.all([first, second]);
    // the second batch waits for the predicted turn only: counted as unbooked as well, the first
    // batch would add a turn (2.2 s) on top
    const waited = markedAt.get('2')! - (firstTurn + 200);
    expect(waited).toBeGreaterThanOrEqual(-20);
    expect(waited).toBeLessThan(1500);
  });
});

describe('LaunchBatcher: a batch dropped at the gate (every try withdrawn there)', () => {
  it('with shared pacing, gives up its place among the batches not yet booked: the next batch waits no turn for it', async () => {
    const marked: string[] = [];
    const markedAt = new Map<string, number>();
    let predicts = 0;
    let firstPredictAt = 0;
    const b = pacedBatcher({
      mark: (_m, machineId) => {
        marked.push(machineId);
        markedAt.set(machineId, Date.now());
        return Promise.resolve({ marked: true });
      },
      // a turn at 90 % of 0.5/s is 2.2 s: what a place left counted would add to the next batch
      tuning: { launchRatePerSecond: 0.5 },
      launchRecord: {
        // the first batch's turn is 1 s off (it waits at the gate); later ones are free now
        predictTurn: () => {
          predicts += 1;
          if (predicts === 1) firstPredictAt = Date.now();
          return Promise.resolve({ at: predicts === 1 ? Date.now() + 1000 : Date.now() });
        },
        reserve: () => Promise.resolve(Date.now()),
      },
    });
    // the drop itself, on this batcher only: waited for below, since a timer late on a busy
    // machine would otherwise let machine 2's batch through the gate before it, with nothing
    // given back yet and no wait to show it
    const ungate = jest.spyOn(
      b as unknown as { ungate(region: string, gated: unknown): void },
      'ungate',
    );
    const ends = new AbortController();
    const withdrawn = b
      .launch({
        model: 'm',
        machineId: '1',
        zone: 'us-east-1a',
        tokenSeed: 'seed-1',
        plan: M5_LARGE_PLAN,
        withdrawBy: ends.signal,
      })
      .catch((err: unknown) => err);
    while (predicts === 0) await new Promise((r) => setTimeout(r, 5));
    ends.abort();
    expect(await withdrawn).toMatchObject({ name: 'TryEnded' });
    // the first batch's gate lets it through after its 1 s turn, and the batch is dropped
    const dropBy = Date.now() + 30_000;
    while (ungate.mock.calls.length === 0 && Date.now() < dropBy) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(ungate.mock.calls).toEqual([['us-east-1', 'predicted']]);
    expect(Date.now() - firstPredictAt).toBeGreaterThanOrEqual(1000 - 20);
    expect(marked).toEqual([]);
    const askedAt = Date.now();
    await expect(launchOf(b)('2', 'us-east-1b')).resolves.toMatchObject({ instanceId: 'i-1' });
    expect(marked).toEqual(['2']);
    expect(markedAt.get('2')! - askedAt).toBeLessThan(1500);
    expect(b.lateness.calls).toBe(1);
  });
});

describe('LaunchBatcher: a launch record that cannot be read paces at the gate, locally', () => {
  it('a failed predict takes a local token at the gate (the batch grows while it waits), and the breaker skips the record after it', async () => {
    const events: string[] = [];
    const sizes: number[] = [];
    let predicts = 0;
    const b = pacedBatcher({
      send: (cmd) => {
        sizes.push(cmd.input.MaxCount);
        return Promise.resolve({
          Instances: Array.from({ length: cmd.input.MaxCount }, (_, i) => ({
            InstanceId: `i-${sizes.length}-${i}`,
            AmiLaunchIndex: i,
          })),
        });
      },
      // one token: the second batch waits 500 ms for the next, and grows meanwhile
      tuning: { launchBurst: 1 },
      launchRecord: {
        predictTurn: () => {
          predicts += 1;
          events.push('predict');
          return Promise.reject(
            Object.assign(new Error('Requested resource not found'), {
              name: 'ResourceNotFoundException',
            }),
          );
        },
        reserve: () => {
          events.push('reserve');
          return Promise.resolve(Date.now());
        },
        record: () => {
          events.push('record');
          return Promise.resolve();
        },
      },
    });
    const request = launchOf(b);
    const first = request('1');
    await new Promise((r) => setTimeout(r, 50));
    // four machines 60 ms apart, each past the coalescer's idle and max windows without a gate
    const later: Array<Promise<unknown>> = [];
    for (const id of ['2', '3', '4', '5']) {
      later.push(request(id));
      await new Promise((r) => setTimeout(r, 60));
    }
    await Promise.all([first, ...later]);
    // the first batch read the record once, failed, and paced locally; the breaker then kept
    // every later batch off the record (no read, no reservation)
    expect(predicts).toBe(1);
    expect(events.filter((e) => e === 'reserve')).toEqual([]);
    // the four later machines waited for the next token together: one call, not four
    expect(sizes).toEqual([1, 4]);
    expect(events.filter((e) => e === 'record')).toHaveLength(2);
    expect(b.localFallbacks).toBe(2);
  });
});

describe("LaunchBatcher: the wait after the commit ends before the members' tries do", () => {
  it("a turn past the first member's liveUntil − SEND_MARGIN_MS is not booked: the batch goes out at that time, counted locally", async () => {
    const asked: ReserveOptions[] = [];
    const recorded: Array<{ calls: number; instances: number }> = [];
    let sentAt = 0;
    const b = pacedBatcher({
      send: () => {
        sentAt = Date.now();
        return Promise.resolve({ Instances: [{ InstanceId: 'i-1', AmiLaunchIndex: 0 }] });
      },
      launchRecord: {
        predictTurn: () => Promise.resolve({ at: Date.now() }),
        // the record's next turn is 20 s away; as the store does, a turn past maxWaitMs is refused
        reserve: (_r: string, _b: unknown, opts: ReserveOptions) => {
          asked.push(opts);
          return 20_000 > opts.maxWaitMs!
            ? Promise.reject(new ReservationRefused('the next turn is 20 s away'))
            : Promise.resolve(Date.now() + 20_000);
        },
        record: (_r: string, _b: unknown, send: { calls: number; instances: number }) => {
          recorded.push({ calls: send.calls, instances: send.instances });
          return Promise.resolve();
        },
      },
    });
    const sendBy = Date.now() + 800;
    const started = await launchOf(b)('1', 'us-east-1a', sendBy + SEND_MARGIN_MS);
    expect(started.instanceId).toBe('i-1');
    // asked for a turn no later than the members' deadline, refused (nothing booked) ...
    expect(asked).toHaveLength(1);
    expect(asked[0]!.maxWaitMs).toBeLessThanOrEqual(800);
    // ... so the call went out at that deadline, not 20 s later (a timer may fire a little early)
    expect(sentAt).toBeGreaterThanOrEqual(sendBy - 20);
    expect(sentAt - sendBy).toBeLessThan(2_000);
    expect(b.sentAtDeadline).toBe(1);
    // not a record failure: no fallback counted, the call recorded whole
    expect(b.localFallbacks).toBe(0);
    expect(recorded).toEqual([{ calls: 1, instances: 1 }]);
  }, 30_000);
});

describe("LaunchBatcher: a batch waits for another worker's call of its key (key spacing), growing meanwhile", () => {
  /** A machine launching instances per MaxCount, with the sizes of its calls. */
  function sized() {
    const sizes: number[] = [];
    const send = (cmd: { input: { MaxCount: number } }) => {
      sizes.push(cmd.input.MaxCount);
      return Promise.resolve({
        Instances: Array.from({ length: cmd.input.MaxCount }, (_, i) => ({
          InstanceId: `i-${sizes.length}-${i}`,
          AmiLaunchIndex: i,
        })),
      });
    };
    return { sizes, send };
  }

  it('waits until the spacing the record predicts, asks again, and books its own key for the other worker', async () => {
    const { sizes, send } = sized();
    let spacedTo = 0;
    const predicted: Array<{ spacing?: KeySpacing }> = [];
    const reserved: Array<ReserveOptions> = [];
    let markedAt = 0;
    // the first prediction is answered only once the test releases it (all machines joined)
    let asked!: () => void;
    const firstAsked = new Promise<void>((r) => (asked = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const b = pacedBatcher({
      send,
      mark: () => {
        markedAt ||= Date.now();
        return Promise.resolve({ marked: true });
      },
      tuning: { launchKeySpacingMs: 1_000 },
      launchRecord: {
        predictTurn: async (_r: string, _b: unknown, opts: { spacing?: KeySpacing }) => {
          predicted.push(opts);
          if (predicted.length > 1) return { at: Date.now() };
          asked();
          await released;
          // the other worker's call of the key spaces the first prediction only
          spacedTo = Date.now() + 300;
          return { at: Date.now(), spacedUntil: spacedTo };
        },
        reserve: (_r: string, _b: unknown, opts: ReserveOptions) => {
          reserved.push(opts);
          return Promise.resolve(Date.now());
        },
      },
    });
    const request = launchOf(b);
    const launches = [request('1')];
    await firstAsked;
    // machines arriving while the batch waits at the gate join it
    for (const id of ['2', '3', '4']) launches.push(request(id));
    release();
    await Promise.all(launches);
    expect(sizes).toEqual([4]);
    expect(markedAt).toBeGreaterThanOrEqual(spacedTo - 20);
    // asked once more after the spacing (the other worker may have booked meanwhile)
    expect(predicted).toHaveLength(2);
    const spacing = predicted[0]!.spacing!;
    expect(spacing).toEqual({
      key: expect.any(String),
      worker: b.workerId,
      spacingMs: 1_000,
      ownYieldMs: 500,
    });
    expect(spacing.key).toHaveLength(10);
    // the booking carries the key, so the other worker's next batch is spaced after this one
    expect(reserved).toHaveLength(1);
    expect(reserved[0]!.spacing).toEqual(spacing);
    expect(b.spaced.batches).toBe(1);
    expect(b.localFallbacks).toBe(0);
  });

  it("yields its own key at least 1.5 × its gate-to-booking time: the other worker's batch, released at the spacing, books before this one's re-read", async () => {
    const predicted: KeySpacing[] = [];
    let slow = true;
    const b = pacedBatcher({
      // the first batch's marks and commit take 600 ms (a busy table), later ones none
      mark: async () => {
        if (slow) await new Promise((r) => setTimeout(r, 600));
        return { marked: true };
      },
      tuning: { launchKeySpacingMs: 1_000 },
      launchRecord: {
        predictTurn: (_r: string, _b: unknown, opts: { spacing?: KeySpacing }) => {
          predicted.push(opts.spacing!);
          return Promise.resolve({ at: Date.now() });
        },
        reserve: () => Promise.resolve(Date.now()),
      },
    });
    await launchOf(b)('1');
    slow = false;
    await launchOf(b)('2');
    // before any booking, half a spacing (OWN_KEY_YIELD)
    expect(predicted[0]!.ownYieldMs).toBe(500);
    // after a 600 ms take: 900 ms at least (a spacing at most), not the 500 that a re-read
    // at 1.5 spacings would pass before the other worker's batch, as slow, had booked
    const after = predicted[predicted.length - 1]!.ownYieldMs!;
    expect(after).toBeGreaterThanOrEqual(900);
    expect(after).toBeLessThanOrEqual(1_000);
  });

  it(`waits for the spacing at most ${KEY_SPACING_MAX_WAITS} spacings, however far the record keeps moving it`, async () => {
    const { sizes, send } = sized();
    let predicts = 0;
    const b = pacedBatcher({
      send,
      tuning: { launchKeySpacingMs: 300 },
      launchRecord: {
        // another worker keeps booking the key just ahead of this one
        predictTurn: () => {
          predicts += 1;
          return Promise.resolve({ at: Date.now(), spacedUntil: Date.now() + 250 });
        },
        reserve: () => Promise.resolve(Date.now()),
      },
    });
    const asked = Date.now();
    await launchOf(b)('1');
    const took = Date.now() - asked;
    expect(sizes).toEqual([1]);
    // two spacings (600 ms) after the window (10 ms idle), not 250 ms × KEY_SPACING_ROUNDS more
    expect(took).toBeGreaterThanOrEqual(580);
    // an upper bound for a busy machine: two spacings and 5 s of slack
    expect(took).toBeLessThan(2 * 300 + 5_000);
    expect(predicts).toBeGreaterThanOrEqual(2);
    expect(predicts).toBeLessThanOrEqual(KEY_SPACING_ROUNDS);
  });

  it('with key spacing off (0), the prediction asks for no key and the booking carries none', async () => {
    const predicted: unknown[] = [];
    const reserved: ReserveOptions[] = [];
    const b = pacedBatcher({
      tuning: { launchKeySpacingMs: 0 },
      launchRecord: {
        predictTurn: (_r: string, _b: unknown, opts: unknown) => {
          predicted.push(opts);
          return Promise.resolve({ at: Date.now() });
        },
        reserve: (_r: string, _b: unknown, opts: ReserveOptions) => {
          reserved.push(opts);
          return Promise.resolve(Date.now());
        },
      },
    });
    await launchOf(b)('1');
    expect(predicted).toEqual([{}]);
    expect(reserved).toHaveLength(1);
    expect(reserved[0]!.spacing).toBeUndefined();
  });
});
