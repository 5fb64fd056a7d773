import type { EC2Client } from '@aws-sdk/client-ec2';
import { ImageFinder } from './images';
import { InstanceTypeCatalogue } from './instance-types';

/** One region's EC2 client and the caches that go with it. */
export interface RegionalEc2 {
  region: string;
  ec2: EC2Client;
  images: ImageFinder;
  catalogue: InstanceTypeCatalogue;
}

/**
 * Builds (once per region, on first use) the EC2 client and caches for each
 * model's region, so one worker serves models in any region.
 */
export function regionalEc2(
  clientFor: (region: string) => EC2Client,
): (region: string) => RegionalEc2 {
  const byRegion = new Map<string, RegionalEc2>();
  return (region) => {
    let r = byRegion.get(region);
    if (!r) {
      const ec2 = clientFor(region);
      r = { region, ec2, images: new ImageFinder(ec2), catalogue: new InstanceTypeCatalogue(ec2) };
      byRegion.set(region, r);
    }
    return r;
  };
}
