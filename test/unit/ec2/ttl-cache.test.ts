import { fetchLoaded, loadingCache } from '../../../ec2/ttl-cache';

describe('loadingCache (lru-cache with ttl and fetchMethod)', () => {
  function counting(answer: (key: string, n: number) => Promise<{ n: number }>) {
    const loads: string[] = [];
    return {
      loads,
      load: (key: string) => {
        loads.push(key);
        return answer(key, loads.length);
      },
    };
  }

  it('serves an answer while its age is under the TTL, on a clock that starts at 0', async () => {
    let now = 0;
    const { loads, load } = counting((_k, n) => Promise.resolve({ n }));
    const cache = loadingCache({ ttlMs: 1000, now: () => now, load });
    expect(await fetchLoaded(cache, 'a', undefined)).toEqual({ n: 1 });
    now = 999;
    expect(await fetchLoaded(cache, 'a', undefined)).toEqual({ n: 1 });
    now = 1000;
    expect(await fetchLoaded(cache, 'a', undefined)).toEqual({ n: 2 });
    expect(await fetchLoaded(cache, 'b', undefined)).toEqual({ n: 3 });
    expect(loads).toEqual(['a', 'a', 'b']);
  });

  it('hands callers during a load that load, with the first caller’s context', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: string[] = [];
    const cache = loadingCache({
      ttlMs: 1000,
      now: () => 0,
      load: async (key, context: string) => {
        seen.push(`${key}:${context}`);
        await gate;
        return { context };
      },
    });
    const both = Promise.all([fetchLoaded(cache, 'k', 'first'), fetchLoaded(cache, 'k', 'second')]);
    release();
    const [a, b] = await both;
    expect(a).toBe(b);
    expect(a).toEqual({ context: 'first' });
    expect(seen).toEqual(['k:first']);
  });

  it('keeps no failed load: the next caller loads again', async () => {
    const { loads, load } = counting((_k, n) =>
      n === 1 ? Promise.reject(new Error('RequestLimitExceeded')) : Promise.resolve({ n }),
    );
    const cache = loadingCache({ ttlMs: 1000, now: () => 0, load });
    await expect(fetchLoaded(cache, 'a', undefined)).rejects.toThrow('RequestLimitExceeded');
    expect(await fetchLoaded(cache, 'a', undefined)).toEqual({ n: 2 });
    expect(loads).toHaveLength(2);
  });

  it('keeps an answer the load gave its own TTL that long instead', async () => {
    let now = 0;
    const loads: number[] = [];
    const cache = loadingCache({
      ttlMs: 60_000,
      now: () => now,
      load: (_key, _context, setTtl) => {
        loads.push(now);
        setTtl(100);
        return Promise.resolve({ failed: true });
      },
    });
    await fetchLoaded(cache, 'a', undefined);
    now = 99;
    await fetchLoaded(cache, 'a', undefined);
    now = 100;
    await fetchLoaded(cache, 'a', undefined);
    expect(loads).toEqual([0, 100]);
  });

  it.each([0, 1, 1.5, -5])(
    'refuses a lifetime of %p ms (lru-cache takes 0 as forever)',
    (ttlMs) => {
      expect(() => loadingCache({ ttlMs, now: () => 0, load: () => Promise.resolve({}) })).toThrow(
        `a cache lifetime must be a whole number of milliseconds ≥ 2, not ${ttlMs}`,
      );
    },
  );
});
