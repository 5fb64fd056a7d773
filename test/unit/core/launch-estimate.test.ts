import {
  EC2_INSTANCE_BUCKET,
  EC2_REQUEST_BUCKET,
  estimateLaunch,
  MAX_INSTANCES_PER_CALL,
  tokenAvailableAt,
  type LaunchBudget,
} from '../../../core/launch-estimate';

const budget: LaunchBudget = {
  requests: EC2_REQUEST_BUCKET,
  instances: EC2_INSTANCE_BUCKET,
  maxPerCall: MAX_INSTANCES_PER_CALL,
  batchWaitSeconds: 1,
  roundTripSeconds: 2,
};

describe('tokenAvailableAt: a full bucket gives its burst at once, then its rate', () => {
  it.each([
    [{ burst: 5, perSecond: 2 }, 1, 0],
    [{ burst: 5, perSecond: 2 }, 5, 0],
    [{ burst: 5, perSecond: 2 }, 6, 0.5],
    [{ burst: 5, perSecond: 2 }, 25, 10],
    [{ burst: 1000, perSecond: 2 }, 1200, 100],
    [{ burst: 1, perSecond: 0 }, 2, Number.POSITIVE_INFINITY],
  ])('%o: token %i at %d s', (bucket, n, seconds) => {
    expect(tokenAvailableAt(bucket, n)).toBe(seconds);
  });
});

describe('estimateLaunch', () => {
  it('launches nothing in no time and says nothing', () => {
    expect(estimateLaunch([], budget)).toEqual({ seconds: 0, calls: 0, notes: [] });
    expect(estimateLaunch([0, 0], budget)).toEqual({ seconds: 0, calls: 0, notes: [] });
  });

  it('within both bursts: the batch wait and one round trip', () => {
    // 3 machines in 3 zones: 3 calls, 3 instances, both within the burst
    expect(estimateLaunch([1, 1, 1], budget)).toEqual({ seconds: 3, calls: 3, notes: [] });
    // 1,000 machines over 5 zones: 5 calls, 1,000 instances: still the burst
    expect(estimateLaunch([200, 200, 200, 200, 200], budget)).toEqual({
      seconds: 3,
      calls: 5,
      notes: [],
    });
  });

  it("over the instance bucket: the rest at its rate, and a note in the contract's words", () => {
    // 1,200 over 6 zones: 1,000 at once, 200 more at 2 a second = 100 s
    const e = estimateLaunch([200, 200, 200, 200, 200, 200], budget);
    expect(e.notes).toEqual([
      '1,200 machines over the next 100 s: 1,000 at once, then 2 a second',
      '6 RunInstances calls over the next 1 s: 5 at once, then 2 a second',
    ]);
    expect(e.calls).toBe(6);
    expect(e.seconds).toBe(1 + 100 + 2);
  });

  it('over the request bucket: calls paced at its rate', () => {
    // 25 specs (e.g. 25 zones × types): 5 at once, 20 more at 2 a second = 10 s
    const e = estimateLaunch(
      Array.from({ length: 25 }, () => 1),
      budget,
    );
    expect(e).toEqual({
      seconds: 1 + 10 + 2,
      calls: 25,
      notes: ['25 RunInstances calls over the next 10 s: 5 at once, then 2 a second'],
    });
  });

  it('a batch larger than one call takes several calls', () => {
    const e = estimateLaunch([2500], { ...budget, instances: { burst: 5000, perSecond: 2 } });
    expect(e.calls).toBe(3);
    expect(e.seconds).toBe(3);
  });

  it('the slower bucket decides', () => {
    const slowCalls = { ...budget, requests: { burst: 1, perSecond: 0.1 } };
    // 3 calls: the 3rd token 20 s away; instances within their burst
    expect(estimateLaunch([1, 1, 1], slowCalls).seconds).toBe(1 + 20 + 2);
    const fewInstances = { ...budget, instances: { burst: 2, perSecond: 1 } };
    // 4 instances: the 4th 2 s away; one call
    expect(estimateLaunch([4], fewInstances)).toEqual({
      seconds: 1 + 2 + 2,
      calls: 1,
      notes: ['4 machines over the next 2 s: 2 at once, then 1 a second'],
    });
  });
});
