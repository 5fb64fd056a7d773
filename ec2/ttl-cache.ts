import { LRUCache } from 'lru-cache';

/**
 * A TTL cache whose concurrent loads of one key share one call: lru-cache
 * with `ttl` and `fetchMethod` (its `fetch` hands a caller the load in
 * flight), on the injected clock (its `perf`). A failed load is not kept,
 * unless `load` answers its failure as a value with a TTL of its own
 * (`setTtl`). TTLs are the named constants of core/cache-ttl.ts.
 *
 * An answer serves while its age is under `ttlMs` (what the tests pin, on
 * whole milliseconds; lru-cache's own rule keeps it one millisecond more, so
 * it is handed `ttlMs - 1`). Its age counts from when it came back
 * (lru-cache's rule; the hand-written caches counted from the ask, which for
 * the minutes and hours kept here is the same). The zone cache, whose 5 s
 * count from the ask and whose 0 means "never kept", stays hand-written
 * (ec2/zones.ts).
 */
export type LoadingCache<V extends NonNullable<unknown>, C = undefined> = LRUCache<string, V, C>;

/** lru-cache keeps an entry while its age is at most `ttl`, and takes 0 as "forever". */
function lruTtl(ms: number): number {
  if (!Number.isInteger(ms) || ms < 2) {
    throw new RangeError(`a cache lifetime must be a whole number of milliseconds ≥ 2, not ${ms}`);
  }
  return ms - 1;
}

export function loadingCache<V extends NonNullable<unknown>, C = undefined>(options: {
  ttlMs: number;
  now: () => number;
  /** `context`: what the first caller of `load` handed `fetch` (the query a key stands for). */
  load: (key: string, context: C, setTtl: (ms: number) => void) => Promise<V>;
  /**
   * Keys kept at most (regions, zones, images: a handful). Evicting a key
   * whose load is in flight aborts it and its waiters reject ("abandoned"),
   * so never key a loading cache per machine or per instance type.
   */
  max?: number;
}): LoadingCache<V, C> {
  const { now, load } = options;
  return new LRUCache<string, V, C>({
    max: options.max ?? 1000,
    ttl: lruTtl(options.ttlMs),
    // lru-cache takes a start of 0 as "no TTL": a clock a test starts at 0 is moved on by one
    perf: { now: () => now() + 1 },
    // no reading of the clock kept between calls: a test's clock moves between them
    ttlResolution: 0,
    fetchMethod: (key, _stale, { options: set, context }) =>
      load(key, context, (ms) => {
        set.ttl = lruTtl(ms);
      }),
  });
}

/** The value for `key`, loaded when missing or expired (a load in flight is shared). */
export async function fetchLoaded<V extends NonNullable<unknown>, C>(
  cache: LoadingCache<V, C>,
  key: string,
  context: C,
): Promise<V> {
  // lru-cache's overloads of `fetch` pick on the context's type; one generic call goes through `unknown`
  const value = await (cache as LRUCache<string, V, unknown>).fetch(key, { context });
  // only an aborted load answers nothing, and nothing here aborts one
  if (value === undefined) throw new Error(`the load of ${key} was abandoned`);
  return value;
}
