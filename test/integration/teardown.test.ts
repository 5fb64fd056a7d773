import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { teardownActivities } from '../../activities/teardown';
import type { ActivityDeps } from '../../activities/deps';
import { ec2ClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const ec2 = ec2ClientFor(stack);
/** The EC2 calls these activities make, by action. */
const sent: string[] = [];
ec2.middlewareStack.add(
  (next, context) => (args) => {
    sent.push(String(context.commandName).replace(/Command$/, ''));
    return next(args);
  },
  { step: 'initialize', name: 'countCalls' },
);
// only what teardown uses: the region's EC2 client
const activities = teardownActivities({
  ec2ForRegion: () => ({ ec2 }),
} as unknown as ActivityDeps);

afterAll(() => ec2.destroy());

async function launchMany(count: number): Promise<string[]> {
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['099720109477'] }));
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: images.Images![0]!.ImageId!,
      InstanceType: 't3.micro',
      MinCount: count,
      MaxCount: count,
      Placement: { AvailabilityZone: 'us-east-1f' },
    }),
  );
  return out.Instances!.map((i) => i.InstanceId!);
}

async function launch(): Promise<string> {
  return (await launchMany(1))[0]!;
}

async function state(id: string): Promise<string | undefined> {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

describe('terminateInstances', () => {
  it('terminates known instances and skips an old id EC2 does not know', async () => {
    const id = await launch();
    await activities.terminateInstances({
      region: stack.region,
      instanceIds: ['i-0123456789abcdef0', id],
    });
    expect(['shutting-down', 'terminated']).toContain(await state(id));
    // again: a terminated instance is no error
    await activities.terminateInstances({ region: stack.region, instanceIds: [id] });
    expect(
      await activities.instancesNotTerminated({ region: stack.region, instanceIds: [id] }),
    ).toEqual([]);
  });

  it('retries, never skips, a freshly launched id EC2 does not list yet', async () => {
    await expect(
      activities.terminateInstances({
        region: stack.region,
        instanceIds: ['i-0fedcba9876543210'],
        fresh: ['i-0fedcba9876543210'],
      }),
    ).rejects.toThrow(
      'instance i-0fedcba9876543210 was just launched and EC2 does not list it yet; retrying',
    );
  });

  it('terminates 60 machines’ instances in one TerminateInstances, and sees them gone in one describe', async () => {
    const ids = await launchMany(60);
    sent.length = 0;
    await Promise.all(
      ids.map((id) =>
        activities.terminateInstances({ region: stack.region, instanceIds: [id], fresh: [id] }),
      ),
    );
    const remaining = await Promise.all(
      ids.map((id) =>
        activities.instancesNotTerminated({ region: stack.region, instanceIds: [id] }),
      ),
    );
    expect(remaining.flat()).toEqual([]);
    // the proxy answers `shutting-down` as EC2 does: the 60 polls share one describe by id
    expect(sent).toEqual(['TerminateInstances', 'DescribeInstances']);
    const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }));
    const states = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    expect(states.map((i) => i.State?.Name)).toEqual(ids.map(() => 'terminated'));
  });

  it('splits a batch EC2 refuses for one unknown id back to that id alone', async () => {
    const ids = await launchMany(5);
    sent.length = 0;
    const unknown = 'i-0aaaaaaaaaaaaaaa1';
    const results = await Promise.allSettled([
      ...ids.map((id) =>
        activities.terminateInstances({ region: stack.region, instanceIds: [id], fresh: [id] }),
      ),
      activities.terminateInstances({
        region: stack.region,
        instanceIds: [unknown],
        fresh: [unknown],
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual([...ids.map(() => 'fulfilled'), 'rejected']);
    expect(String((results[5] as PromiseRejectedResult).reason)).toContain(
      `instance ${unknown} was just launched and EC2 does not list it yet; retrying`,
    );
    // one refused call naming the unknown id, one for the rest
    expect(sent).toEqual(['TerminateInstances', 'TerminateInstances']);
    expect(
      await activities.instancesNotTerminated({ region: stack.region, instanceIds: ids }),
    ).toEqual([]);
  });
});
