/**
 * Keys of the items the provisioning workflow keeps beside the entities
 * (see state/provisioning.ts). They live in the model's partition, so a
 * model's removal finds them with one Query.
 */

/**
 * The model's zone-claims version: bumped by every zone claim or release,
 * and the condition of each claim (optimistic concurrency).
 */
export const ZONE_CLAIMS_SK = '#ZONE-CLAIMS';
