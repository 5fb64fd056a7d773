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
// only what teardown uses: the region's EC2 client
const activities = teardownActivities({
  ec2ForRegion: () => ({ ec2 }),
} as unknown as ActivityDeps);

afterAll(() => ec2.destroy());

async function launch(): Promise<string> {
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['099720109477'] }));
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: images.Images![0]!.ImageId!,
      InstanceType: 't3.micro',
      MinCount: 1,
      MaxCount: 1,
      Placement: { AvailabilityZone: 'us-east-1f' },
    }),
  );
  return out.Instances![0]!.InstanceId!;
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
});
