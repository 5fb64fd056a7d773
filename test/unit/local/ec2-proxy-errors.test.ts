import {
  ec2ErrorCode,
  ec2ErrorStatus,
  ec2ErrorXml,
  faultMessage,
} from '../../../local/ec2-proxy/errors';

describe('ec2ErrorStatus', () => {
  it.each([
    ['InsufficientInstanceCapacity', 500],
    ['InsufficientHostCapacity', 500],
    ['InsufficientReservedInstanceCapacity', 500],
    ['InsufficientCapacity', 500],
    ['InternalError', 500],
    ['RequestLimitExceeded', 503],
    ['Unavailable', 503],
    ['Unsupported', 400],
    ['InsufficientFreeAddressesInSubnet', 400],
    ['IdempotentParameterMismatch', 400],
    ['VcpuLimitExceeded', 400],
  ])('%s → %i', (code, status) => {
    expect(ec2ErrorStatus(code)).toBe(status);
  });
});

describe('ec2ErrorXml', () => {
  it("writes EC2's error document, escaped", () => {
    expect(ec2ErrorXml('Unsupported', 'a <b> & c', 'req-1')).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
        '<Response><Errors><Error><Code>Unsupported</Code><Message>a &lt;b&gt; &amp; c</Message></Error></Errors>' +
        '<RequestID>req-1</RequestID></Response>',
    );
  });
});

describe('faultMessage', () => {
  const ctx = {
    zone: 'us-east-1b',
    instanceType: 't3.small',
    alternativeZones: ['us-east-1a', 'us-east-1c'],
  };

  it("uses EC2's InsufficientInstanceCapacity wording", () => {
    expect(faultMessage('InsufficientInstanceCapacity', ctx)).toBe(
      'We currently do not have sufficient t3.small capacity in the Availability Zone you requested (us-east-1b). ' +
        'Our system will be working on provisioning additional capacity. ' +
        'You can currently get t3.small capacity by not specifying an Availability Zone in your request or choosing us-east-1a, us-east-1c.',
    );
  });

  it('drops the suggestion when no other zone has capacity', () => {
    expect(faultMessage('InsufficientInstanceCapacity', { ...ctx, alternativeZones: [] })).toBe(
      'We currently do not have sufficient t3.small capacity in the Availability Zone you requested (us-east-1b). ' +
        'Our system will be working on provisioning additional capacity.',
    );
  });

  it("uses EC2's Unsupported wording", () => {
    expect(faultMessage('Unsupported', ctx)).toBe(
      'Your requested instance type (t3.small) is not supported in your requested Availability Zone (us-east-1b). ' +
        'Please retry your request by not specifying an Availability Zone or choosing us-east-1a, us-east-1c.',
    );
  });

  it('names the subnet for InsufficientFreeAddressesInSubnet', () => {
    expect(
      faultMessage('InsufficientFreeAddressesInSubnet', { ...ctx, subnetId: 'subnet-1' }),
    ).toBe(
      "There are not enough free addresses in subnet 'subnet-1' to satisfy the requested number of instances.",
    );
  });

  it('describes codes it has no wording for', () => {
    expect(faultMessage('SomethingElse', ctx)).toBe(
      'SomethingElse in the Availability Zone you requested (us-east-1b).',
    );
  });
});

describe('ec2ErrorCode', () => {
  it('reads the code of an EC2 error document', () => {
    expect(ec2ErrorCode(ec2ErrorXml('InvalidInstanceID.NotFound', 'gone', 'r'))).toBe(
      'InvalidInstanceID.NotFound',
    );
    expect(
      ec2ErrorCode(
        '<?xml version="1.0" encoding="utf-8"?>\n<Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><Errors><Error><Code>InvalidSubnetID.NotFound</Code><Message>x</Message></Error></Errors><RequestID>request-id</RequestID></Response>',
      ),
    ).toBe('InvalidSubnetID.NotFound');
  });

  it('is undefined for anything else', () => {
    expect(ec2ErrorCode('<DescribeRegionsResponse/>')).toBeUndefined();
    expect(ec2ErrorCode('<html><body>Not Found')).toBeUndefined();
    expect(ec2ErrorCode('')).toBeUndefined();
  });
});
