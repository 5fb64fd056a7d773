import {
  actionError,
  AdminBadRequestError,
  alternativeZones,
  parseFaultSet,
} from '../../../local/ec2-proxy/faults';

describe('parseFaultSet', () => {
  it('accepts the shape API.md documents', () => {
    expect(
      parseFaultSet({
        zones: { 'us-east-1b': 'InsufficientInstanceCapacity' },
        zoneStates: { 'us-east-1c': 'impaired' },
      }),
    ).toEqual({
      zones: { 'us-east-1b': 'InsufficientInstanceCapacity' },
      zoneStates: { 'us-east-1c': 'impaired' },
      unavailable: false,
      loseResponses: {},
    });
  });

  it('takes an EC2 error code per action, shown only when set', () => {
    const faults = parseFaultSet(
      { errors: { terminateInstances: 'OperationNotPermitted', describeImages: 'AuthFailure' } },
      (action) => ['TerminateInstances', 'DescribeImages'].includes(action),
    );
    expect(faults.errors).toEqual({
      terminateInstances: 'OperationNotPermitted',
      describeImages: 'AuthFailure',
    });
    expect(actionError(faults, 'TerminateInstances')).toBe('OperationNotPermitted');
    expect(actionError(faults, 'RunInstances')).toBeUndefined();
    expect(parseFaultSet({ errors: {} })).not.toHaveProperty('errors');
  });

  it.each([
    ['errors not an object', { errors: 'AuthFailure' }, /"errors" must be an object/],
    [
      'an unknown action',
      { errors: { launchRocket: 'AuthFailure' } },
      /"errors": unknown field "launchRocket"/,
    ],
    [
      'a code that is not one',
      { errors: { terminateInstances: 'not a code' } },
      /"errors.terminateInstances" must be an EC2 error code/,
    ],
  ])('refuses %s in errors', (_label, body, message) => {
    const known = (action: string) => action === 'TerminateInstances';
    expect(() => parseFaultSet(body, known)).toThrow(AdminBadRequestError);
    expect(() => parseFaultSet(body, known)).toThrow(message);
  });

  it('takes instance ids to leave unlisted, shown only when set', () => {
    const ids = ['i-0123456789abcdef0', 'i-0123abcd'];
    expect(parseFaultSet({ unlisted: [...ids, ids[0]] }).unlisted).toEqual(ids);
    expect(parseFaultSet({ unlisted: [] })).not.toHaveProperty('unlisted');
  });

  it.each([
    ['not an array', { unlisted: 'i-0123abcd' }, /"unlisted" must be an array of instance ids/],
    ['a malformed id', { unlisted: ['i-xyz'] }, /"unlisted": "i-xyz" is not an instance id/],
    ['a number', { unlisted: [7] }, /"unlisted": 7 is not an instance id/],
    [
      'too many ids',
      { unlisted: Array.from({ length: 1001 }, (_, i) => `i-${String(i).padStart(8, '0')}`) },
      /"unlisted" holds at most 1000 instance ids/,
    ],
  ])('refuses %s in unlisted', (_label, body, message) => {
    expect(() => parseFaultSet(body)).toThrow(AdminBadRequestError);
    expect(() => parseFaultSet(body)).toThrow(message);
  });

  it('treats both fields as optional', () => {
    expect(parseFaultSet({})).toEqual({
      zones: {},
      zoneStates: {},
      unavailable: false,
      loseResponses: {},
    });
    expect(parseFaultSet({ zoneStates: { 'us-east-1a': 'unavailable' } })).toEqual({
      zones: {},
      zoneStates: { 'us-east-1a': 'unavailable' },
      unavailable: false,
      loseResponses: {},
    });
  });

  it('accepts dotted EC2 codes and Local Zone names', () => {
    expect(
      parseFaultSet({ zones: { 'us-east-1-bos-1a': 'InvalidSubnetID.NotFound' } }).zones,
    ).toEqual({ 'us-east-1-bos-1a': 'InvalidSubnetID.NotFound' });
  });

  it.each<[string, unknown, RegExp]>([
    ['a non-object body', [1], /must be a JSON object/],
    ['a null body', null, /must be a JSON object/],
    ['an unknown field', { zones: {}, zone: {} }, /unknown field "zone"/],
    ['zones not an object', { zones: ['us-east-1b'] }, /"zones" must be an object/],
    ['a non-string code', { zones: { 'us-east-1b': 5 } }, /"zones.us-east-1b" must be a string/],
    [
      'a code that is not one',
      { zones: { 'us-east-1b': 'no capacity' } },
      /is not an EC2 error code/,
    ],
    [
      'a bad zone name',
      { zones: { nowhere: 'Unsupported' } },
      /"nowhere" is not an availability zone/,
    ],
    ['zoneStates not an object', { zoneStates: 'impaired' }, /"zoneStates" must be an object/],
    ['a non-string state', { zoneStates: { 'us-east-1c': true } }, /must be a string/],
    ['an unknown state', { zoneStates: { 'us-east-1c': 'broken' } }, /unknown zone state "broken"/],
  ])('refuses %s', (_label, body, message) => {
    expect(() => parseFaultSet(body)).toThrow(AdminBadRequestError);
    expect(() => parseFaultSet(body)).toThrow(message);
  });
});

describe('alternativeZones', () => {
  const all = ['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d'];

  it('leaves out the target, faulted zones and zones not reported available', () => {
    expect(
      alternativeZones(all, 'us-east-1b', {
        zones: { 'us-east-1b': 'InsufficientInstanceCapacity', 'us-east-1d': 'Unsupported' },
        zoneStates: { 'us-east-1c': 'impaired', 'us-east-1a': 'available' },
        unavailable: false,
        loseResponses: {},
      }),
    ).toEqual(['us-east-1a']);
  });

  it('lists every other zone when nothing else is faulted', () => {
    expect(
      alternativeZones(all, 'us-east-1a', {
        zones: {},
        zoneStates: {},
        unavailable: false,
        loseResponses: {},
      }),
    ).toEqual(['us-east-1b', 'us-east-1c', 'us-east-1d']);
  });
});
