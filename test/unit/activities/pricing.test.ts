import type { GetProductsCommand } from '@aws-sdk/client-pricing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  InstancePrices,
  parsePriceListItem,
  priceListFilters,
  pricingClientFromEnv,
  type PricingSender,
} from '../../../activities/pricing';
import { asPricingClient } from '../../support/pricing-client';

/** One PriceList entry exactly as GetProducts returns it: a JSON document in a string. */
const M5_LARGE = readFileSync(join(__dirname, 'fixtures', 'price-list-m5-large.json'), 'utf8');

/** The same entry for another type at another on-demand price. */
function entry(instanceType: string, usd: string): string {
  return M5_LARGE.replaceAll('m5.large', instanceType).replace('"0.0960000000"', `"${usd}"`);
}

describe('parsePriceListItem', () => {
  it('reads the on-demand hourly USD price of a real GetProducts entry, not its reserved ones', () => {
    // the entry also has a $0.06 and a $0.00 (all-upfront) reserved hourly rate
    expect(parsePriceListItem(M5_LARGE)).toEqual({ instanceType: 'm5.large', usdPerHour: 0.096 });
  });

  it('accepts an entry the SDK hands over as an object that stringifies to the JSON', () => {
    const lazy = { toString: () => M5_LARGE };
    expect(parsePriceListItem(lazy)).toEqual({ instanceType: 'm5.large', usdPerHour: 0.096 });
  });

  it.each<[string, string]>([
    ['not JSON', '{"product":'],
    ['a JSON array', '[]'],
    ['no product', JSON.stringify({ terms: {} })],
    ['no instanceType', M5_LARGE.replace('"instanceType": "m5.large",', '')],
    ['no on-demand terms', M5_LARGE.replace('"OnDemand": {', '"Spot": {')],
    ['a zero price', M5_LARGE.replace('"0.0960000000"', '"0.0000000000"')],
    ['a price that is not a number', M5_LARGE.replace('"0.0960000000"', '"n/a"')],
    [
      'a unit other than hours',
      M5_LARGE.replace(
        '"unit": "Hrs",\n            "endRange": "Inf",\n            "description": "$0.096',
        '"unit": "Quantity",\n            "endRange": "Inf",\n            "description": "$0.096',
      ),
    ],
    ['no USD price', M5_LARGE.replace('{ "USD": "0.0960000000" }', '{ "CNY": "0.7" }')],
  ])('gives undefined for %s', (_about, item) => {
    expect(parsePriceListItem(item)).toBeUndefined();
  });
});

describe('priceListFilters', () => {
  it("selects the region's Linux, shared-tenancy, no-software, used-capacity on-demand products", () => {
    expect(priceListFilters('eu-west-1')).toEqual([
      { Type: 'TERM_MATCH', Field: 'regionCode', Value: 'eu-west-1' },
      { Type: 'TERM_MATCH', Field: 'operatingSystem', Value: 'Linux' },
      { Type: 'TERM_MATCH', Field: 'tenancy', Value: 'Shared' },
      { Type: 'TERM_MATCH', Field: 'preInstalledSw', Value: 'NA' },
      { Type: 'TERM_MATCH', Field: 'capacitystatus', Value: 'Used' },
      { Type: 'TERM_MATCH', Field: 'marketoption', Value: 'OnDemand' },
    ]);
  });
});

interface Page {
  PriceList?: unknown;
  NextToken?: string;
}

/** A Pricing client answering from pages keyed by NextToken ('' is the first). */
function fakePricing(pages: Record<string, Page | Error>): PricingSender & {
  calls: GetProductsCommand['input'][];
} {
  const calls: GetProductsCommand['input'][] = [];
  return {
    calls,
    send(command) {
      // a copy: the paginator sends one input object, its NextToken changed page by page
      calls.push({ ...command.input });
      const page = pages[command.input.NextToken ?? ''];
      if (page === undefined) return Promise.reject(new Error('unexpected token'));
      if (page instanceof Error) return Promise.reject(page);
      return Promise.resolve(page);
    },
  };
}

describe('InstancePrices', () => {
  let now = 0;
  const lines: string[] = [];
  const options = {
    now: () => now,
    log: (line: string) => lines.push(line),
  };
  beforeEach(() => {
    now = 1_000_000;
    lines.length = 0;
  });

  it('pages through GetProducts for the region with the filters, and keys prices by type', async () => {
    const pricing = fakePricing({
      '': { PriceList: [M5_LARGE, entry('t3.small', '0.0208000000')], NextToken: 'p2' },
      p2: { PriceList: [entry('c7a.medium', '0.0513300000'), '{"garbage":true}'] },
    });
    const prices = await new InstancePrices(asPricingClient(pricing), options).forRegion(
      'us-east-1',
    );
    expect([...prices]).toEqual([
      ['m5.large', 0.096],
      ['t3.small', 0.0208],
      ['c7a.medium', 0.05133],
    ]);
    expect(pricing.calls).toEqual([
      {
        ServiceCode: 'AmazonEC2',
        Filters: priceListFilters('us-east-1'),
        FormatVersion: 'aws_v1',
        MaxResults: 100,
        NextToken: undefined,
      },
      {
        ServiceCode: 'AmazonEC2',
        Filters: priceListFilters('us-east-1'),
        FormatVersion: 'aws_v1',
        MaxResults: 100,
        NextToken: 'p2',
      },
    ]);
    expect(lines).toEqual([]);
  });

  it('keeps the lower price when two products name one type', async () => {
    const pricing = fakePricing({
      '': { PriceList: [entry('t3.small', '0.0300000000'), entry('t3.small', '0.0208000000')] },
    });
    const prices = await new InstancePrices(asPricingClient(pricing), options).forRegion(
      'us-east-1',
    );
    expect(prices.get('t3.small')).toBe(0.0208);
  });

  it('caches each region for the TTL (a day by default); concurrent callers share one fetch', async () => {
    const pricing = fakePricing({ '': { PriceList: [M5_LARGE] } });
    const prices = new InstancePrices(asPricingClient(pricing), options);
    const [a, b] = await Promise.all([
      prices.forRegion('us-east-1'),
      prices.forRegion('us-east-1'),
    ]);
    expect(a).toBe(b);
    now += 23 * 3_600_000;
    await prices.forRegion('us-east-1');
    expect(pricing.calls).toHaveLength(1);
    await prices.forRegion('us-west-2');
    expect(pricing.calls.map((c) => c.Filters?.[0]?.Value)).toEqual(['us-east-1', 'us-west-2']);
    now += 3_600_000 + 1;
    await prices.forRegion('us-east-1');
    expect(pricing.calls).toHaveLength(3);
  });

  it('falls back to no prices when the Price List API fails, logs why, and retries after 5 minutes', async () => {
    const denied = Object.assign(
      new Error('User is not authorized to perform: pricing:GetProducts'),
      {
        name: 'AccessDeniedException',
      },
    );
    const pages: Record<string, Page | Error> = { '': denied };
    const pricing = fakePricing(pages);
    const prices = new InstancePrices(asPricingClient(pricing), options);
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    expect(lines).toEqual([
      'prices for us-east-1 unavailable (AccessDeniedException: User is not authorized to perform: pricing:GetProducts); instance types are ordered by size alone for 300 s',
    ]);
    now += 4 * 60_000;
    await prices.forRegion('us-east-1');
    expect(pricing.calls).toHaveLength(1);
    pages[''] = { PriceList: [M5_LARGE] };
    now += 60_000 + 1;
    expect((await prices.forRegion('us-east-1')).get('m5.large')).toBe(0.096);
    expect(pricing.calls).toHaveLength(2);
  });

  it('failureTtlMs 0 keeps no failure: each ask looks again and a failure still answers no prices, never a rejection', async () => {
    const denied = Object.assign(new Error('denied'), { name: 'AccessDeniedException' });
    const pages: Record<string, Page | Error> = { '': denied };
    const pricing = fakePricing(pages);
    const prices = new InstancePrices(asPricingClient(pricing), { ...options, failureTtlMs: 0 });
    // callers during the failed load share it, and each is answered no prices
    const both = await Promise.all([prices.forRegion('us-east-1'), prices.forRegion('us-east-1')]);
    expect(both).toEqual([new Map(), new Map()]);
    expect(pricing.calls).toHaveLength(1);
    expect(prices.failure('us-east-1')).toEqual({ kind: 'error', name: 'AccessDeniedException' });
    // same millisecond: not kept, asked again
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    expect(pricing.calls).toHaveLength(2);
    pages[''] = { PriceList: [M5_LARGE] };
    expect((await prices.forRegion('us-east-1')).get('m5.large')).toBe(0.096);
    expect(pricing.calls).toHaveLength(3);
    expect(prices.failure('us-east-1')).toBeUndefined();
  });

  it('a fractional failureTtlMs keeps the failure while its age is under it, on a whole-millisecond clock', async () => {
    const pages: Record<string, Page | Error> = { '': new Error('down') };
    const pricing = fakePricing(pages);
    const prices = new InstancePrices(asPricingClient(pricing), { ...options, failureTtlMs: 1.5 });
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    now += 1;
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    expect(pricing.calls).toHaveLength(1);
    now += 1;
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    expect(pricing.calls).toHaveLength(2);
  });

  it.each([NaN, Infinity, -Infinity])('refuses failureTtlMs %s when built', (failureTtlMs) => {
    expect(() => new InstancePrices(undefined, { ...options, failureTtlMs })).toThrow(
      new RangeError(`failureTtlMs must be a finite number of milliseconds, not ${failureTtlMs}`),
    );
  });

  it('known() gives the last fetched prices at once, kept through a later failure', async () => {
    const pages: Record<string, Page | Error> = { '': { PriceList: [M5_LARGE] } };
    const prices = new InstancePrices(asPricingClient(fakePricing(pages)), options);
    expect(prices.known('us-east-1')).toBeUndefined();
    await prices.forRegion('us-east-1');
    expect(prices.known('us-east-1')?.get('m5.large')).toBe(0.096);
    pages[''] = new Error('down');
    now += 24 * 3_600_000 + 1;
    expect((await prices.forRegion('us-east-1')).size).toBe(0);
    expect(prices.known('us-east-1')?.get('m5.large')).toBe(0.096);
  });

  it('a failure on a later page gives no prices at all, never a partial list', async () => {
    const pricing = fakePricing({
      '': { PriceList: [M5_LARGE], NextToken: 'p2' },
      p2: new Error('socket hang up'),
    });
    await expect(
      new InstancePrices(asPricingClient(pricing), options).forRegion('us-east-1'),
    ).resolves.toEqual(new Map());
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('Error: socket hang up');
  });

  it('an empty price list is a failure (the filters matched nothing), not a catalogue of unpriced types', async () => {
    const pricing = fakePricing({ '': { PriceList: [] } });
    await expect(
      new InstancePrices(asPricingClient(pricing), options).forRegion('mars-1'),
    ).resolves.toEqual(new Map());
    expect(lines).toEqual([
      'prices for mars-1 unavailable (Error: the Price List API lists no instance prices); instance types are ordered by size alone for 300 s',
    ]);
  });

  it('gives up a lookup that outlasts its timeout', async () => {
    const hanging: PricingSender = {
      send: (_command, opts) =>
        new Promise((_resolve, reject) => {
          opts?.abortSignal?.addEventListener('abort', () =>
            reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' })),
          );
        }),
    };
    const started = Date.now();
    const prices = await new InstancePrices(asPricingClient(hanging), {
      ...options,
      timeoutMs: 50,
    }).forRegion('us-east-1');
    expect(prices.size).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(lines).toEqual([
      'prices for us-east-1 unavailable (AbortError: Request aborted); instance types are ordered by size alone for 300 s',
    ]);
  });

  it("hands the lookup's abort signal to every page: a later page that hangs is cut at the timeout", async () => {
    const signals: Array<AbortSignal | undefined> = [];
    const secondHangs: PricingSender = {
      send: (command, opts) => {
        signals.push(opts?.abortSignal);
        if (!command.input.NextToken) {
          return Promise.resolve({ PriceList: [M5_LARGE], NextToken: 'p2' });
        }
        return new Promise((_resolve, reject) => {
          opts?.abortSignal?.addEventListener('abort', () =>
            reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' })),
          );
        });
      },
    };
    const started = Date.now();
    const prices = await new InstancePrices(asPricingClient(secondHangs), {
      ...options,
      timeoutMs: 50,
    }).forRegion('us-east-1');
    expect(prices.size).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    // both pages were sent with the lookup's one signal, and the hanging one was aborted
    expect(signals).toHaveLength(2);
    expect(signals[1]).toBeDefined();
    expect(signals[1]).toBe(signals[0]);
    expect(signals[1]?.aborted).toBe(true);
    expect(lines).toEqual([
      'prices for us-east-1 unavailable (AbortError: Request aborted); instance types are ordered by size alone for 300 s',
    ]);
  });

  it('a lookup frozen past its timeout (a Lambda container between requests) is started again, not cached as a failure', async () => {
    // first lookup: its first page hangs until the container is thawed
    let thaw: (() => void) | undefined;
    const sends: (string | undefined)[] = [];
    const pricing: PricingSender = {
      send: (command) => {
        sends.push(command.input.NextToken);
        if (sends.length === 1) {
          return new Promise((_resolve, reject) => {
            thaw = () =>
              reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' }));
          });
        }
        return Promise.resolve({ PriceList: [M5_LARGE] });
      },
    };
    const prices = new InstancePrices(asPricingClient(pricing), { ...options, timeoutMs: 60_000 });
    const first = prices.forRegion('us-east-1');
    await new Promise((r) => setImmediate(r));
    // frozen 10 minutes; on thaw the lookup's timeout fires at once
    now += 10 * 60_000;
    const second = prices.forRegion('us-east-1');
    thaw!();
    await expect(second).resolves.toEqual(new Map([['m5.large', 0.096]]));
    await expect(first).resolves.toEqual(new Map([['m5.large', 0.096]]));
    expect(sends).toEqual([undefined, undefined]);
    expect(prices.failure('us-east-1')).toBeUndefined();
    expect(lines).toEqual([]);
    // and the restarted lookup is cached like any other
    await prices.forRegion('us-east-1');
    expect(sends).toHaveLength(2);
  });

  it.each([
    ['1.05x', 63_000],
    ['1.5x', 90_000],
    ['1.99x', 119_000],
  ])(
    'a lookup frozen for %s its timeout is started again as soon as it is past its timeout, never reported as "did not answer"',
    async (_label, frozenMs) => {
      const sends: number[] = [];
      const pricing: PricingSender = {
        send: () => {
          sends.push(now);
          if (sends.length === 1) {
            // the container was frozen mid-request; on thaw the abort fires at once
            now += frozenMs;
            return Promise.reject(
              Object.assign(new Error('Request aborted'), { name: 'AbortError' }),
            );
          }
          return Promise.resolve({ PriceList: [M5_LARGE] });
        },
      };
      const prices = new InstancePrices(asPricingClient(pricing), {
        ...options,
        timeoutMs: 60_000,
      });
      await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map([['m5.large', 0.096]]));
      expect(sends).toHaveLength(2);
      expect(prices.failure('us-east-1')).toBeUndefined();
      expect(lines).toEqual([]);
    },
  );

  it('a restarted lookup that looks frozen again is a failure, not restarted in a loop', async () => {
    let sends = 0;
    const pricing: PricingSender = {
      send: () => {
        sends += 1;
        now += 90_000;
        return Promise.reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' }));
      },
    };
    const prices = new InstancePrices(asPricingClient(pricing), { ...options, timeoutMs: 60_000 });
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    expect(sends).toBe(2);
    expect(prices.failure('us-east-1')).toEqual({ kind: 'timeout', afterMs: 60_000 });
    expect(lines).toHaveLength(1);
  });

  it('a lookup that times out while its process runs is a timeout failure, cached and named as such', async () => {
    const hanging: PricingSender = {
      send: () =>
        Promise.reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' })),
    };
    const prices = new InstancePrices(asPricingClient(hanging), { ...options, timeoutMs: 60_000 });
    now += 61_000; // its timer fired a second late: it ran, and the price list did not answer
    await expect(prices.forRegion('us-east-1')).resolves.toEqual(new Map());
    expect(prices.failure('us-east-1')).toEqual({ kind: 'timeout', afterMs: 60_000 });
    const failing = new InstancePrices(
      asPricingClient(fakePricing({ '': new Error('getaddrinfo ENOTFOUND') })),
      options,
    );
    await failing.forRegion('us-east-1');
    expect(failing.failure('us-east-1')).toEqual({ kind: 'error', name: 'Error' });
  });

  it('without a Pricing client every type is unpriced, silently', async () => {
    await expect(new InstancePrices(undefined, options).forRegion('us-east-1')).resolves.toEqual(
      new Map(),
    );
    expect(lines).toEqual([]);
  });
});

describe('pricingClientFromEnv', () => {
  it('talks to AWS in us-east-1 unless told otherwise', async () => {
    const client = pricingClientFromEnv({})!;
    expect(await client.config.region()).toBe('us-east-1');
    client.destroy();
  });

  it('is absent when EC2 is local and no price emulator is named: AWS is never called', () => {
    expect(pricingClientFromEnv({ EC2_ENDPOINT: 'http://127.0.0.1:5000' })).toBeUndefined();
  });

  it('PRICING_ENDPOINT points it at a local emulator; PRICING_REGION moves it', async () => {
    const client = pricingClientFromEnv({
      PRICING_ENDPOINT: 'http://127.0.0.1:4999',
      PRICING_REGION: 'ap-south-1',
      EC2_ENDPOINT: 'http://127.0.0.1:5000',
    })!;
    expect(await client.config.region()).toBe('ap-south-1');
    const endpoint = await client.config.endpoint?.();
    expect(endpoint).toMatchObject({ hostname: '127.0.0.1', port: 4999, protocol: 'http:' });
    expect(await client.config.credentials()).toMatchObject({ accessKeyId: 'local' });
    client.destroy();
  });
});
