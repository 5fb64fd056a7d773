/**
 * Availability-set mode (Juju's Azure `availability-sets-enabled`) on EC2:
 * each distribution group gets a partition placement group, and within a
 * zone a machine takes its group's least populous partition.
 */

/** Partitions per placement group: EC2's maximum per Availability Zone. */
export const PARTITION_COUNT = 7;

/** EC2's limit on a placement group's name. */
export const MAX_PLACEMENT_GROUP_NAME = 255;

/**
 * The partition (1-based, as EC2 numbers them) for the next machine of a
 * group in one zone: the least populous, ties to the lowest number. `counts`
 * maps partition number to the group's machines in it there; partitions
 * outside 1..count are ignored.
 */
export function leastPopulousPartition(
  counts: Readonly<Record<number, number>>,
  count: number = PARTITION_COUNT,
): number {
  if (!Number.isInteger(count) || count < 1) {
    throw new RangeError(`partition count must be a positive integer, not ${count}`);
  }
  let best = 1;
  let bestCount = Number.POSITIVE_INFINITY;
  for (let p = 1; p <= count; p++) {
    const n = Object.hasOwn(counts, p) ? (counts[p] ?? 0) : 0;
    if (n < bestCount) {
      best = p;
      bestCount = n;
    }
  }
  return best;
}

/** FNV-1a, 32 bits, hex: a short stable digest without I/O or dependencies. */
function digest(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/**
 * The placement group of an application's machines in a model: named from
 * the model's uid (a re-created model never reuses the old one's group) and
 * the application. Names past EC2's 255 characters keep their start and end
 * in a digest of the whole, so they stay distinct.
 */
export function placementGroupName(modelUid: string, application: string): string {
  const name = `juju-${modelUid}-${application}`;
  if (name.length <= MAX_PLACEMENT_GROUP_NAME) return name;
  const tail = `-${digest(name)}`;
  return name.slice(0, MAX_PLACEMENT_GROUP_NAME - tail.length) + tail;
}
