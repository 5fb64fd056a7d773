import { DescribeAvailabilityZonesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import type { AvailabilityZone } from '../core';

import { ZONE_CACHE_MAX_MS } from '../core/cache-ttl';
export { ZONE_CACHE_MAX_MS };

/**
 * A region's availability zones and their states, shared by every zone
 * choice in the worker: one DescribeAvailabilityZones at most every `ttlMs`
 * (≤ 5 s), and callers that ask while a call is in flight share its answer.
 * A failed call is not cached.
 *
 * Not on lru-cache (ec2/ttl-cache.ts): an answer's 5 s count from the ask, so
 * it is never older than the TTL, and a TTL of 0 asks every time; lru-cache
 * counts from the answer and takes 0 as "forever".
 */
export class ZoneCache {
  private cached?: { at: number; zones: AvailabilityZone[] };
  private inFlight?: Promise<AvailabilityZone[]>;
  private readonly ttlMs: number;

  constructor(
    private readonly ec2: EC2Client,
    ttlMs = ZONE_CACHE_MAX_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.ttlMs = Math.min(Math.max(ttlMs, 0), ZONE_CACHE_MAX_MS);
  }

  async zones(): Promise<AvailabilityZone[]> {
    if (this.cached && this.now() - this.cached.at < this.ttlMs) return this.cached.zones;
    this.inFlight ??= this.describe().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async describe(): Promise<AvailabilityZone[]> {
    const asked = this.now();
    const out = await this.ec2.send(new DescribeAvailabilityZonesCommand({}));
    const zones = (out.AvailabilityZones ?? []).flatMap((z) =>
      // Local and Wavelength zones are opt-in extras, never spread targets.
      z.ZoneName && (z.ZoneType === undefined || z.ZoneType === 'availability-zone')
        ? [{ name: z.ZoneName, state: z.State ?? 'unavailable' }]
        : [],
    );
    // aged from when it was asked, so the answer is never older than the TTL
    this.cached = { at: asked, zones };
    return zones;
  }
}
