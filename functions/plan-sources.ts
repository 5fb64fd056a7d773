import { InstancePrices, pricingClientFromEnv } from '../activities/pricing';
import { findSubnet } from '../ec2/instances';
import { lambdaEc2Client } from '../ec2/lambda-client';
import { regionalEc2, type RegionalEc2 } from '../ec2/regional';
import { launchBudgetFromEnv, type PlanSources } from '../service/plan-sources';

/**
 * How long one EC2 read of a plan may take. The first plan of a container
 * pages the region's whole catalogue (1,400 types); later ones read the cache.
 */
const EC2_READ_TIMEOUT_MS = 20_000;

/** The sources of the API process (one per Lambda container or local API server). */
export function ec2PlanSources(
  ec2Endpoint: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): PlanSources {
  const regional: (region: string) => RegionalEc2 = regionalEc2((region) =>
    lambdaEc2Client({
      region,
      endpoint: ec2Endpoint,
      maxAttempts: 2,
      timeoutMs: EC2_READ_TIMEOUT_MS,
    }),
  );
  const prices = new InstancePrices(pricingClientFromEnv(env), {
    // a plan waits for the price list only until its deadline (plans.ts PRICE_DEADLINE_MS) and
    // answers without prices; the lookup goes on meanwhile, so a slow price list still fills
    // the cache for the next plans; one that fails is asked again soon after. In Lambda the
    // lookup only moves while a request runs: one that was frozen past its timeout is not a
    // failure and is started again (InstancePrices, FROZEN_SLACK_MS)
    timeoutMs: 60_000,
    failureTtlMs: 30_000,
    log: () => undefined,
  });
  return {
    zones: (region) => regional(region).zones.zones(),
    catalogue: (region) => regional(region).catalogue.all(),
    zonesOffering: (region, type, zones) => regional(region).catalogue.zonesOffering(type, zones),
    prices: (region) => prices.forRegion(region),
    priceFailure: (region) => prices.failure(region),
    findSubnet: (region, idOrCidr) => findSubnet(regional(region).ec2, idOrCidr),
    budget: launchBudgetFromEnv(env),
  };
}
