import type { EC2Client } from '@aws-sdk/client-ec2';
import { ImageFinder } from './images';
import { InstanceTypeCatalogue } from './instance-types';
import { ZONE_CACHE_MAX_MS, ZoneCache } from './zones';

/** One region's EC2 client and the caches that go with it. */
export interface RegionalEc2 {
  region: string;
  ec2: EC2Client;
  images: ImageFinder;
  catalogue: InstanceTypeCatalogue;
  /** The region's zones and their states, at most 5 s old. */
  zones: ZoneCache;
}

/**
 * Builds (once per region, on first use) the EC2 client and caches for each
 * model's region, so one worker serves models in any region.
 */
export function regionalEc2(
  clientFor: (region: string) => EC2Client,
  zoneCacheMs = ZONE_CACHE_MAX_MS,
): (region: string) => RegionalEc2 {
  const byRegion = new Map<string, RegionalEc2>();
  return (region) => {
    let r = byRegion.get(region);
    if (!r) {
      const ec2 = clientFor(region);
      r = {
        region,
        ec2,
        images: new ImageFinder(ec2),
        catalogue: new InstanceTypeCatalogue(ec2),
        zones: new ZoneCache(ec2, zoneCacheMs),
      };
      byRegion.set(region, r);
    }
    return r;
  };
}

/** Loads a region's catalogue, zones and offerings into its caches (at worker start). */
export async function warmRegion(regional: RegionalEc2): Promise<void> {
  const [, zones] = await Promise.all([regional.catalogue.all(), regional.zones.zones()]);
  await regional.catalogue.zonesOffering(
    'none',
    zones.map((z) => z.name),
  );
}
