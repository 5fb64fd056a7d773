import { LaunchBatcher } from '../../../activities/launch-batcher';
import type { ActivityDeps } from '../../../activities/deps';
import type { CapacityMemory } from '../../../activities/capacity-memory';
import type { Ec2Instance } from '../../../ec2/instances';
import type { LaunchBatchCall } from '../../../state/launch-batches';

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

function batcher(send: () => Promise<unknown>): { recorded: Recorded[]; replay: Replay } {
  const recorded: Recorded[] = [];
  const deps = {
    ec2ForRegion: () => ({ ec2: { send } }),
    tuning: {
      launchBurst: 5,
      launchRatePerSecond: 2,
      launchBatchIdleMs: 10,
      launchBatchMaxMs: 100,
    },
    launchRecord: {
      record: (region: string, _buckets: unknown, send: { calls: number; instances: number }) => {
        recorded.push({ region, calls: send.calls, instances: send.instances });
        return Promise.resolve();
      },
    },
  } as unknown as ActivityDeps;
  const b = new LaunchBatcher(deps, {} as CapacityMemory) as unknown as {
    replay: Replay;
  };
  return { recorded, replay: (id, call, count) => b.replay(id, call, count) };
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
