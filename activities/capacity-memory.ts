import { DEFAULT_CAPACITY_MEMORY_MS } from '../core/cache-ttl';
export { DEFAULT_CAPACITY_MEMORY_MS };

/**
 * Zone-specific capacity failures of an instance type in a zone, remembered
 * across machines for a while (Karpenter's unavailable-offerings cache), so
 * the next machines try other zones first instead of each discovering the
 * shortage. Per worker process; an explicit retry ignores it.
 *
 * Not on lru-cache: nothing is loaded (failures are written in as they
 * happen), so a Map of expiry times is all it needs.
 */
export class CapacityMemory {
  private readonly until = new Map<string, number>();

  constructor(
    readonly ttlMs = DEFAULT_CAPACITY_MEMORY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  private static key(region: string, instanceType: string, zone: string): string {
    return `${region}/${instanceType}/${zone}`;
  }

  remember(region: string, instanceType: string, zone: string): void {
    if (this.ttlMs <= 0) return;
    this.until.set(CapacityMemory.key(region, instanceType, zone), this.now() + this.ttlMs);
  }

  /** The zones of `zones` where the type lately lacked capacity. */
  short(region: string, instanceType: string, zones: readonly string[]): string[] {
    const now = this.now();
    return zones.filter((zone) => {
      const key = CapacityMemory.key(region, instanceType, zone);
      const until = this.until.get(key);
      if (until === undefined) return false;
      if (until <= now) {
        this.until.delete(key);
        return false;
      }
      return true;
    });
  }

  /** Forgets a zone's shortage (a launch there just succeeded). */
  forget(region: string, instanceType: string, zone: string): void {
    this.until.delete(CapacityMemory.key(region, instanceType, zone));
  }
}
