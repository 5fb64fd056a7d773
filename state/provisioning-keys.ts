/**
 * Keys of the items the provisioning workflow keeps beside the entities
 * (see state/provisioning.ts). They live in the model's partition, so a
 * model's removal finds them with one Query.
 */

/** A distribution group's zone counts (state/zone-counts.ts); `''` is the bare machines' group. */
export const zoneCountSk = (group: string): string => `#ZONES#${group}`;
