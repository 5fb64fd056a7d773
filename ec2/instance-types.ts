import {
  paginateDescribeInstanceTypeOfferings,
  paginateDescribeInstanceTypes,
  type EC2Client,
  type InstanceTypeInfo as Ec2InstanceTypeInfo,
} from '@aws-sdk/client-ec2';
import { archFromEc2, type InstanceTypeInfo } from '../core';
import { INSTANCE_TYPES_TTL_MS } from '../core/cache-ttl';

/** One instance type as the provisioner sees it (core's shape: cores are vCPUs, memory in MiB). */
export type CatalogueEntry = InstanceTypeInfo & { currentGeneration: boolean };

export function toCatalogueEntry(t: Ec2InstanceTypeInfo): CatalogueEntry | undefined {
  if (!t.InstanceType) return undefined;
  const arches = (t.ProcessorInfo?.SupportedArchitectures ?? [])
    .map((a) => archFromEc2(a))
    .filter((a): a is NonNullable<typeof a> => a !== undefined);
  if (arches.length === 0) return undefined; // i386-only and the like: never launchable here
  return {
    name: t.InstanceType,
    arches,
    cores: t.VCpuInfo?.DefaultVCpus ?? 0,
    mem: t.MemoryInfo?.SizeInMiB ?? 0,
    currentGeneration: t.CurrentGeneration ?? false,
  };
}

interface Cached<T> {
  value: Promise<T>;
  expires: number;
}

/**
 * One region's instance-type catalogue and per-zone offerings, fetched once
 * (paginated) and cached with a TTL, never a call per machine. Concurrent
 * first callers share one fetch; a failed fetch is not cached.
 */
export class InstanceTypeCatalogue {
  private types?: Cached<CatalogueEntry[]>;
  private readonly offerings = new Map<string, Cached<Set<string>>>();

  constructor(
    private readonly ec2: EC2Client,
    private readonly ttlMs = INSTANCE_TYPES_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  all(): Promise<CatalogueEntry[]> {
    if (this.types && this.types.expires > this.now()) return this.types.value;
    const value = this.fetchTypes();
    const entry = { value, expires: this.now() + this.ttlMs };
    this.types = entry;
    value.catch(() => {
      if (this.types === entry) this.types = undefined;
    });
    return value;
  }

  /** Names of the types offered in one availability zone. */
  offeredIn(zone: string): Promise<Set<string>> {
    const hit = this.offerings.get(zone);
    if (hit && hit.expires > this.now()) return hit.value;
    const value = this.fetchOfferings(zone);
    const entry = { value, expires: this.now() + this.ttlMs };
    this.offerings.set(zone, entry);
    value.catch(() => {
      if (this.offerings.get(zone) === entry) this.offerings.delete(zone);
    });
    return value;
  }

  /** Those of `zones` that offer `instanceType`, in the order given. */
  async zonesOffering(instanceType: string, zones: readonly string[]): Promise<string[]> {
    const offered = await Promise.all(zones.map((z) => this.offeredIn(z)));
    return zones.filter((_, i) => offered[i]?.has(instanceType));
  }

  private async fetchTypes(): Promise<CatalogueEntry[]> {
    const entries: CatalogueEntry[] = [];
    for await (const out of paginateDescribeInstanceTypes(
      { client: this.ec2, pageSize: 100 },
      {},
    )) {
      for (const t of out.InstanceTypes ?? []) {
        const entry = toCatalogueEntry(t);
        if (entry) entries.push(entry);
      }
    }
    return entries;
  }

  private async fetchOfferings(zone: string): Promise<Set<string>> {
    const names = new Set<string>();
    for await (const out of paginateDescribeInstanceTypeOfferings(
      { client: this.ec2, pageSize: 1000 },
      { LocationType: 'availability-zone', Filters: [{ Name: 'location', Values: [zone] }] },
    )) {
      for (const o of out.InstanceTypeOfferings ?? [])
        if (o.InstanceType) names.add(o.InstanceType);
    }
    return names;
  }
}
