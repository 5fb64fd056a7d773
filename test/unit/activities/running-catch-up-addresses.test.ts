import { EC2Client, type DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import type { ActivityDeps } from '../../../activities/deps';
import { runningCatchUpOf } from '../../../activities/running-catch-up';

/** An EC2 client whose DescribeInstances answers from a fixed listing, recording the filters asked. */
function listingEc2(instances: ReadonlyArray<Record<string, unknown>>) {
  const client = new EC2Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  const asked: unknown[] = [];
  client.send = (command: DescribeInstancesCommand) => {
    asked.push(command.input.Filters);
    return Promise.resolve({ Reservations: [{ Instances: instances }] });
  };
  return { client, asked };
}

describe('runningCatchUpOf: the routine running write carries the addresses EC2 listed', () => {
  it('writes running with the addresses of a running instance, and a pending one not at all', async () => {
    const { client, asked } = listingEc2([
      {
        InstanceId: 'i-0000000000000000a',
        State: { Name: 'running' },
        PrivateIpAddress: '10.0.0.7',
        PublicIpAddress: '54.1.2.3',
      },
      {
        InstanceId: 'i-0000000000000000b',
        State: { Name: 'pending' },
        PrivateIpAddress: '10.0.0.8',
      },
      // running without a public address: only the private one is written (the other removed)
      {
        InstanceId: 'i-0000000000000000c',
        State: { Name: 'running' },
        PrivateIpAddress: '10.0.0.9',
      },
    ]);
    const writes: unknown[][] = [];
    const deps = {
      ec2ForRegion: () => ({ ec2: client }),
      store: {
        recordRoutineInstanceState: (...args: unknown[]) => {
          writes.push(args);
          return Promise.resolve(true);
        },
      },
    } as unknown as ActivityDeps;
    const catchUp = runningCatchUpOf(deps);
    await Promise.all(
      ['a', 'b', 'c'].map((x, n) =>
        catchUp.recorded({
          region: 'us-east-1',
          model: 'm',
          machineId: String(n),
          instanceId: `i-0000000000000000${x}`,
        }),
      ),
    );
    expect(asked).toHaveLength(1);
    expect(writes.sort((x, y) => String(x[1]).localeCompare(String(y[1])))).toEqual([
      [
        'm',
        '0',
        'i-0000000000000000a',
        'running',
        { privateAddress: '10.0.0.7', publicAddress: '54.1.2.3' },
      ],
      ['m', '2', 'i-0000000000000000c', 'running', { privateAddress: '10.0.0.9' }],
    ]);
    expect(catchUp.stats).toMatchObject({ asks: 1, written: 2, refused: 0, failed: 0 });
  }, 30_000);
});
