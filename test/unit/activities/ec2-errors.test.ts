import { EC2ServiceException } from '@aws-sdk/client-ec2';
import { ApplicationFailure } from '@temporalio/common';
import {
  classifyError,
  classifyLaunchError,
  ec2ErrorCode,
  isThrottling,
  isZoneSpecific,
  refusedOr,
} from '../../../ec2/errors';
import { refusingPermanent } from '../../../activities/failures';
import { Ec2RetryStrategy, throttlesToCaller } from '../../../ec2/client';
import { FAILURE } from '../../../temporal/failures';

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

  it('makes an image that does not exist a refusal no attempt can fix (error at once)', () => {
    const out = classifyLaunchError(
      ec2Error('InvalidAMIID.NotFound', 400, 'no such image'),
      'us-east-1a',
    );
    expect(out).toBeInstanceOf(ApplicationFailure);
    expect((out as ApplicationFailure).type).toBe(FAILURE.ec2Refused);
    expect((out as ApplicationFailure).nonRetryable).toBe(true);
    expect((out as ApplicationFailure).message).toBe('InvalidAMIID.NotFound: no such image');
  });

  it('makes a zone-independent refusal a later attempt may not meet (a limit) a start failure', () => {
    const out = classifyLaunchError(
      ec2Error('VcpuLimitExceeded', 400, 'You have requested more vCPU capacity'),
      'us-east-1a',
    );
    expect((out as ApplicationFailure).type).toBe(FAILURE.startFailed);
    expect((out as ApplicationFailure).message).toBe(
      'VcpuLimitExceeded: You have requested more vCPU capacity',
    );
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

/** A transport failure as node's resolver raises it (the SDK passes it through). */
function dnsError(host: string): Error {
  return Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), {
    code: 'ENOTFOUND',
    $metadata: { attempts: 1 },
  });
}

describe('classifyError: the one place an error is transient or permanent', () => {
  it.each([
    ['UnauthorizedOperation', 403, 'You are not authorized to perform this operation.'],
    ['AuthFailure', 401, 'AWS was not able to validate the provided access credentials'],
    ['OptInRequired', 401, 'You are not subscribed to this service.'],
    ['InvalidAMIID.NotFound', 400, "The image id '[ami-1]' does not exist"],
    ['InvalidAMIID.Malformed', 400, 'Invalid id: "ami-x"'],
    ['InvalidParameterValue', 400, 'Value (xx) for parameter groupId is invalid.'],
    ['OperationNotPermitted', 400, "The instance 'i-1' may not be terminated."],
    ['InvalidSubnetID.NotFound', 400, "The subnet ID 'subnet-1' does not exist"],
  ])('%s (HTTP %d) is permanent', (code, status, message) => {
    expect(classifyError(ec2Error(code, status, message))).toBe('permanent');
  });

  it('a DNS failure is transient: the SDK retries it, and a blip while recording must not give up a launched instance', () => {
    expect(classifyError(dnsError('dynamodb.us-east-1.amazonaws.com'))).toBe('transient');
    expect(classifyError(dnsError('ec2.us-east-9.amazonaws.com'))).toBe('transient');
  });

  it.each([
    ['PendingVerification', 'Your account is currently being verified.'],
    ['InvalidAMIID.Unavailable', "The image id '[ami-1]' is not available"],
    [
      'InvalidParameterValue',
      'Value (web) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name',
    ],
  ])('%s clears by itself, so it is transient', (code, message) => {
    expect(classifyError(ec2Error(code, 400, message))).toBe('transient');
  });

  it('an AuthFailure after the SDK corrected its clock is transient (the retry is signed right)', () => {
    const skewed = Object.assign(ec2Error('AuthFailure', 401, 'Signature expired'), {
      $metadata: { httpStatusCode: 401, clockSkewCorrected: true },
    });
    expect(classifyError(skewed)).toBe('transient');
  });

  it.each([
    [
      'InvalidParameterValue',
      'Your requested instance type is not supported in the Availability Zone you requested (us-east-1e).',
    ],
    [
      'Unsupported',
      'Your requested instance type (m5.8xlarge) is not supported in your requested Availability Zone (us-east-1e).',
    ],
    ['InsufficientInstanceCapacity', 'We currently do not have sufficient capacity'],
  ])('%s naming a zone is zone-specific, not permanent', (code, message) => {
    expect(
      classifyError(ec2Error(code, code.startsWith('Insufficient') ? 500 : 400, message)),
    ).toBe('zone');
  });

  it.each([
    ['RequestLimitExceeded', 503, 'throttling'],
    ['Unavailable', 503, 'transient'],
    ['InternalError', 500, 'transient'],
    ['VcpuLimitExceeded', 400, 'transient'],
    ['InvalidInstanceID.NotFound', 400, 'transient'],
  ] as const)('%s (HTTP %d) is %s', (code, status, kind) => {
    expect(classifyError(ec2Error(code, status))).toBe(kind);
  });

  it('a placement group refusing a partition is no permanent refusal: the next attempt claims afresh', () => {
    const err = ec2Error(
      'InvalidParameterValue',
      400,
      'The specified partition number 4 is not valid for placement group g.',
    );
    expect(classifyError(err)).toBe('transient');
    expect((classifyLaunchError(err, 'us-east-1a') as ApplicationFailure).type).toBe(
      FAILURE.startFailed,
    );
  });

  it('transport faults other than a missing endpoint are transient', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5000'), {
      code: 'ECONNREFUSED',
    });
    expect(classifyError(refused)).toBe('transient');
    expect(classifyError(new Error('socket hang up'))).toBe('transient');
  });
});

describe('refusedOr', () => {
  it('turns a permanent error into a non-retryable Ec2Refused failure with the code first', () => {
    const out = refusedOr(
      ec2Error('UnauthorizedOperation', 403, 'You are not authorized to perform this operation.'),
    );
    expect(out).toBeInstanceOf(ApplicationFailure);
    const failure = out as ApplicationFailure;
    expect(failure.type).toBe(FAILURE.ec2Refused);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      'UnauthorizedOperation: You are not authorized to perform this operation.',
    );
    expect(failure.details).toEqual([{ code: 'UnauthorizedOperation' }]);
  });

  it('leaves a DNS failure as it is, for the retry policy', () => {
    const dns = dnsError('ec2.us-east-9.amazonaws.com');
    expect(refusedOr(dns)).toBe(dns);
  });

  it('leaves transient errors and failures already typed as they are', () => {
    const transient = ec2Error('Unavailable', 503);
    expect(refusedOr(transient)).toBe(transient);
    const typed = ApplicationFailure.create({ type: FAILURE.zoneUnavailable, nonRetryable: true });
    expect(refusedOr(typed)).toBe(typed);
  });
});

describe('refusingPermanent', () => {
  it('wraps each activity: permanent errors leave as Ec2Refused, others unchanged', async () => {
    const throttled = ec2Error('RequestLimitExceeded', 503);
    const acts = refusingPermanent({
      denied: () => Promise.reject(ec2Error('AuthFailure', 401, 'bad credentials')),
      throttled: () => Promise.reject(throttled),
      fine: (n: number) => Promise.resolve(n * 2),
    });
    await expect(acts.denied()).rejects.toMatchObject({
      type: FAILURE.ec2Refused,
      message: 'AuthFailure: bad credentials',
      nonRetryable: true,
    });
    await expect(acts.throttled()).rejects.toBe(throttled);
    await expect(acts.fine(21)).resolves.toBe(42);
  });
});

describe('Ec2RetryStrategy', () => {
  it('never retries in place an error no retry can fix', async () => {
    const strategy = new Ec2RetryStrategy();
    const token = await strategy.acquireInitialRetryToken('ec2');
    await expect(
      strategy.refreshRetryTokenForRetry(
        token as never,
        {
          error: ec2Error('UnauthorizedOperation', 403, 'You are not authorized.'),
          errorType: 'CLIENT_ERROR',
        } as never,
      ),
    ).rejects.toThrow('permanent errors are not retried in place');
  });

  it('retries a throttled call, unless its caller paces it (throttlesToCaller): then it goes back to the caller', async () => {
    const strategy = new Ec2RetryStrategy();
    const info = {
      error: ec2Error('RequestLimitExceeded', 503, 'Request limit exceeded.'),
      errorType: 'THROTTLING',
    } as never;
    const token = await strategy.acquireInitialRetryToken('ec2');
    const retried = await strategy.refreshRetryTokenForRetry(token as never, info);
    expect(retried.getRetryCount()).toBe(1);
    const paced = await strategy.acquireInitialRetryToken('ec2');
    await expect(
      throttlesToCaller(() => strategy.refreshRetryTokenForRetry(paced as never, info)),
    ).rejects.toThrow('a throttled call paced by its caller is repaced there');
    // other errors of a paced call are retried as usual
    const transient = {
      error: ec2Error('InternalError', 500, 'An internal error has occurred.'),
      errorType: 'TRANSIENT',
    } as never;
    const again = await throttlesToCaller(() =>
      strategy.refreshRetryTokenForRetry(paced as never, transient),
    );
    expect(again.getRetryCount()).toBe(1);
  });
});
