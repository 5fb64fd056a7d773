import type { EC2Client } from '@aws-sdk/client-ec2';
import { CapacityMemory } from '../../../activities/capacity-memory';
import { Coalescer, Withdrawn, type Settled } from '../../../activities/coalescer';
import { Ec2RetryStrategy } from '../../../ec2/client';
import { TokenBucket } from '../../../ec2/token-bucket';
import { ZoneCache } from '../../../ec2/zones';

describe('ZoneCache', () => {
  function fakeEc2(states: () => Record<string, string>) {
    const calls = { n: 0 };
    let release: (() => void) | undefined;
    const gate = { hold: false };
    const ec2 = {
      send: async () => {
        calls.n += 1;
        if (gate.hold) await new Promise<void>((r) => (release = r));
        return {
          AvailabilityZones: Object.entries(states()).map(([ZoneName, State]) => ({
            ZoneName,
            State,
            ZoneType: 'availability-zone',
          })),
        };
      },
    } as unknown as EC2Client;
    return { ec2, calls, gate, release: () => release?.() };
  }

  it('asks EC2 at most once per TTL, and callers during a call share its answer', async () => {
    let now = 0;
    const states = { 'us-east-1a': 'available', 'us-east-1b': 'available' };
    const fake = fakeEc2(() => states);
    const cache = new ZoneCache(fake.ec2, 5000, () => now);
    fake.gate.hold = true;
    const both = Promise.all([cache.zones(), cache.zones(), cache.zones()]);
    await new Promise((r) => setImmediate(r));
    fake.release();
    const answers = await both;
    expect(fake.calls.n).toBe(1);
    expect(answers[2]).toEqual([
      { name: 'us-east-1a', state: 'available' },
      { name: 'us-east-1b', state: 'available' },
    ]);
    fake.gate.hold = false;
    states['us-east-1b'] = 'impaired';
    now = 4999;
    expect((await cache.zones())[1]).toEqual({ name: 'us-east-1b', state: 'available' });
    now = 5000;
    expect((await cache.zones())[1]).toEqual({ name: 'us-east-1b', state: 'impaired' });
    expect(fake.calls.n).toBe(2);
  });

  it('never keeps states longer than 5 s, whatever it is given, and 0 asks every time', async () => {
    let now = 0;
    const fake = fakeEc2(() => ({ 'us-east-1a': 'available' }));
    const capped = new ZoneCache(fake.ec2, 60_000, () => now);
    await capped.zones();
    now = 5000;
    await capped.zones();
    expect(fake.calls.n).toBe(2);
    const uncached = new ZoneCache(fake.ec2, 0, () => now);
    await uncached.zones();
    await uncached.zones();
    expect(fake.calls.n).toBe(4);
  });
});

describe('CapacityMemory', () => {
  it('remembers a type short in a zone for its TTL, per region and type, until a launch there succeeds', () => {
    let now = 0;
    const memory = new CapacityMemory(180_000, () => now);
    memory.remember('us-east-1', 't3.small', 'us-east-1a');
    const zones = ['us-east-1a', 'us-east-1b'];
    expect(memory.short('us-east-1', 't3.small', zones)).toEqual(['us-east-1a']);
    expect(memory.short('us-east-1', 't3.large', zones)).toEqual([]);
    expect(memory.short('us-west-2', 't3.small', ['us-east-1a'])).toEqual([]);
    now = 179_999;
    expect(memory.short('us-east-1', 't3.small', zones)).toEqual(['us-east-1a']);
    now = 180_000;
    expect(memory.short('us-east-1', 't3.small', zones)).toEqual([]);
    memory.remember('us-east-1', 't3.small', 'us-east-1b');
    memory.forget('us-east-1', 't3.small', 'us-east-1b');
    expect(memory.short('us-east-1', 't3.small', zones)).toEqual([]);
  });

  it('remembers nothing with a TTL of 0', () => {
    const memory = new CapacityMemory(0);
    memory.remember('us-east-1', 't3.small', 'us-east-1a');
    expect(memory.short('us-east-1', 't3.small', ['us-east-1a'])).toEqual([]);
  });
});

describe('Coalescer', () => {
  const ok = <T>(value: T): Settled<T> => ({ ok: true, value });

  it('sends requests of one key arriving within the idle window as one batch, in order, each answered on its own', async () => {
    const sent: Array<[string, number[]]> = [];
    const c = new Coalescer<number, string>(
      { idleMs: 20, maxMs: 1000, maxSize: 100 },
      (key, reqs) => {
        sent.push([key, reqs]);
        return Promise.resolve(
          reqs.map((n) => (n === 3 ? { ok: false, error: new Error('three') } : ok(`${key}:${n}`))),
        );
      },
    );
    const a = [1, 2, 3].map((n) => c.submit('a', n).catch((e: Error) => e.message));
    const b = c.submit('b', 9);
    expect(c.waiting).toBe(4);
    expect(await Promise.all(a)).toEqual(['a:1', 'a:2', 'three']);
    expect(await b).toBe('b:9');
    expect(sent).toEqual([
      ['a', [1, 2, 3]],
      ['b', [9]],
    ]);
  });

  it('sends at once when full, and fails every request of a batch whose send throws', async () => {
    const sizes: number[] = [];
    const c = new Coalescer<number, number>(
      { idleMs: 10_000, maxMs: 10_000, maxSize: 2 },
      (_k, reqs) => {
        sizes.push(reqs.length);
        if (reqs[0] === 5) return Promise.reject(new Error('EC2 is down'));
        return Promise.resolve(reqs.map(ok));
      },
    );
    expect(await Promise.all([c.submit('k', 1), c.submit('k', 2)])).toEqual([1, 2]);
    const failed = await Promise.allSettled([c.submit('k', 5), c.submit('k', 6)]);
    expect(failed.map((f) => (f.status === 'rejected' ? (f.reason as Error).message : f))).toEqual([
      'EC2 is down',
      'EC2 is down',
    ]);
    expect(sizes).toEqual([2, 2]);
  });

  it('sends by the max window even while requests keep arriving', async () => {
    const sent: number[][] = [];
    const c = new Coalescer<number, number>(
      { idleMs: 50, maxMs: 120, maxSize: 1000 },
      (_k, reqs) => {
        sent.push(reqs);
        return Promise.resolve(reqs.map(ok));
      },
    );
    const all: Array<Promise<number>> = [];
    for (let i = 0; i < 10; i++) {
      all.push(c.submit('k', i));
      await new Promise((r) => setTimeout(r, 30));
    }
    await Promise.all(all);
    // never idle for 50 ms, so only the 120 ms window cut the stream
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.flat()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe('Ec2RetryStrategy', () => {
  const error = (name: string, status: number) =>
    Object.assign(new Error(`${name}: nope`), { name, $metadata: { httpStatusCode: status } });

  it('hands capacity errors back at once (EC2 answers them with HTTP 500), and retries throttling', async () => {
    const strategy = new Ec2RetryStrategy(3);
    const token = await strategy.acquireInitialRetryToken('ec2');
    await expect(
      strategy.refreshRetryTokenForRetry(
        token as never,
        {
          error: error('InsufficientInstanceCapacity', 500),
          errorType: 'TRANSIENT',
        } as never,
      ),
    ).rejects.toThrow('capacity errors are not retried in place');
    const again = await strategy.refreshRetryTokenForRetry(
      token as never,
      {
        error: error('RequestLimitExceeded', 503),
        errorType: 'THROTTLING',
      } as never,
    );
    expect(again.getRetryCount()).toBe(1);
    expect(strategy.mode).toBe('adaptive');
  });
});

describe('TokenBucket', () => {
  it('gives the burst at once, then one token per 1/rate seconds, first come first served', async () => {
    let now = 0;
    const bucket = new TokenBucket(2, 1000, () => now); // 1 token per ms: fast enough for real timers
    const order: number[] = [];
    const takes = [1, 2, 3, 4].map((n) => bucket.take().then(() => order.push(n)));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([1, 2]);
    expect(bucket.waiting).toBe(2);
    now = 2; // two tokens' worth of time
    await Promise.all(takes);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('takes a token given back (a call not made) as if never taken: the next take is served at once, never past the burst', async () => {
    const now = 0;
    const bucket = new TokenBucket(1, 1, () => now); // no time passes: no refill
    await bucket.take();
    let served = false;
    const next = bucket.take().then(() => (served = true));
    await new Promise((r) => setImmediate(r));
    expect(served).toBe(false);
    // the first take's call was not made: its token serves the one waiting
    bucket.refund();
    await next;
    expect(served).toBe(true);
    expect(bucket.waiting).toBe(0);
    // a refund into a full bucket keeps it at its burst: one take at once, the next waits
    bucket.refund();
    bucket.refund();
    const order: number[] = [];
    void bucket.take().then(() => order.push(1));
    void bucket.take().then(() => order.push(2));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([1]);
    expect(bucket.waiting).toBe(1);
    bucket.refund();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([1, 2]);
  });
});

describe('Coalescer with a gate', () => {
  it('keeps taking requests into a batch while it waits for the gate, so scarce calls carry more', async () => {
    let open: (() => void) | undefined;
    const sent: number[][] = [];
    const c = new Coalescer<number, number>(
      { idleMs: 5, maxMs: 50, maxSize: 100 },
      (_k, reqs) => {
        sent.push(reqs);
        return Promise.resolve(reqs.map((value) => ({ ok: true as const, value })));
      },
      () => new Promise<void>((r) => (open = r)),
    );
    const first = c.submit('k', 1);
    await new Promise((r) => setTimeout(r, 30)); // the window closed: waiting for the gate
    expect(open).toBeDefined();
    const more = [c.submit('k', 2), c.submit('k', 3)];
    open!();
    expect(await Promise.all([first, ...more])).toEqual([1, 2, 3]);
    expect(sent).toEqual([[1, 2, 3]]);
  });
});

describe('Coalescer with a gate, its requests withdrawn while the batch waits there', () => {
  /** A gate each batch waits at until the test opens it with a value (`gated`: its calls). */
  function heldGate() {
    const opens: Array<(value: string) => void> = [];
    let called!: () => void;
    let next = new Promise<void>((r) => (called = r));
    return {
      gate: () =>
        new Promise<string>((resolve) => {
          opens.push(resolve);
          called();
        }),
      /** Resolves once the gate has been called `n` times in all. */
      calls: async (n: number) => {
        while (opens.length < n) {
          await next;
          next = new Promise<void>((r) => (called = r));
        }
      },
      open: (i: number, value: string) => opens[i]!(value),
    };
  }

  /** Waits until the gate's answer has been acted on (the coalescer's `then`, then `send`). */
  const acted = () => new Promise((r) => setImmediate(r));

  it('drops a batch whose requests were all withdrawn: nothing sent, what the gate gave handed back, the key free for the next batch', async () => {
    const sent: number[][] = [];
    const dropped: Array<[string, string | undefined]> = [];
    const held = heldGate();
    const c = new Coalescer<number, number, string>(
      { idleMs: 5, maxMs: 50, maxSize: 100 },
      (_k, reqs) => {
        sent.push([...reqs]);
        return Promise.resolve(reqs.map((value) => ({ ok: true as const, value })));
      },
      held.gate,
      { oneAtATime: { maxWaitMs: 600_000 }, dropped: (key, gated) => dropped.push([key, gated]) },
    );
    const a = new AbortController();
    const b = new AbortController();
    const answers = [c.submit('k', 1, a.signal), c.submit('k', 2, b.signal)].map((p) =>
      p.catch((e: unknown) => e),
    );
    // the window closed: the batch waits at the gate, where both are withdrawn
    await held.calls(1);
    a.abort();
    b.abort();
    const [first, second] = await Promise.all(answers);
    expect(first).toBeInstanceOf(Withdrawn);
    expect(second).toBeInstanceOf(Withdrawn);
    held.open(0, 'token-1');
    await acted();
    expect(sent).toEqual([]);
    expect(dropped).toEqual([['k', 'token-1']]);
    // the key's next batch does not wait for the dropped one (one at a time, 10 minutes at most)
    const third = c.submit('k', 3);
    await held.calls(2);
    held.open(1, 'token-2');
    expect(await third).toBe(3);
    expect(sent).toEqual([[3]]);
    expect(dropped).toHaveLength(1);
  });

  it('sends a batch with one request left, the withdrawn one still in it for `send` to leave out', async () => {
    const sent: Array<{ reqs: number[]; gated: string | undefined; aborted: boolean[] }> = [];
    const dropped: unknown[] = [];
    const held = heldGate();
    const signals = [new AbortController(), new AbortController()];
    const c = new Coalescer<number, number, string>(
      { idleMs: 5, maxMs: 50, maxSize: 100 },
      (_k, reqs, gated) => {
        sent.push({ reqs: [...reqs], gated, aborted: signals.map((s) => s.signal.aborted) });
        return Promise.resolve(reqs.map((value) => ({ ok: true as const, value })));
      },
      held.gate,
      { dropped: (...args) => dropped.push(args) },
    );
    const withdrawn = c.submit('k', 1, signals[0]!.signal).catch((e: unknown) => e);
    const kept = c.submit('k', 2, signals[1]!.signal);
    await held.calls(1);
    signals[0]!.abort();
    expect(await withdrawn).toBeInstanceOf(Withdrawn);
    held.open(0, 'token-1');
    expect(await kept).toBe(2);
    expect(sent).toEqual([{ reqs: [1, 2], gated: 'token-1', aborted: [true, false] }]);
    expect(dropped).toEqual([]);
  });
});

describe('Coalescer, one batch of a key at a time', () => {
  const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** A send whose calls stay open until released, in the order they came. */
  function heldSend() {
    const sent: Array<[string, number[]]> = [];
    const open: Array<(fail?: Error) => void> = [];
    const send = (key: string, reqs: number[]) => {
      sent.push([key, [...reqs]]);
      return new Promise<Array<Settled<number>>>((resolve, reject) =>
        open.push((fail) =>
          fail ? reject(fail) : resolve(reqs.map((value) => ({ ok: true as const, value }))),
        ),
      );
    };
    return { sent, open, send };
  }

  it("sends a key's next batch once the one before has settled, taking requests meanwhile; other keys do not wait", async () => {
    const { sent, open, send } = heldSend();
    const c = new Coalescer<number, number>(
      { idleMs: 5, maxMs: 50, maxSize: 100 },
      send,
      undefined,
      {
        oneAtATime: { maxWaitMs: 60_000 },
      },
    );
    const first = c.submit('m', 1);
    await tick(30);
    expect(sent).toEqual([['m', [1]]]);
    const second = [c.submit('m', 2)];
    await tick(30); // its window closed: it waits for the first
    second.push(c.submit('m', 3), c.submit('m', 4));
    const other = c.submit('n', 9);
    await tick(30);
    expect(sent).toEqual([
      ['m', [1]],
      ['n', [9]],
    ]);
    open[1]!();
    expect(await other).toBe(9);
    open[0]!();
    expect(await first).toBe(1);
    await tick(0);
    expect(sent[2]).toEqual(['m', [2, 3, 4]]);
    open[2]!();
    expect(await Promise.all(second)).toEqual([2, 3, 4]);
  });

  it('lets the next batch go after a failed one, and after maxWaitMs behind one that hangs', async () => {
    const { sent, open, send } = heldSend();
    const c = new Coalescer<number, number>(
      { idleMs: 5, maxMs: 50, maxSize: 100 },
      send,
      undefined,
      {
        oneAtATime: { maxWaitMs: 100 },
      },
    );
    const failed = c.submit('m', 1).catch((e: Error) => e.message);
    await tick(30);
    const next = c.submit('m', 2);
    await tick(30);
    expect(sent).toHaveLength(1);
    open[0]!(new Error('DynamoDB is down'));
    expect(await failed).toBe('DynamoDB is down');
    await tick(0);
    expect(sent[1]).toEqual(['m', [2]]);
    // batch 2 hangs: batch 3 waits for it no longer than 100 ms
    const started = Date.now();
    const third = c.submit('m', 3);
    while (sent.length < 3) await tick(10);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(sent[2]).toEqual(['m', [3]]);
    open[2]!();
    expect(await third).toBe(3);
    open[1]!();
    expect(await next).toBe(2);
  });
});
