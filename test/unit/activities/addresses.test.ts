import { addressChanges } from '../../../ec2/addresses';

describe('addressChanges: the addresses the sweep writes', () => {
  const listed = [
    { InstanceId: 'i-1', PrivateIpAddress: '10.0.0.1', PublicIpAddress: '54.0.0.1' },
    { InstanceId: 'i-2', PrivateIpAddress: '10.0.0.2' },
    { InstanceId: 'i-3', PrivateIpAddress: '10.0.0.3', PublicIpAddress: '54.0.0.3' },
  ];

  it('only machines whose listed instance has other addresses than recorded', () => {
    expect(
      addressChanges(
        [
          { id: '1', instanceId: 'i-1' },
          { id: '2', instanceId: 'i-2', privateAddress: '10.0.0.2' },
          // a stopped instance lost its public address: recorded without it
          { id: '3', instanceId: 'i-3', privateAddress: '10.0.0.3', publicAddress: '54.9.9.9' },
          // not listed: nothing is known, nothing is written
          { id: '4', instanceId: 'i-4', privateAddress: '10.0.0.4' },
          { id: '5' },
        ],
        listed,
      ),
    ).toEqual([
      { machineId: '1', instanceId: 'i-1', privateAddress: '10.0.0.1', publicAddress: '54.0.0.1' },
      { machineId: '3', instanceId: 'i-3', privateAddress: '10.0.0.3', publicAddress: '54.0.0.3' },
    ]);
  });

  it('a public address EC2 no longer lists is dropped', () => {
    expect(
      addressChanges(
        [{ id: '2', instanceId: 'i-2', privateAddress: '10.0.0.2', publicAddress: '54.0.0.2' }],
        listed,
      ),
    ).toEqual([{ machineId: '2', instanceId: 'i-2', privateAddress: '10.0.0.2' }]);
  });
});
