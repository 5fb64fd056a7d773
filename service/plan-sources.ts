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
 * only: nothing here changes anything on EC2. The API's implementation,
 * over the worker's readers, is functions/plan-sources.ts.
 */
export interface PlanSources {
  zones(region: string): Promise<AvailabilityZone[]>;
  catalogue(region: string): Promise<readonly InstanceTypeInfo[]>;
  zonesOffering(region: string, instanceType: string, zones: readonly string[]): Promise<string[]>;
  /** On-demand prices by type; empty when the price list cannot be read (never throws). */
  prices(region: string): Promise<ReadonlyMap<string, number>>;
  /**
   * Why `prices` last gave none: its lookup timed out (the price list did not
   * answer) or failed (it cannot be reached); undefined when it gave prices.
   */
  priceFailure?(
    region: string,
  ): { kind: 'timeout'; afterMs: number } | { kind: 'error'; name: string } | undefined;
  findSubnet(
    region: string,
    idOrCidr: string,
  ): Promise<{ subnetId: string; zone: string } | undefined>;
  /** The launch budget the worker is configured with (its env: the same names). */
  budget: LaunchBudget;
  /** How long a plan waits for `prices` before answering without them (default: plans.ts PRICE_DEADLINE_MS). */
  priceDeadlineMs?: number;
  /** How long a plan's EC2 reads may take together before it is refused 503 (default: plans.ts PLAN_READS_DEADLINE_MS). */
  readsDeadlineMs?: number;
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
