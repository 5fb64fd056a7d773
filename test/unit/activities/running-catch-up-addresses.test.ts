import { EC2Client, type DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import type { ActivityDeps } from '../../../activities/deps';
import {
  catchUpPortsOf,
  runningCatchUpOf,
  type RecordedLaunch,
} from '../../../activities/running-catch-up';
import type { RoutineRunning } from '../../../state/provisioning';

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
    const { deps, writes } = recordingDeps(client);
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
    // one call, asking EC2 for the window's ids in state running only (a pending one is not described)
    expect(asked).toEqual([
      [
        {
          Name: 'instance-id',
          Values: ['i-0000000000000000a', 'i-0000000000000000b', 'i-0000000000000000c'],
        },
        { Name: 'instance-state-name', Values: ['running'] },
      ],
    ]);
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

  it('a listing that fails after its first page writes nothing, and keeps nothing of that page', async () => {
    const client = new EC2Client({
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });
    // the first window: page 1 lists a running with addresses, page 2 fails;
    // the next window: a runs with no public address (only a private one listed)
    const pagesAsked: Array<string | undefined> = [];
    let failing = true;
    client.send = (command: DescribeInstancesCommand) => {
      pagesAsked.push(command.input.NextToken);
      if (failing && command.input.NextToken === 'page-2') {
        return Promise.reject(
          Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }),
        );
      }
      if (failing) {
        return Promise.resolve({
          NextToken: 'page-2',
          Reservations: [
            {
              Instances: [
                {
                  InstanceId: 'i-0000000000000000a',
                  State: { Name: 'running' },
                  PrivateIpAddress: '10.0.0.7',
                  PublicIpAddress: '54.1.2.3',
                },
              ],
            },
          ],
        });
      }
      return Promise.resolve({
        Reservations: [
          {
            Instances: [
              {
                InstanceId: 'i-0000000000000000a',
                State: { Name: 'running' },
                PrivateIpAddress: '10.0.0.9',
              },
            ],
          },
        ],
      });
    };
    const { deps, writes } = recordingDeps(client);
    const launch: RecordedLaunch = {
      region: 'us-east-1',
      model: 'm',
      machineId: '0',
      instanceId: 'i-0000000000000000a',
    };

    // the ports keep no state between windows: the failed describe rejects with its error, and
    // the page it had read is gone with it (there is no per-worker map to hold its addresses)
    const ports = catchUpPortsOf(deps);
    await expect(ports.statesOf('us-east-1', [launch.instanceId])).rejects.toThrow('Rate exceeded');
    expect(pagesAsked).toEqual([undefined, 'page-2']);
    expect(Object.keys(ports)).toEqual(['statesOf', 'recordRunningAll']);

    // through the catch-up: the failing window is counted failed and writes nothing
    pagesAsked.length = 0;
    const catchUp = runningCatchUpOf(deps);
    await catchUp.recorded(launch);
    expect(pagesAsked).toEqual([undefined, 'page-2']);
    expect(writes).toEqual([]);
    expect(catchUp.stats).toMatchObject({ asks: 1, written: 0, refused: 0, failed: 1 });

    // the next window writes what its own describe listed, nothing left from the failed page
    failing = false;
    await catchUp.recorded(launch);
    expect(writes).toEqual([
      ['m', '0', 'i-0000000000000000a', 'running', { privateAddress: '10.0.0.9' }],
    ]);
    expect(catchUp.stats).toMatchObject({ asks: 2, written: 1, refused: 0, failed: 1 });
  }, 30_000);

  it('asks 400 ids in three calls, each within EC2’s 200 filter values with the state', async () => {
    const { client, asked } = listingEc2([]);
    const ports = catchUpPortsOf(recordingDeps(client).deps);
    const ids = Array.from({ length: 400 }, (_, n) => `i-${n.toString(16).padStart(17, '0')}`);
    await expect(ports.statesOf('us-east-1', ids)).resolves.toEqual(new Map());
    const calls = asked as Array<Array<{ Name: string; Values: string[] }>>;
    // 199 + 199 + 2 ids: with `running` each call has 200 values at most (FilterLimitExceeded beyond)
    expect(calls.map((f) => f.map((x) => x.Values.length))).toEqual([
      [199, 1],
      [199, 1],
      [2, 1],
    ]);
    expect(calls.flatMap((f) => f[0]!.Values)).toEqual(ids);
  });
});

/** Activity deps over `client` whose store records each routine `running` write it is asked for. */
function recordingDeps(client: EC2Client): { deps: ActivityDeps; writes: unknown[][] } {
  const writes: unknown[][] = [];
  const deps = {
    ec2ForRegion: () => ({ ec2: client }),
    store: {
      // each write as the single routine write's arguments would name it
      recordRoutineRunningAll: (all: readonly RoutineRunning[]) => {
        for (const w of all) {
          writes.push([
            w.model,
            w.machineId,
            w.instanceId,
            'running',
            ...(w.addresses ? [w.addresses] : []),
          ]);
        }
        return Promise.resolve(all.map(() => ({ outcome: 'written' })));
      },
    },
  } as unknown as ActivityDeps;
  return { deps, writes };
}
