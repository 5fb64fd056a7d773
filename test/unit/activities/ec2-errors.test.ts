import { EC2ServiceException } from '@aws-sdk/client-ec2';
import { ApplicationFailure } from '@temporalio/common';
import {
  classifyLaunchError,
  ec2ErrorCode,
  isThrottling,
  isZoneSpecific,
} from '../../../activities/ec2-errors';
import { FAILURE } from '../../../workflows/failures';

function ec2Error(code: string, status: number, message = `${code} happened`): EC2ServiceException {
  return new EC2ServiceException({
    name: code,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message,
  });
}

describe('ec2ErrorCode', () => {
  it.each<[unknown, string | undefined]>([
    [ec2Error('InsufficientInstanceCapacity', 500), 'InsufficientInstanceCapacity'],
    [{ Code: 'RequestLimitExceeded' }, 'RequestLimitExceeded'],
    [{ code: 'Unsupported' }, 'Unsupported'],
    [new Error('plain'), undefined],
    ['text', undefined],
    [null, undefined],
  ])('%p → %p', (err, code) => {
    expect(ec2ErrorCode(err)).toBe(code);
  });
});

describe('isZoneSpecific', () => {
  it.each<[string | undefined, string, boolean]>([
    ['InsufficientInstanceCapacity', 'no capacity', true],
    ['InsufficientHostCapacity', '', true],
    ['InsufficientReservedInstanceCapacity', '', true],
    ['InsufficientFreeAddressesInSubnet', '', true],
    [
      'Unsupported',
      'Your requested instance type (c7a.medium) is not supported in your requested Availability Zone (us-east-1e).',
      true,
    ],
    ['Unsupported', 'The requested configuration is currently not supported.', false],
    ['InvalidParameterValue', 'Invalid availability zone: [us-east-1z]', true],
    ['InvalidParameterValue', 'Invalid value for instance type', false],
    ['InstanceLimitExceeded', 'too many', false],
    ['RequestLimitExceeded', 'slow down', false],
    [undefined, 'availability zone', false],
    // a partition placement group that cannot take the type or zone: fail over
    [
      'Unsupported',
      "The instance type 't2.micro' is not supported for placement group 'juju-uid-app'.",
      true,
    ],
    [
      'InvalidParameterCombination',
      "Placement group 'juju-uid-app' cannot be used in the requested availability zone.",
      true,
    ],
    // a bad partition number or an unknown group is no zone's fault
    [
      'InvalidParameterValue',
      "Partition number must be between 1 and 7 for placement group 'g' (instance type m5.large).",
      false,
    ],
    ['InvalidPlacementGroup.Unknown', "The placement group 'g' is unknown.", false],
  ])('%s (%s) → %s', (code, message, expected) => {
    expect(isZoneSpecific(code, message)).toBe(expected);
  });
});

describe('isThrottling', () => {
  it.each([
    ['RequestLimitExceeded', true],
    ['Throttling', true],
    ['InsufficientInstanceCapacity', false],
    [undefined, false],
  ])('%s → %s', (code, expected) => {
    expect(isThrottling(code)).toBe(expected);
  });
});

describe('classifyLaunchError', () => {
  it('makes a capacity error (HTTP 500) a non-retryable zone failure naming the code', () => {
    const err = ec2Error(
      'InsufficientInstanceCapacity',
      500,
      'We currently do not have sufficient capacity',
    );
    const out = classifyLaunchError(err, 'us-east-1b');
    expect(out).toBeInstanceOf(ApplicationFailure);
    const failure = out as ApplicationFailure;
    expect(failure.type).toBe(FAILURE.zoneUnavailable);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      'InsufficientInstanceCapacity: We currently do not have sufficient capacity',
    );
    expect(failure.details).toEqual([{ zone: 'us-east-1b', code: 'InsufficientInstanceCapacity' }]);
  });

  it('makes a zone-independent refusal (4xx) a non-retryable start failure', () => {
    const out = classifyLaunchError(
      ec2Error('InvalidAMIID.NotFound', 400, 'no such image'),
      'us-east-1a',
    );
    expect(out).toBeInstanceOf(ApplicationFailure);
    expect((out as ApplicationFailure).type).toBe(FAILURE.startFailed);
    expect((out as ApplicationFailure).message).toBe('InvalidAMIID.NotFound: no such image');
  });

  it('makes an unknown placement group (4xx) a start failure: the next attempt creates it', () => {
    const out = classifyLaunchError(
      ec2Error('InvalidPlacementGroup.Unknown', 400, "The placement group 'g' is unknown."),
      'us-east-1a',
    );
    expect((out as ApplicationFailure).type).toBe(FAILURE.startFailed);
    expect((out as ApplicationFailure).details).toEqual([
      { zone: 'us-east-1a', code: 'InvalidPlacementGroup.Unknown' },
    ]);
  });

  it('hands throttling back unchanged, for the activity retry policy to back off', () => {
    const err = ec2Error('RequestLimitExceeded', 503);
    expect(classifyLaunchError(err, 'us-east-1a')).toBe(err);
  });

  it('hands other server errors and transport faults back unchanged (retried in place)', () => {
    const server = ec2Error('InternalError', 500);
    expect(classifyLaunchError(server, 'us-east-1a')).toBe(server);
    const transport = new Error('socket hang up');
    expect(classifyLaunchError(transport, 'us-east-1a')).toBe(transport);
  });
});
