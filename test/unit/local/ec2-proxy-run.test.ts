import {
  parseDescribeInstancesResponse,
  parseRunInstances,
  parseRunInstancesResponse,
  resolveLaunchTarget,
  responseNamespace,
  runInstancesResponseXml,
} from '../../../local/ec2-proxy/run';
import { parseXml } from '../../../local/ec2-proxy/xml';

// Trimmed from moto 5.2.5 answers (the nested <item>s are what matter).
const INSTANCE =
  '<item><architecture>x86_64</architecture>' +
  '<blockDeviceMapping><item><deviceName>/dev/sda1</deviceName><ebs><volumeId>vol-1</volumeId></ebs></item></blockDeviceMapping>' +
  '<clientToken>abc</clientToken>' +
  '<networkInterfaceSet><item><attachment><attachmentId>eni-attach-1</attachmentId></attachment><networkInterfaceId>eni-1</networkInterfaceId></item></networkInterfaceSet>' +
  '<stateReason><code/><message/></stateReason>' +
  '<instanceId>i-c9713e813f79e83d4</instanceId><imageId>ami-03cf127a</imageId>' +
  '<instanceState><code>16</code><name>running</name></instanceState>' +
  '<placement><groupName/><tenancy>default</tenancy><availabilityZone>us-east-1a</availabilityZone></placement></item>';

const RUN_ANSWER =
  '<?xml version="1.0" encoding="utf-8"?>\n' +
  '<RunInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><reservationId>r-712515386fb34a064</reservationId>' +
  `<ownerId>123456789012</ownerId><groupSet/><instancesSet>${INSTANCE.replace('<code>16</code><name>running', '<code>0</code><name>pending')}</instancesSet>` +
  '<requestId>request-id</requestId></RunInstancesResponse>';

const DESCRIBE_ANSWER =
  '<?xml version="1.0" encoding="utf-8"?>\n' +
  '<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><reservationSet><item>' +
  `<reservationId>r-712515386fb34a064</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${INSTANCE}</instancesSet>` +
  '</item></reservationSet><requestId>request-id</requestId></DescribeInstancesResponse>';

describe('parseRunInstances', () => {
  it('reads token, zone, subnet, type and dry-run', () => {
    expect(
      parseRunInstances([
        ['ClientToken', 't'],
        ['Placement.AvailabilityZone', 'us-east-1b'],
        ['SubnetId', 'subnet-1'],
        ['InstanceType', 't3.small'],
        ['DryRun', 'true'],
      ]),
    ).toEqual({
      clientToken: 't',
      placementZone: 'us-east-1b',
      subnetId: 'subnet-1',
      instanceType: 't3.small',
      dryRun: true,
    });
  });

  it('defaults like EC2: m1.small, no token, no zone; a NIC subnet counts as the subnet', () => {
    expect(parseRunInstances([['NetworkInterface.1.SubnetId', 'subnet-9']])).toEqual({
      subnetId: 'subnet-9',
      instanceType: 'm1.small',
      dryRun: false,
    });
  });
});

describe('resolveLaunchTarget', () => {
  const noLookup = (): Promise<string | undefined> =>
    Promise.reject(new Error('no lookup expected'));

  it('uses Placement.AvailabilityZone first', async () => {
    await expect(
      resolveLaunchTarget(
        { placementZone: 'us-east-1c', instanceType: 'x', dryRun: false },
        'us-east-1',
        noLookup,
      ),
    ).resolves.toEqual({ zone: 'us-east-1c', explicit: true });
  });

  it("uses the subnet's zone when only a subnet is given", async () => {
    const lookup = jest.fn((subnet: string) =>
      Promise.resolve(subnet === 'subnet-1' ? 'us-east-1d' : undefined),
    );
    await expect(
      resolveLaunchTarget(
        { subnetId: 'subnet-1', instanceType: 'x', dryRun: false },
        'us-east-1',
        lookup,
      ),
    ).resolves.toEqual({ zone: 'us-east-1d', explicit: true, subnetId: 'subnet-1' });
    await expect(
      resolveLaunchTarget(
        { subnetId: 'subnet-2', instanceType: 'x', dryRun: false },
        'us-east-1',
        lookup,
      ),
    ).resolves.toBeUndefined();
  });

  it("falls back to the region's first zone, as moto does, and calls it regional", async () => {
    await expect(
      resolveLaunchTarget({ instanceType: 'x', dryRun: false }, 'eu-west-1', noLookup),
    ).resolves.toEqual({ zone: 'eu-west-1a', explicit: false });
  });
});

describe('RunInstances answers', () => {
  it('reads the reservation and only the instances’ own ids', () => {
    expect(parseRunInstancesResponse(RUN_ANSWER)).toEqual({
      reservationId: 'r-712515386fb34a064',
      instanceIds: ['i-c9713e813f79e83d4'],
    });
  });

  it('is undefined for an answer it cannot read', () => {
    expect(parseRunInstancesResponse('<RunInstancesResponse><instancesSet>')).toBeUndefined();
    expect(parseRunInstancesResponse('<RunInstancesResponse/>')).toBeUndefined();
  });

  it('reads reservations and states from DescribeInstances', () => {
    const [reservation, ...others] = parseDescribeInstancesResponse(DESCRIBE_ANSWER);
    expect(others).toEqual([]);
    expect(reservation?.reservationId).toBe('r-712515386fb34a064');
    expect([...(reservation?.instanceStates ?? [])]).toEqual([['i-c9713e813f79e83d4', 'running']]);
  });

  it('rebuilds a RunInstances answer from the described reservation', () => {
    const [reservation] = parseDescribeInstancesResponse(DESCRIBE_ANSWER);
    const xml = runInstancesResponseXml(reservation!, responseNamespace(RUN_ANSWER), 'req-1');
    expect(xml).toContain('<RunInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15">');
    expect(xml).toContain(
      '<requestId>req-1</requestId><reservationId>r-712515386fb34a064</reservationId>',
    );
    expect(xml).toContain('<name>running</name>');
    expect(parseRunInstancesResponse(xml)).toEqual(parseRunInstancesResponse(RUN_ANSWER));
    expect(() => parseXml(xml)).not.toThrow();
  });
});
