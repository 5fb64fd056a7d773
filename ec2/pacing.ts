import type { ProvisioningTuning } from '../config/env';

/**
 * How teardown's EC2 calls are paced by default (README "Teardown at
 * scale"): each region's calls wait for a token of the worker's own bucket
 * before they go, EC2's published buckets (TerminateInstances 100 at once
 * then 5 a second; DescribeInstances 100 then 20, shared with the account's
 * other describes, so half of it here). A batch waiting for a token keeps
 * growing. `PROVISIONER_TEARDOWN_{TERMINATE,DESCRIBE}_{BURST,RATE}` set them
 * (config/env.ts; `teardownPacing` below reads them).
 */
export const TEARDOWN_PACING = {
  terminate: { burst: 100, perSecond: 5 },
  describe: { burst: 50, perSecond: 10 },
} as const;

type Pacing = Record<keyof typeof TEARDOWN_PACING, { burst: number; perSecond: number }>;

/** The teardown buckets a worker's tuning sets (the defaults where it says nothing). */
export function teardownPacing(tuning: Partial<ProvisioningTuning> | undefined): Pacing {
  return {
    terminate: {
      burst: tuning?.teardownTerminateBurst ?? TEARDOWN_PACING.terminate.burst,
      perSecond: tuning?.teardownTerminateRatePerSecond ?? TEARDOWN_PACING.terminate.perSecond,
    },
    describe: {
      burst: tuning?.teardownDescribeBurst ?? TEARDOWN_PACING.describe.burst,
      perSecond: tuning?.teardownDescribeRatePerSecond ?? TEARDOWN_PACING.describe.perSecond,
    },
  };
}
