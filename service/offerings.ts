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
  const parsed = what.constraints ? parseConstraints(what.constraints) : {};
  const instanceType = parsed.instanceType ?? '';
  // the `zones=` constraint's values, refused as constraints (400 invalid-constraints)
  const constraintZones = parsed.zones ?? [];
  const zones = what.zones ?? [];
  const read = await readOfferings(
    ctx,
    region,
    { types: instanceType !== '', zones: zones.length + constraintZones.length > 0 },
    deadlineMs,
  );
  if (!read) return;
  const { types, known } = read;
  if (types && instanceType && !types.has(instanceType)) {
    throw new ConstraintsError(invalidInstanceTypeMessage(instanceType));
  }
  if (known) {
    const notOffered = constraintZones.find((z) => !known.has(z));
    if (notOffered !== undefined) throw new ConstraintsError(invalidZoneMessage(notOffered));
    const unknown = zones.find((z) => !known.has(z));
    if (unknown !== undefined) throw new PlacementError(invalidZoneMessage(unknown));
  }
}

/**
 * The region's offered types and zones, each read only when asked for, both
 * at once under one deadline (the whole up-front check waits this long at
 * most). Undefined, with a warning, when EC2 could not be asked in time (the
 * request then goes on unchecked); undefined too when nothing is asked for.
 */
async function readOfferings(
  ctx: Parameters<typeof checkOffered>[0],
  region: string,
  need: { types: boolean; zones: boolean },
  deadlineMs: number,
): Promise<{ types?: ReadonlySet<string>; known?: ReadonlySet<string> } | undefined> {
  const offerings = ctx.offerings;
  if (!offerings || (!need.types && !need.zones)) return undefined;
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
        need.types ? offerings.instanceTypes(region, controller.signal) : undefined,
        need.zones ? offerings.zones(region, controller.signal) : undefined,
      ]),
      deadline,
    ]);
    return { ...(types ? { types } : {}), ...(known ? { known } : {}) };
  } catch (err) {
    ctx.log.warn('could not check the region’s zones and instance types; not checked', {
      region,
      error: err instanceof Error ? err.name : String(err),
    });
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * retry-provisioning's up-front check. The retry's own constraints are
 * checked like any request's (Juju's words: `invalid constraint value: …`,
 * `availability zone "…" not valid`). What the merge takes from the model's
 * stored constraints is not the retry's to answer for: it is refused only
 * when the machine truly cannot launch with it (an instance type the region
 * does not offer; `zones=` of which no zone exists, where one valid zone is
 * enough to launch), and then the message says it is the model's stored
 * constraint. What comes from the model is read off the merged constraints
 * (`merged`, what the machine launches with): a stored `instance-type` that
 * the retry's `mem`/`cores`/`cpu-power`/`arch` mask in the merge (EC2's
 * conflicts) is not launched with, so it refuses nothing. Stored values can
 * be wrong although every write checks them: checked only while EC2 answers,
 * written before the check existed, or a zone gone since. The region's
 * types and zones are read once, in parallel under one deadline, and every
 * check is made on them in memory.
 */
export async function checkRetryConstraints(
  ctx: Parameters<typeof checkOffered>[0],
  region: string,
  own: string,
  modelConstraints: string,
  merged: string,
  deadlineMs: number = OFFERINGS_DEADLINE_MS,
): Promise<void> {
  const mine = parseConstraints(own);
  const stored = parseConstraints(modelConstraints);
  const launched = parseConstraints(merged);
  const storedType =
    mine.instanceType === undefined &&
    stored.instanceType &&
    launched.instanceType === stored.instanceType
      ? stored.instanceType
      : undefined;
  const storedZones =
    mine.zones === undefined && stored.zones && stored.zones.length > 0 ? stored.zones : [];
  const ownZones = mine.zones ?? [];
  const read = await readOfferings(
    ctx,
    region,
    {
      types: Boolean(mine.instanceType) || storedType !== undefined,
      zones: ownZones.length + storedZones.length > 0,
    },
    deadlineMs,
  );
  if (!read) return;
  const { types, known } = read;
  // the retry's own values first, in Juju's words
  if (types && mine.instanceType && !types.has(mine.instanceType))
    throw new ConstraintsError(invalidInstanceTypeMessage(mine.instanceType));
  const notOffered = known && ownZones.find((z) => !known.has(z));
  if (notOffered !== undefined) throw new ConstraintsError(invalidZoneMessage(notOffered));
  const fromModel = (why: string) =>
    new ConstraintsError(
      `${why}: from the model's constraints "${modelConstraints}", which this retry does not ` +
        'replace (change them with set-model-constraints, or give the retry its own)',
    );
  if (types && storedType !== undefined && !types.has(storedType))
    throw fromModel(invalidInstanceTypeMessage(storedType));
  if (known && storedZones.length > 0 && storedZones.every((z) => !known.has(z))) {
    throw fromModel(
      storedZones.length === 1
        ? invalidZoneMessage(storedZones[0]!)
        : `no availability zone of ${storedZones.map((z) => `"${z}"`).join(', ')} is valid`,
    );
  }
}

/** The up-front check's deadline passed before EC2 answered. */
class OfferingsTimeout extends Error {
  override name = 'OfferingsTimeout';
}
