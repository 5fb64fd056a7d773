import { InstancePrices, pricingClientFromEnv } from '../activities/pricing';
import { findSubnet } from '../ec2/instances';
import { lambdaEc2Client } from '../ec2/lambda-client';
import { regionalEc2, type RegionalEc2 } from '../ec2/regional';
import { durationEnv, positiveIntEnv, positiveNumberEnv } from '../config/env';
import type { AvailabilityZone, InstanceTypeInfo } from '../core';
import {
  EC2_INSTANCE_BUCKET,
  LAUNCH_ROUND_TRIP_SECONDS,
  MAX_INSTANCES_PER_CALL,
  type LaunchBudget,
} from '../core/launch-estimate';

/**
 * What a plan reads about a region, from the same sources and through the
 * same caches the worker launches with (ec2/regional.ts,
 * activities/pricing.ts): EC2's zones and their states, its instance-type
 * catalogue and per-zone offerings, and the Price List API's prices. Reads
 * only: nothing here changes anything on EC2.
 */
export interface PlanSources {
  zones(region: string): Promise<AvailabilityZone[]>;
  catalogue(region: string): Promise<readonly InstanceTypeInfo[]>;
  zonesOffering(region: string, instanceType: string, zones: readonly string[]): Promise<string[]>;
  /** On-demand prices by type; empty when the price list cannot be read (never throws). */
  prices(region: string): Promise<ReadonlyMap<string, number>>;
  findSubnet(
    region: string,
    idOrCidr: string,
  ): Promise<{ subnetId: string; zone: string } | undefined>;
  /** The launch budget the worker is configured with (its env: the same names). */
  budget: LaunchBudget;
}

/**
 * The launch budget from the worker's own settings (PROVISIONER_LAUNCH_BURST,
 * PROVISIONER_LAUNCH_RATE, PROVISIONER_LAUNCH_BATCH_IDLE: API.md "Worker
 * tuning"); EC2's instance bucket is EC2's default (the worker does not pace
 * on it: EC2 enforces it), overridable for accounts with a raised limit.
 */
export function launchBudgetFromEnv(env: NodeJS.ProcessEnv = process.env): LaunchBudget {
  return {
    requests: {
      burst: positiveIntEnv('PROVISIONER_LAUNCH_BURST', 5, env),
      perSecond: positiveNumberEnv('PROVISIONER_LAUNCH_RATE', 2, env),
    },
    instances: {
      burst: positiveIntEnv('PROVISIONER_LAUNCH_INSTANCE_BURST', EC2_INSTANCE_BUCKET.burst, env),
      perSecond: positiveNumberEnv(
        'PROVISIONER_LAUNCH_INSTANCE_RATE',
        EC2_INSTANCE_BUCKET.perSecond,
        env,
      ),
    },
    maxPerCall: MAX_INSTANCES_PER_CALL,
    batchWaitSeconds: durationEnv('PROVISIONER_LAUNCH_BATCH_IDLE', '1s', env) / 1000,
    roundTripSeconds: LAUNCH_ROUND_TRIP_SECONDS,
  };
}

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
    // a plan waits less for a price list than a launch does (the API answers within 29 s),
    // says when it has none, and asks again soon after
    timeoutMs: 25_000,
    failureTtlMs: 30_000,
    log: () => undefined,
  });
  return {
    zones: (region) => regional(region).zones.zones(),
    catalogue: (region) => regional(region).catalogue.all(),
    zonesOffering: (region, type, zones) => regional(region).catalogue.zonesOffering(type, zones),
    prices: (region) => prices.forRegion(region),
    findSubnet: (region, idOrCidr) => findSubnet(regional(region).ec2, idOrCidr),
    budget: launchBudgetFromEnv(env),
  };
}
