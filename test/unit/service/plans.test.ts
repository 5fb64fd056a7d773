import type { GetProductsCommand } from '@aws-sdk/client-pricing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InstancePrices, type PricingSender } from '../../../activities/pricing';
import type { InstanceTypeInfo } from '../../../core';
import { ERROR_STATUS } from '../../../core/error-codes';
import type { ServiceContext } from '../../../service/context';
import type { PlanSources } from '../../../service/plan-sources';
import { asPricingClient } from '../../support/pricing-client';
import { launchBudgetFromEnv } from '../../../service/plan-sources';
import {
  buildPlan,
  PLAN_READS_DEADLINE_MS,
  PlanReadsDeadlineError,
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
    const prices = new InstancePrices(asPricingClient(pricing), {
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

describe('buildPlan: a deadline on its EC2 reads', () => {
  const never = <T>(): Promise<T> => new Promise<T>(() => undefined);
  const priced = () => Promise.resolve(new Map([['m5.large', 0.096]]));

  it.each([
    ['the catalogue', { catalogue: never }, 'the instance types of us-east-1'],
    ['the zones', { zones: never }, 'the availability zones of us-east-1'],
    ['the offerings', { zonesOffering: never }, 'the zones offering m5.large'],
  ] as const)(
    'a plan whose read of %s never answers is refused 503 unavailable by the deadline, naming it',
    async (_what, stuck, named) => {
      const sources = sourcesWith(priced, {
        ...stuck,
        readsDeadlineMs: 200,
      });
      const started = Date.now();
      const err = await buildPlan(context(sources), MODEL, ONE).then(
        () => undefined,
        (e: unknown) => e,
      );
      // bounded generously for a busy machine; without the deadline this never settles
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(err).toBeInstanceOf(PlanReadsDeadlineError);
      expect(err).toMatchObject({
        code: 'unavailable',
        message:
          `EC2 did not answer within 0.2 s for this plan (still waiting for ${named}); ` +
          'nothing was planned, try again shortly',
      });
      expect(ERROR_STATUS[(err as PlanReadsDeadlineError).code]).toBe(503);
    },
  );

  it("counts the deadline from the request's start, not from the plan's first read", async () => {
    const sources = sourcesWith(priced, { catalogue: never, readsDeadlineMs: 30_000 });
    const started = Date.now();
    // the request began 29.8 s ago (cold start, DynamoDB reads, the decision): 0.2 s are left
    const err = await buildPlan(
      context(sources, { requestStartedAt: started - 29_800 }),
      MODEL,
      ONE,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    // counted from the first read it would wait the whole 30 s (past the test's own timeout)
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(err).toBeInstanceOf(PlanReadsDeadlineError);
    expect((err as Error).message).toBe(
      'EC2 did not answer within 30 s for this plan (still waiting for the instance types of ' +
        'us-east-1); nothing was planned, try again shortly',
    );
  });

  it('reads that answer within the deadline make the plan as before', async () => {
    const slow = <T>(v: T) => new Promise<T>((r) => setTimeout(() => r(v), 20));
    const sources = sourcesWith(priced, {
      catalogue: () => slow(CATALOGUE),
      readsDeadlineMs: 5_000,
    });
    const plan = await buildPlan(context(sources), MODEL, ONE);
    expect(plan.machines[0]).toMatchObject({ instanceType: 'm5.large', zone: 'us-east-1a' });
  });

  it("the default deadline leaves room under API Gateway's 29 s", () => {
    expect(PLAN_READS_DEADLINE_MS).toBe(20_000);
  });
});
