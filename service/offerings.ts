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
  zones(region: string, signal?: AbortSignal): Promise<ReadonlySet<string>>;
  /** Instance types offered anywhere in the region. */
  instanceTypes(region: string, signal?: AbortSignal): Promise<ReadonlySet<string>>;
}

/** Zones and offered types change rarely: one read per region and hour per container. */
export const OFFERINGS_TTL_MS = 60 * 60 * 1000;
/**
 * A failed or timed-out read is remembered this long: during an EC2 outage a
 * request pays the deadline once a minute per container, not every time.
 */
export const OFFERINGS_FAILURE_TTL_MS = 60 * 1000;
/**
 * The whole up-front check (every read it needs, in parallel, one attempt
 * each) waits this long at most; past it the request goes on unchecked. Far
 * below the 29 s an API Gateway request may take.
 */
export const OFFERINGS_DEADLINE_MS = 2_500;

interface Cached {
  /** When the entry stops answering. */
  until: number;
  value: Promise<ReadonlySet<string>>;
}

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
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly endpoint: string | undefined,
    private readonly now: () => number = Date.now,
    /** The EC2 call for a region (tests stub it); an EC2Client with one attempt by default. */
    private readonly sendFor: (region: string) => OfferingsSend = (region) =>
      this.defaultSend(region),
  ) {}

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

  private cached(
    key: string,
    read: () => Promise<ReadonlySet<string>>,
  ): Promise<ReadonlySet<string>> {
    const hit = this.cache.get(key);
    if (hit && this.now() < hit.until) return hit.value;
    const entry: Cached = { until: this.now() + OFFERINGS_TTL_MS, value: read() };
    this.cache.set(key, entry);
    // a failed read is remembered for a minute, then asked again
    entry.value.catch(() => {
      entry.until = this.now() + OFFERINGS_FAILURE_TTL_MS;
    });
    return entry.value;
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
    const client = new EC2Client({
      region,
      endpoint: this.endpoint,
      credentials: localCredentialsFor(this.endpoint),
      maxAttempts: 1,
      requestHandler: {
        connectionTimeout: OFFERINGS_DEADLINE_MS,
        requestTimeout: OFFERINGS_DEADLINE_MS,
        throwOnRequestTimeout: true,
      },
    });
    return (command, options) =>
      command instanceof DescribeAvailabilityZonesCommand
        ? client.send(command, options)
        : client.send(command, options);
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
 * the model's region does not offer and a zone it does not have, whether
 * placed (`zone=`, 400 invalid-placement) or in the `zones=` constraint
 * (400 invalid-constraints, the same words). When EC2
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
  deadlineMs: number = OFFERINGS_DEADLINE_MS,
): Promise<void> {
  const offerings = ctx.offerings;
  if (!offerings) return;
  const parsed = what.constraints ? parseConstraints(what.constraints) : {};
  const instanceType = parsed.instanceType ?? '';
  // the `zones=` constraint's values, refused as constraints (400 invalid-constraints)
  const constraintZones = parsed.zones ?? [];
  const zones = what.zones ?? [];
  if (!instanceType && zones.length === 0 && constraintZones.length === 0) return;
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new OfferingsTimeout());
    }, deadlineMs);
  });
  try {
    // both reads at once, under one deadline
    const [types, known] = await Promise.race([
      Promise.all([
        instanceType ? offerings.instanceTypes(region, controller.signal) : undefined,
        zones.length + constraintZones.length > 0
          ? offerings.zones(region, controller.signal)
          : undefined,
      ]),
      deadline,
    ]);
    if (types && instanceType && !types.has(instanceType)) {
      throw new ConstraintsError(invalidInstanceTypeMessage(instanceType));
    }
    if (known) {
      const notOffered = constraintZones.find((z) => !known.has(z));
      if (notOffered !== undefined) throw new ConstraintsError(invalidZoneMessage(notOffered));
      const unknown = zones.find((z) => !known.has(z));
      if (unknown !== undefined) throw new PlacementError(invalidZoneMessage(unknown));
    }
  } catch (err) {
    if (err instanceof ConstraintsError || err instanceof PlacementError) throw err;
    ctx.log.warn('could not check the region’s zones and instance types; not checked', {
      region,
      error: err instanceof Error ? err.name : String(err),
    });
  } finally {
    clearTimeout(timer);
  }
}

/** The up-front check's deadline passed before EC2 answered. */
class OfferingsTimeout extends Error {
  override name = 'OfferingsTimeout';
}
