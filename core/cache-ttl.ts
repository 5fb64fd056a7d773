/**
 * Every cache lifetime in one place (Karpenter's pkg/cache/cache.go does the
 * same): what is cached, for how long, and why. The caches import these; a
 * test or a caller may still hand a cache its own.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** DESIGN.md: zone states are read fresh for each choice, through a cache that lives at most 5 s. */
export const ZONE_CACHE_MAX_MS = 5 * SECOND;

/** The instance-type catalogue and each region's offerings (the worker's): one read an hour. */
export const INSTANCE_TYPES_TTL_MS = HOUR;

/** An image id per region, base and arch: new builds appear every few days; ten minutes is fresh. */
export const IMAGES_TTL_MS = 10 * MINUTE;

/** The Lambdas' zones and offered types change rarely: one read per region and hour per container. */
export const OFFERINGS_TTL_MS = HOUR;

/**
 * A failed or timed-out offerings read is remembered this long: during an EC2
 * outage a request pays the deadline once a minute per container, not every time.
 */
export const OFFERINGS_FAILURE_TTL_MS = MINUTE;

/** Prices change rarely (AWS publishes a few times a month): one fetch per region a day. */
export const PRICE_TTL_MS = 24 * HOUR;

/** After a failed price lookup the fallback order is used this long before trying again. */
export const PRICE_FAILURE_TTL_MS = 5 * MINUTE;

/** Karpenter keeps insufficient-capacity answers for 3 minutes; so do we, by default. */
export const DEFAULT_CAPACITY_MEMORY_MS = 3 * MINUTE;

/** How long a machine read stays usable: the same run's next step (taken once), even when the worker is slow. */
export const RECENT_READ_MS = 30 * SECOND;
