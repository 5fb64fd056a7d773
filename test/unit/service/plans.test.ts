import type { GetProductsCommand } from '@aws-sdk/client-pricing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InstancePrices, type PricingSender } from '../../../activities/pricing';
import type { InstanceTypeInfo } from '../../../core';
import type { ServiceContext } from '../../../service/context';
import type { PlanSources } from '../../../service/plan-sources';
import { launchBudgetFromEnv } from '../../../service/plan-sources';
import {
  buildPlan,
  priceDeadlineNote,
  priceLookupTimeoutNote,
  PRICE_LIST_UNREACHABLE_NOTE,
  UNPRICED_TYPES,
  type PlanEntry,
} from '../../../service/plans';
import type { ModelRecord } from '../../../state/types';

/** One real GetProducts entry (m5.large at 0.096 USD/h). */
const M5_LARGE = readFileSync(
  join(__dirname, '..', 'activities', 'fixtures', 'price-list-m5-large.json'),
  'utf8',
);

const MODEL: ModelRecord = {
  name: 'm',
  uid: 'uid-1',
  region: 'us-east-1',
  constraints: '',
  harvestMode: 'all',
  availabilitySets: false,
  reprovisionLost: false,
  life: 'alive',
  createdAt: '2026-01-01T00:00:00.000Z',
};

const CATALOGUE: InstanceTypeInfo[] = [
  { name: 'm5.large', arches: ['amd64'], cores: 2, mem: 8192 },
  { name: 'c5.large', arches: ['amd64'], cores: 2, mem: 4096 },
];

const ONE: PlanEntry[] = [
  { kind: 'launch', units: [], base: 'ubuntu@24.04', constraints: '', applications: [] },
];

function context(sources: PlanSources, extra: Partial<ServiceContext> = {}): ServiceContext {
  return {
    repo: { groupCounts: () => Promise.resolve(new Map()) },
    now: () => new Date('2026-01-01T00:00:00Z'),
    planSources: sources,
    ...extra,
  } as unknown as ServiceContext;
}

function sourcesWith(prices: PlanSources['prices'], more: Partial<PlanSources> = {}): PlanSources {
  return {
    zones: () => Promise.resolve([{ name: 'us-east-1a', state: 'available' }]),
    catalogue: () => Promise.resolve(CATALOGUE),
    zonesOffering: (_r, _t, zones) => Promise.resolve([...zones]),
    prices,
    findSubnet: () => Promise.resolve(undefined),
    budget: launchBudgetFromEnv({}),
    priceDeadlineMs: 50,
    ...more,
  };
}

const priceNotes = (notes: string[]) => notes.filter((n) => n.includes('price list'));

describe('buildPlan: prices', () => {
  it('a plan in a Lambda container frozen between requests gets prices on the next request, never "cannot be reached"', async () => {
    let now = 1_000_000;
    const sends: (string | undefined)[] = [];
    let thaw: (() => void) | undefined;
    const pricing: PricingSender = {
      send: (command: GetProductsCommand) => {
        sends.push(command.input.NextToken);
        if (sends.length === 1) {
          // the first lookup is slow: the container is frozen while it is under way
          return new Promise((_resolve, reject) => {
            thaw = () =>
              reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' }));
          });
        }
        return Promise.resolve({ PriceList: [M5_LARGE] });
      },
    };
    const prices = new InstancePrices(pricing, {
      timeoutMs: 60_000,
      failureTtlMs: 30_000,
      now: () => now,
      log: () => undefined,
    });
    const sources = sourcesWith((r) => prices.forRegion(r), {
      priceFailure: (r) => prices.failure(r),
    });
    const first = await buildPlan(context(sources), MODEL, ONE);
    expect(first.pricePerHour).toBeNull();
    expect(priceNotes(first.notes)).toEqual([priceDeadlineNote(50)]);

    // frozen 10 minutes (the lookup's 60 s timeout expired meanwhile); the next request thaws it
    now += 10 * 60_000;
    const next = buildPlan(context(sources), MODEL, ONE);
    thaw!();
    const second = await next;
    expect(priceNotes(second.notes)).toEqual([]);
    expect(second.machines[0]).toMatchObject({ instanceType: 'm5.large', pricePerHour: 0.096 });
    expect(second.pricePerHour).toBe(0.096);
    expect(sends).toEqual([undefined, undefined]);
  });

  it('says the plan stopped waiting (3 s) apart from a lookup that timed out, apart from a price list that cannot be reached', async () => {
    const never = sourcesWith(() => new Promise(() => undefined));
    expect(priceNotes((await buildPlan(context(never), MODEL, ONE)).notes)).toEqual([
      'the price list did not answer within 0.05 s: ' + UNPRICED_TYPES,
    ]);
    const timedOut = sourcesWith(() => Promise.resolve(new Map()), {
      priceFailure: () => ({ kind: 'timeout', afterMs: 60_000 }),
    });
    expect(priceNotes((await buildPlan(context(timedOut), MODEL, ONE)).notes)).toEqual([
      priceLookupTimeoutNote(60_000),
    ]);
    expect(priceLookupTimeoutNote(60_000)).toMatch(/^the price list did not answer within 60 s/);
    const unreachable = sourcesWith(() => Promise.resolve(new Map()), {
      priceFailure: () => ({ kind: 'error', name: 'Error' }),
    });
    expect(priceNotes((await buildPlan(context(unreachable), MODEL, ONE)).notes)).toEqual([
      PRICE_LIST_UNREACHABLE_NOTE,
    ]);
  });

  it('a plan without prices says its types may differ from the launch, which chooses by price', () => {
    expect(UNPRICED_TYPES).toBe(
      "prices are unknown, and instance types are chosen without prices: they may differ from the launch's, which chooses the cheapest fitting type when it can read prices",
    );
    for (const note of [
      priceDeadlineNote(3_000),
      priceLookupTimeoutNote(60_000),
      PRICE_LIST_UNREACHABLE_NOTE,
    ]) {
      expect(note).toContain('may differ from the launch');
      expect(note).not.toContain('as a launch now would');
    }
  });
});

describe('buildPlan: the launch record', () => {
  it('says when the recent launches cannot be read, and takes the buckets as full', async () => {
    const sources = sourcesWith(() => Promise.resolve(new Map([['m5.large', 0.096]])));
    const plan = await buildPlan(
      context(sources, {
        launchRecord: {
          read: () =>
            Promise.reject(
              Object.assign(new Error('throttled'), {
                name: 'ProvisionedThroughputExceededException',
              }),
            ),
        },
      }),
      MODEL,
      ONE,
    );
    expect(plan.notes).toContain(
      "this deployment's recent launches could not be read (ProvisionedThroughputExceededException): the estimate takes EC2's buckets as full",
    );
    expect(plan.machines).toHaveLength(1);
    expect(plan.estimatedSeconds).toBeGreaterThan(0);
  });
});
