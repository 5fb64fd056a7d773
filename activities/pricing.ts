import {
  paginateGetProducts,
  PricingClient,
  type Filter,
  type GetProductsCommand,
} from '@aws-sdk/client-pricing';
import { PRICE_FAILURE_TTL_MS, PRICE_TTL_MS } from '../core/cache-ttl';
import { fetchLoaded, loadingCache, type LoadingCache } from '../ec2/ttl-cache';

/**
 * On-demand prices of a region's instance types, from the AWS Price List API
 * (`GetProducts`), so instance-type matching can put the cheapest fitting
 * type first (DESIGN.md: "Availability sets, price, containers").
 *
 * A lookup never fails a launch: when the Price List API cannot be read, the
 * region's prices are "unknown" (an empty map), matching falls back to the
 * least-wasteful order, and the worker's log says so.
 */

/** The Price List API's own region: it answers for every EC2 region from here. */
export const PRICING_API_REGION = 'us-east-1';
export { PRICE_FAILURE_TTL_MS, PRICE_TTL_MS } from '../core/cache-ttl';
/** A lookup (every page) that takes longer than this is given up for the fallback. */
export const PRICE_LOOKUP_TIMEOUT_MS = 30_000;

/**
 * The products whose price is what an instance launched by the provisioner
 * costs: the region's EC2 instances, Linux, shared tenancy, no pre-installed
 * software (SQL Server and the like), capacity actually used (not a reserved
 * capacity's unused share), on demand.
 */
export function priceListFilters(region: string): Filter[] {
  const match = (Field: string, Value: string): Filter => ({ Type: 'TERM_MATCH', Field, Value });
  return [
    match('regionCode', region),
    match('operatingSystem', 'Linux'),
    match('tenancy', 'Shared'),
    match('preInstalledSw', 'NA'),
    match('capacitystatus', 'Used'),
    match('marketoption', 'OnDemand'),
  ];
}

/** One instance type's on-demand price. */
export interface InstancePrice {
  instanceType: string;
  /** USD per hour. */
  usdPerHour: number;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Reads one `PriceList` entry as AWS sends it (a JSON document in a string:
 * `product.attributes.instanceType`, `terms.OnDemand.<offer>.priceDimensions.
 * <rate>.pricePerUnit.USD`, unit `Hrs`). Entries that are not an hourly
 * on-demand USD price of an instance type, or that price it at 0, give
 * undefined.
 */
export function parsePriceListItem(item: unknown): InstancePrice | undefined {
  let doc: unknown;
  try {
    doc = typeof item === 'string' ? JSON.parse(item) : JSON.parse(String(item));
  } catch {
    return undefined;
  }
  if (!isObject(doc) || !isObject(doc.product) || !isObject(doc.product.attributes)) {
    return undefined;
  }
  const instanceType = doc.product.attributes.instanceType;
  if (typeof instanceType !== 'string' || instanceType === '') return undefined;
  const onDemand = isObject(doc.terms) ? doc.terms.OnDemand : undefined;
  if (!isObject(onDemand)) return undefined;
  let best: number | undefined;
  for (const offer of Object.values(onDemand)) {
    if (!isObject(offer) || !isObject(offer.priceDimensions)) continue;
    for (const dim of Object.values(offer.priceDimensions)) {
      if (!isObject(dim) || dim.unit !== 'Hrs' || !isObject(dim.pricePerUnit)) continue;
      const usd = Number(dim.pricePerUnit.USD);
      if (!Number.isFinite(usd) || usd <= 0) continue;
      best = best === undefined ? usd : Math.min(best, usd);
    }
  }
  return best === undefined ? undefined : { instanceType, usdPerHour: best };
}

/**
 * The shape of a Pricing client's `send` that the tests' fakes answer; the
 * SDK's paginator asks for a PricingClient, so a fake is put in one
 * (test/unit/activities/pricing.test.ts).
 */
export interface PricingSender {
  send(
    command: GetProductsCommand,
    options?: { abortSignal?: AbortSignal },
  ): Promise<{
    PriceList?: unknown;
    NextToken?: string;
  }>;
}

export interface InstancePricesOptions {
  ttlMs?: number;
  failureTtlMs?: number;
  timeoutMs?: number;
  now?: () => number;
  log?: (line: string) => void;
}

/** Why a region's last lookup gave no prices (undefined once one succeeds). */
export type PriceFailure = { kind: 'timeout'; afterMs: number } | { kind: 'error'; name: string };

/**
 * How late a lookup may end past its own timeout and still have run all that
 * time: the timeout aborts it, so it ends at its timeout plus the timer's
 * lateness (milliseconds, a few hundred on a busy machine). One that ends
 * later than this cannot have been running: its process was frozen (a Lambda
 * container between invocations), so its failure says nothing about the price
 * list and it is started again rather than cached.
 */
export const FROZEN_SLACK_MS = 2_000;

/**
 * A failure kept for no time (`failureTtlMs` under the 2 ms the cache keeps
 * at least): the load rejects with it, so nothing is kept, and every caller
 * waiting on that load is answered its empty prices, as a kept failure is.
 */
class FailureNotKept extends Error {
  override readonly name = 'FailureNotKept';
  constructor(readonly prices: ReadonlyMap<string, number>) {
    super('a price lookup failure kept for no time');
  }
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

/**
 * Each region's on-demand Linux prices (USD per hour, by instance type),
 * fetched once, paged, and cached for a day; concurrent first callers share
 * one fetch. Never throws: a failed or slow lookup gives an empty map (every
 * type unpriced, so the least-wasteful order decides) for a few minutes and
 * is logged.
 */
export class InstancePrices {
  private readonly cache: LoadingCache<ReadonlyMap<string, number>>;
  private readonly lastKnown = new Map<string, ReadonlyMap<string, number>>();
  private readonly failures = new Map<string, PriceFailure>();
  private readonly failureTtlMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly log: (line: string) => void;

  /** `pricing` undefined: prices are never looked up (every type unpriced). */
  constructor(
    private readonly pricing: PricingClient | undefined,
    options: InstancePricesOptions = {},
  ) {
    this.failureTtlMs = options.failureTtlMs ?? PRICE_FAILURE_TTL_MS;
    if (!Number.isFinite(this.failureTtlMs)) {
      throw new RangeError(
        `failureTtlMs must be a finite number of milliseconds, not ${this.failureTtlMs}`,
      );
    }
    this.timeoutMs = options.timeoutMs ?? PRICE_LOOKUP_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? ((line) => console.warn(line));
    this.cache = loadingCache({
      ttlMs: options.ttlMs ?? PRICE_TTL_MS,
      now: this.now,
      load: (region, _context, setTtl) => this.lookup(region, setTtl),
    });
  }

  /**
   * The region's prices as last fetched, without waiting for a fetch (for
   * calls that must stay short); undefined when none has succeeded yet.
   */
  known(region: string): ReadonlyMap<string, number> | undefined {
    return this.lastKnown.get(region);
  }

  /** Why the region's last finished lookup gave no prices; undefined when it gave them (or none finished). */
  failure(region: string): PriceFailure | undefined {
    return this.failures.get(region);
  }

  async forRegion(region: string): Promise<ReadonlyMap<string, number>> {
    try {
      return await fetchLoaded(this.cache, region, undefined);
    } catch (err) {
      if (err instanceof FailureNotKept) return err.prices;
      throw err;
    }
  }

  /**
   * One region's lookup; whoever asks meanwhile waits on it (the cache's
   * shared load). A failure is kept `failureTtlMs` as no prices; one of at
   * most 1 ms (0, say) is not kept, so the next ask looks again, as before
   * lru-cache (a fraction is rounded up: on a whole-millisecond clock
   * "age < 1.5" is "age < 2"). A lookup found frozen is started again once, in the same load, so whoever waits
   * on it waits on the fresh one; never in a loop.
   */
  private async lookup(
    region: string,
    setTtl: (ms: number) => void,
  ): Promise<ReadonlyMap<string, number>> {
    for (let again = false; ; again = true) {
      const started = this.now();
      try {
        const prices = await this.fetch(region);
        if (prices.size > 0) this.lastKnown.set(region, prices);
        this.failures.delete(region);
        return prices;
      } catch (err) {
        // frozen, not failed: started again (once)
        if (!again && this.now() - started > this.timeoutMs + FROZEN_SLACK_MS) continue;
        this.failures.set(
          region,
          isTimeout(err)
            ? { kind: 'timeout', afterMs: this.timeoutMs }
            : { kind: 'error', name: err instanceof Error ? err.name : String(err) },
        );
        const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        this.log(
          `prices for ${region} unavailable (${why}); instance types are ordered by size alone ` +
            `for ${Math.round(this.failureTtlMs / 1000)} s`,
        );
        const keptMs = Math.ceil(this.failureTtlMs);
        if (keptMs < 2) throw new FailureNotKept(new Map<string, number>());
        setTtl(keptMs);
        return new Map<string, number>();
      }
    }
  }

  private async fetch(region: string): Promise<ReadonlyMap<string, number>> {
    if (!this.pricing) return new Map();
    const signal = AbortSignal.timeout(this.timeoutMs);
    const prices = new Map<string, number>();
    const pages = paginateGetProducts(
      { client: this.pricing, pageSize: 100 },
      { ServiceCode: 'AmazonEC2', Filters: priceListFilters(region), FormatVersion: 'aws_v1' },
      { abortSignal: signal },
    );
    for await (const out of pages) {
      const items: unknown[] = Array.isArray(out.PriceList) ? out.PriceList : [];
      for (const item of items) {
        const price = parsePriceListItem(item);
        if (!price) continue;
        const known = prices.get(price.instanceType);
        // one product per type after the filters; should AWS list two, the lower is what one pays
        if (known === undefined || price.usdPerHour < known) {
          prices.set(price.instanceType, price.usdPerHour);
        }
      }
    }
    if (prices.size === 0) throw new Error(`the Price List API lists no instance prices`);
    return prices;
  }
}

/**
 * The Price List API client: `PRICING_ENDPOINT` points it at a local
 * emulator (with the local stack's dummy credentials); otherwise, when
 * `EC2_ENDPOINT` points EC2 somewhere local, there is none (a local EC2 has
 * no AWS prices: every type unpriced, and AWS is never called); otherwise
 * AWS's, in `PRICING_REGION` (default us-east-1), with the worker's own
 * credentials.
 */
export function pricingClientFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): PricingClient | undefined {
  const endpoint = env.PRICING_ENDPOINT?.trim() || undefined;
  if (!endpoint && env.EC2_ENDPOINT?.trim()) return undefined;
  return new PricingClient({
    region: env.PRICING_REGION?.trim() || PRICING_API_REGION,
    ...(endpoint
      ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    maxAttempts: 2,
  });
}
