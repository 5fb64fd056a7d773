import { FAILURE } from '../../../temporal/failures';
import { afterClaimFailure, afterLaunchFailure } from '../../../workflows/failover';

describe('afterClaimFailure', () => {
  it('ends the pass in error when EC2 refused what no zone can fix', () => {
    expect(afterClaimFailure(FAILURE.ec2Refused, 'UnauthorizedOperation: no', [], 'x')).toEqual({
      kind: 'error',
    });
  });

  it('spends the attempt on a contended claim, its message the cause', () => {
    expect(afterClaimFailure(FAILURE.startFailed, 'claim contended', ['us-east-1a'], 'x')).toEqual({
      kind: 'spend-attempt',
      lastError: 'claim contended',
    });
  });

  it('with no zone left and none failed yet, the claim’s own message is the cause', () => {
    expect(afterClaimFailure(FAILURE.noSuitableZone, 'no suitable zone', [], 'earlier')).toEqual({
      kind: 'spend-attempt',
      lastError: 'no suitable zone',
    });
  });

  it('after one zone failed, that zone’s cause stays the cause', () => {
    expect(
      afterClaimFailure(FAILURE.noSuitableZone, 'no suitable zone', ['us-east-1a'], 'capacity'),
    ).toEqual({ kind: 'spend-attempt', lastError: 'capacity' });
  });

  it('after several zones failed, the cause names every zone tried', () => {
    expect(
      afterClaimFailure(
        FAILURE.noSuitableZone,
        'no suitable zone',
        ['us-east-1a', 'us-east-1b'],
        'InsufficientInstanceCapacity: none',
      ),
    ).toEqual({
      kind: 'spend-attempt',
      lastError:
        'every zone tried failed (us-east-1a, us-east-1b); the last: InsufficientInstanceCapacity: none',
    });
  });

  it.each([[FAILURE.zoneUnavailable], [FAILURE.machineGone], [undefined], ['Something']])(
    'leaves %s to the caller to re-throw',
    (type) => {
      expect(afterClaimFailure(type, 'm', [], 'x')).toEqual({ kind: 'rethrow' });
    },
  );
});

describe('afterLaunchFailure', () => {
  it.each([
    [FAILURE.machineGone, true, 'stop'],
    [FAILURE.machineGone, false, 'stop'],
    [FAILURE.ec2Refused, true, 'error'],
    [FAILURE.zoneUnavailable, true, 'next-zone'],
    [FAILURE.zoneUnavailable, false, 'next-zone'],
    [FAILURE.startFailed, true, 'spend-attempt'],
    [FAILURE.startFailed, false, 'spend-attempt'],
    // out of retries or timed out: a batched launch may have gone out
    [undefined, true, 'spend-attempt-may-have-launched'],
    ['ActivityTimeout', true, 'spend-attempt-may-have-launched'],
    // before batched launches, such a failure failed the workflow task
    [undefined, false, 'rethrow'],
    ['ActivityTimeout', false, 'rethrow'],
  ])('%s (batched %s) → %s', (type, batched, decision) => {
    expect(afterLaunchFailure(type, batched)).toBe(decision);
  });
});
