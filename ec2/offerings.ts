import {
  DescribeAvailabilityZonesCommand,
  DescribeInstanceTypeOfferingsCommand,
} from '@aws-sdk/client-ec2';
import { lambdaEc2Client } from './lambda-client';
import { fetchLoaded, loadingCache, type LoadingCache } from './ttl-cache';

/**
 * What a region offers, as a request is checked against it before anything
 * is recorded: its availability zones and the instance types offered there.
 * Juju refuses an unknown zone (`availability zone "us-east-1z" not valid`)
 * and an unknown `instance-type` (its constraints vocabulary) up front; so do
 * we, instead of recording a machine that can only fail later.
 */
export interface RegionOfferings {
  /** The region's availability zones (not Local or Wavelength zones), whatever their state. */
  zones(region: string, signal?: AbortSignal): Promise<ReadonlySet<string>>;
  /** Instance types offered anywhere in the region. */
  instanceTypes(region: string, signal?: AbortSignal): Promise<ReadonlySet<string>>;
}

import { OFFERINGS_FAILURE_TTL_MS, OFFERINGS_TTL_MS } from '../core/cache-ttl';
export { OFFERINGS_FAILURE_TTL_MS, OFFERINGS_TTL_MS };
/**
 * The whole up-front check (every read it needs, in parallel, one attempt
 * each) waits this long at most; past it the request goes on unchecked. Far
 * below the 29 s an API Gateway request may take.
 */
export const OFFERINGS_DEADLINE_MS = 2_500;

/** A read's answer as kept: the set, or its failure (kept OFFERINGS_FAILURE_TTL_MS). */
type Read = { offered: ReadonlySet<string> } | { failure: unknown };

/** The one EC2 call the offerings make (an EC2Client's `send`). */
export type OfferingsSend = (
  command: DescribeAvailabilityZonesCommand | DescribeInstanceTypeOfferingsCommand,
  options: { abortSignal?: AbortSignal },
) => Promise<{
  AvailabilityZones?: Array<{ ZoneName?: string; ZoneType?: string }>;
  InstanceTypeOfferings?: Array<{ InstanceType?: string }>;
  NextToken?: string;
}>;

export class Ec2Offerings implements RegionOfferings {
  private readonly clients = new Map<string, OfferingsSend>();
  private readonly cache: LoadingCache<Read, () => Promise<ReadonlySet<string>>>;

  constructor(
    private readonly endpoint: string | undefined,
    now: () => number = Date.now,
    /** The EC2 call for a region (tests stub it); an EC2Client with one attempt by default. */
    private readonly sendFor: (region: string) => OfferingsSend = (region) =>
      this.defaultSend(region),
  ) {
    this.cache = loadingCache({
      ttlMs: OFFERINGS_TTL_MS,
      now,
      load: async (_key, read: () => Promise<ReadonlySet<string>>, setTtl) => {
        try {
          return { offered: await read() };
        } catch (failure) {
          // a failed read is remembered for a minute, then asked again
          setTtl(OFFERINGS_FAILURE_TTL_MS);
          return { failure };
        }
      },
    });
  }

  zones(region: string, signal?: AbortSignal): Promise<ReadonlySet<string>> {
    return this.cached(`zones:${region}`, async () => {
      const out = await this.send(region)(new DescribeAvailabilityZonesCommand({}), {
        abortSignal: signal,
      });
      return new Set(
        (out.AvailabilityZones ?? []).flatMap((z) =>
          z.ZoneName && (z.ZoneType === undefined || z.ZoneType === 'availability-zone')
            ? [z.ZoneName]
            : [],
        ),
      );
    });
  }

  instanceTypes(region: string, signal?: AbortSignal): Promise<ReadonlySet<string>> {
    return this.cached(`types:${region}`, async () => {
      const names = new Set<string>();
      let token: string | undefined;
      do {
        const out = await this.send(region)(
          new DescribeInstanceTypeOfferingsCommand({
            LocationType: 'region',
            Filters: [{ Name: 'location', Values: [region] }],
            MaxResults: 1000,
            NextToken: token,
          }),
          { abortSignal: signal },
        );
        for (const o of out.InstanceTypeOfferings ?? [])
          if (o.InstanceType) names.add(o.InstanceType);
        token = out.NextToken;
      } while (token);
      return names;
    });
  }

  /** `read` is the first caller's (its abort signal); later callers share its answer. */
  private async cached(
    key: string,
    read: () => Promise<ReadonlySet<string>>,
  ): Promise<ReadonlySet<string>> {
    const answer = await fetchLoaded(this.cache, key, read);
    if ('failure' in answer) throw answer.failure;
    return answer.offered;
  }

  private send(region: string): OfferingsSend {
    let send = this.clients.get(region);
    if (!send) {
      send = this.sendFor(region);
      this.clients.set(region, send);
    }
    return send;
  }

  private defaultSend(region: string): OfferingsSend {
    const client = lambdaEc2Client({
      region,
      endpoint: this.endpoint,
      maxAttempts: 1,
      timeoutMs: OFFERINGS_DEADLINE_MS,
    });
    return (command, options) =>
      command instanceof DescribeAvailabilityZonesCommand
        ? client.send(command, options)
        : client.send(command, options);
  }
}
