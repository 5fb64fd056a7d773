import type { Ec2Client } from '../ec2/instances';
import { lambdaEc2Client } from '../ec2/lambda-client';
import { describeRegionNames } from '../ec2/regions';
import { DependencyUnavailableError } from './errors';

/** Which regions EC2 offers this account (API.md: a model in any other region is refused). */
export interface RegionCheck {
  offered(): Promise<ReadonlySet<string>>;
}

/** Regions change rarely: asked once an hour at most, failures not remembered. */
const REGIONS_TTL_MS = 60 * 60 * 1000;

export class Ec2Regions implements RegionCheck {
  private cached?: { at: number; regions: Promise<ReadonlySet<string>> };

  constructor(
    private readonly ec2: Pick<Ec2Client, 'send'>,
    private readonly now: () => number = Date.now,
  ) {}

  static fromEndpoint(region: string, endpoint: string | undefined): Ec2Regions {
    return new Ec2Regions(lambdaEc2Client({ region, endpoint }));
  }

  offered(): Promise<ReadonlySet<string>> {
    if (this.cached && this.now() - this.cached.at < REGIONS_TTL_MS) return this.cached.regions;
    const regions = describeRegionNames(this.ec2).catch((err: unknown) => {
      this.cached = undefined;
      throw new DependencyUnavailableError(
        `cannot check the region: EC2 could not be asked (${err instanceof Error ? err.name : String(err)})`,
      );
    });
    this.cached = { at: this.now(), regions };
    return regions;
  }
}
