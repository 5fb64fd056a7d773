import type { Logger } from '@aws-lambda-powertools/logger';
import { ConstraintsError, PlacementError, parseConstraints } from '../core';

import { OFFERINGS_DEADLINE_MS, type RegionOfferings } from '../ec2/offerings';

export {
  Ec2Offerings,
  OFFERINGS_DEADLINE_MS,
  OFFERINGS_FAILURE_TTL_MS,
  OFFERINGS_TTL_MS,
  type OfferingsSend,
  type RegionOfferings,
} from '../ec2/offerings';

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
