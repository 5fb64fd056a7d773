import { AdminBadRequestError } from '../../../local/ec2-proxy/faults';
import {
  actionFromLimitKey,
  parseLimitSet,
  RequestLimiter,
  ThrottleBucket,
} from '../../../local/ec2-proxy/limits';

function fakeClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

function takeAll(bucket: ThrottleBucket, max = 100): number {
  let n = 0;
  while (n < max && bucket.take()) n += 1;
  return n;
}

describe('ThrottleBucket', () => {
  it('allows a burst, then refuses until tokens refill', () => {
    const clock = fakeClock();
    const bucket = new ThrottleBucket({ burst: 5, refillPerSecond: 2 }, clock.now);
    expect(takeAll(bucket)).toBe(5);
    expect(bucket.take()).toBe(false);
    clock.advance(499);
    expect(bucket.take()).toBe(false);
    clock.advance(1);
    expect(bucket.take()).toBe(true);
    expect(bucket.take()).toBe(false);
  });

  it('never holds more than the burst', () => {
    const clock = fakeClock();
    const bucket = new ThrottleBucket({ burst: 3, refillPerSecond: 10 }, clock.now);
    clock.advance(60_000);
    expect(takeAll(bucket)).toBe(3);
  });

  it('keeps fractional refill between calls', () => {
    const clock = fakeClock();
    const bucket = new ThrottleBucket({ burst: 1, refillPerSecond: 4 }, clock.now);
    expect(bucket.take()).toBe(true);
    clock.advance(100);
    expect(bucket.take()).toBe(false);
    clock.advance(150);
    expect(bucket.take()).toBe(true);
  });

  it('does not refill at rate 0', () => {
    const clock = fakeClock();
    const bucket = new ThrottleBucket({ burst: 2, refillPerSecond: 0 }, clock.now);
    expect(takeAll(bucket)).toBe(2);
    clock.advance(3_600_000);
    expect(bucket.take()).toBe(false);
  });
});

describe('RequestLimiter', () => {
  it('limits only the actions it has buckets for, keyed by lower-camel names', () => {
    const clock = fakeClock();
    const limiter = new RequestLimiter(clock.now);
    expect(limiter.allow('RunInstances', 'us-east-1')).toBe(true);
    limiter.set({ runInstances: { burst: 1, refillPerSecond: 1 } });
    expect(limiter.allow('RunInstances', 'us-east-1')).toBe(true);
    expect(limiter.allow('RunInstances', 'us-east-1')).toBe(false);
    expect(limiter.allow('DescribeInstances', 'us-east-1')).toBe(true);
    expect(limiter.current()).toEqual({ runInstances: { burst: 1, refillPerSecond: 1 } });
    limiter.clear();
    expect(limiter.allow('RunInstances', 'us-east-1')).toBe(true);
    expect(limiter.current()).toEqual({});
  });

  it('keeps one bucket per Region', () => {
    const limiter = new RequestLimiter(fakeClock().now);
    limiter.set({ runInstances: { burst: 1, refillPerSecond: 0 } });
    expect(limiter.allow('RunInstances', 'us-east-1')).toBe(true);
    expect(limiter.allow('RunInstances', 'us-east-1')).toBe(false);
    expect(limiter.allow('RunInstances', 'us-west-2')).toBe(true);
    expect(limiter.allow('RunInstances', 'us-west-2')).toBe(false);
  });

  it('starts every bucket full when limits are set again', () => {
    const clock = fakeClock();
    const limiter = new RequestLimiter(clock.now);
    limiter.set({ terminateInstances: { burst: 1, refillPerSecond: 0 } });
    expect(limiter.allow('TerminateInstances', 'us-east-1')).toBe(true);
    expect(limiter.allow('TerminateInstances', 'us-east-1')).toBe(false);
    limiter.set({ terminateInstances: { burst: 1, refillPerSecond: 0 } });
    expect(limiter.allow('TerminateInstances', 'us-east-1')).toBe(true);
  });
});

describe('parseLimitSet', () => {
  const known = new Set(['RunInstances', 'DescribeInstances']);
  const isKnown = (action: string): boolean => known.has(action);

  it('accepts buckets for known actions', () => {
    expect(
      parseLimitSet(
        {
          runInstances: { burst: 5, refillPerSecond: 2 },
          describeInstances: { burst: 100, refillPerSecond: 0.5 },
        },
        isKnown,
      ),
    ).toEqual({
      runInstances: { burst: 5, refillPerSecond: 2 },
      describeInstances: { burst: 100, refillPerSecond: 0.5 },
    });
    expect(parseLimitSet({}, isKnown)).toEqual({});
  });

  it('maps keys to EC2 action names', () => {
    expect(actionFromLimitKey('runInstances')).toBe('RunInstances');
  });

  it.each<[string, unknown, RegExp]>([
    ['a non-object body', 'x', /must be a JSON object/],
    [
      'an unknown action',
      { runInstance: { burst: 1, refillPerSecond: 1 } },
      /unknown field "runInstance"/,
    ],
    [
      'an upper-camel key',
      { RunInstances: { burst: 1, refillPerSecond: 1 } },
      /unknown field "RunInstances"/,
    ],
    ['a non-object bucket', { runInstances: 5 }, /"runInstances" must be an object/],
    [
      'an unknown bucket field',
      { runInstances: { burst: 1, refillPerSecond: 1, max: 2 } },
      /unknown field "runInstances.max"/,
    ],
    [
      'a missing burst',
      { runInstances: { refillPerSecond: 1 } },
      /"runInstances.burst" must be an integer/,
    ],
    [
      'a fractional burst',
      { runInstances: { burst: 1.5, refillPerSecond: 1 } },
      /burst" must be an integer/,
    ],
    [
      'a zero burst',
      { runInstances: { burst: 0, refillPerSecond: 1 } },
      /burst" must be an integer of at least 1/,
    ],
    [
      'a string rate',
      { runInstances: { burst: 1, refillPerSecond: '2' } },
      /refillPerSecond" must be a number/,
    ],
    [
      'a negative rate',
      { runInstances: { burst: 1, refillPerSecond: -1 } },
      /refillPerSecond" must be a number of at least 0/,
    ],
  ])('refuses %s', (_label, body, message) => {
    expect(() => parseLimitSet(body, isKnown)).toThrow(AdminBadRequestError);
    expect(() => parseLimitSet(body, isKnown)).toThrow(message);
  });
});
