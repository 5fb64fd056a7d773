import type { Logger } from '@aws-lambda-powertools/logger';
import {
  DescribeAvailabilityZonesCommand,
  DescribeInstanceTypeOfferingsCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import { ConstraintsError, PlacementError, parseConstraints } from '../core';
import { localCredentialsFor } from '../config/clients';

/**
 * What a region offers, as a request is checked against it before anything
 * is recorded: its availability zones and the instance types offered there.
 * Juju refuses an unknown zone (`availability zone "us-east-1z" not valid`)
 * and an unknown `instance-type` (its constraints vocabulary) up front; so do
 * we, instead of recording a machine that can only fail later.
 */
export interface RegionOfferings {
  /** The region's availability zones (not Local or Wavelength zones), whatever their state. */
  zones(region: string): Promise<ReadonlySet<string>>;
  /** Instance types offered anywhere in the region. */
  instanceTypes(region: string): Promise<ReadonlySet<string>>;
}

/** Zones and offered types change rarely: one read per region and hour per container. */
const OFFERINGS_TTL_MS = 60 * 60 * 1000;
/** A request waits this long at most for EC2's answer (the check is skipped past it). */
const OFFERINGS_TIMEOUT_MS = 4_000;

interface Cached {
  at: number;
  value: Promise<ReadonlySet<string>>;
}

export class Ec2Offerings implements RegionOfferings {
  private readonly clients = new Map<string, EC2Client>();
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly endpoint: string | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  zones(region: string): Promise<ReadonlySet<string>> {
    return this.cached(`zones:${region}`, async () => {
      const out = await this.client(region).send(new DescribeAvailabilityZonesCommand({}));
      return new Set(
        (out.AvailabilityZones ?? []).flatMap((z) =>
          z.ZoneName && (z.ZoneType === undefined || z.ZoneType === 'availability-zone')
            ? [z.ZoneName]
            : [],
        ),
      );
    });
  }

  instanceTypes(region: string): Promise<ReadonlySet<string>> {
    return this.cached(`types:${region}`, async () => {
      const names = new Set<string>();
      let token: string | undefined;
      do {
        const out = await this.client(region).send(
          new DescribeInstanceTypeOfferingsCommand({
            LocationType: 'region',
            Filters: [{ Name: 'location', Values: [region] }],
            MaxResults: 1000,
            NextToken: token,
          }),
        );
        for (const o of out.InstanceTypeOfferings ?? [])
          if (o.InstanceType) names.add(o.InstanceType);
        token = out.NextToken;
      } while (token);
      return names;
    });
  }

  private cached(
    key: string,
    read: () => Promise<ReadonlySet<string>>,
  ): Promise<ReadonlySet<string>> {
    const hit = this.cache.get(key);
    if (hit && this.now() - hit.at < OFFERINGS_TTL_MS) return hit.value;
    const entry: Cached = { at: this.now(), value: read() };
    this.cache.set(key, entry);
    // a failed read is not remembered
    entry.value.catch(() => {
      if (this.cache.get(key) === entry) this.cache.delete(key);
    });
    return entry.value;
  }

  private client(region: string): EC2Client {
    let client = this.clients.get(region);
    if (!client) {
      client = new EC2Client({
        region,
        endpoint: this.endpoint,
        credentials: localCredentialsFor(this.endpoint),
        maxAttempts: 2,
        requestHandler: {
          connectionTimeout: OFFERINGS_TIMEOUT_MS,
          requestTimeout: OFFERINGS_TIMEOUT_MS,
          throwOnRequestTimeout: true,
        },
      });
      this.clients.set(region, client);
    }
    return client;
  }
}

/** Juju's constraints-validator text for a value outside a vocabulary. */
export function invalidInstanceTypeMessage(instanceType: string): string {
  return `invalid constraint value: instance-type=${instanceType}`;
}

/** Juju's text (errors.NotValidf) for a zone the region does not have. */
export function invalidZoneMessage(zone: string): string {
  return `availability zone "${zone}" not valid`;
}

/**
 * Refuses, before anything is recorded or any id spent, an `instance-type`
 * the model's region does not offer and a zone it does not have. When EC2
 * cannot be asked the request goes on unchecked (the machine's workflow
 * meets the same mistake later and says so): an EC2 outage must not stop
 * requests the worker would carry out once it is back.
 */
export async function checkOffered(
  /** The request's ServiceContext (named by shape: context.ts builds an Ec2Offerings). */
  ctx: {
    offerings?: RegionOfferings;
    log: Pick<Logger, 'warn'>;
  },
  region: string,
  what: { constraints?: string; zones?: readonly string[] },
): Promise<void> {
  const offerings = ctx.offerings;
  if (!offerings) return;
  const instanceType = what.constraints ? parseConstraints(what.constraints).instanceType : '';
  const zones = what.zones ?? [];
  if (!instanceType && zones.length === 0) return;
  try {
    if (instanceType && !(await offerings.instanceTypes(region)).has(instanceType)) {
      throw new ConstraintsError(invalidInstanceTypeMessage(instanceType));
    }
    if (zones.length > 0) {
      const known = await offerings.zones(region);
      const unknown = zones.find((z) => !known.has(z));
      if (unknown !== undefined) throw new PlacementError(invalidZoneMessage(unknown));
    }
  } catch (err) {
    if (err instanceof ConstraintsError || err instanceof PlacementError) throw err;
    ctx.log.warn('could not check the region’s zones and instance types; not checked', {
      region,
      error: err instanceof Error ? err.name : String(err),
    });
  }
}
