import {
  paginateDescribeInstanceTypeOfferings,
  paginateDescribeInstanceTypes,
  type EC2Client,
  type InstanceTypeInfo as Ec2InstanceTypeInfo,
} from '@aws-sdk/client-ec2';
import { archFromEc2, type InstanceTypeInfo } from '../core';
import { INSTANCE_TYPES_TTL_MS } from '../core/cache-ttl';
import { fetchLoaded, loadingCache, type LoadingCache } from './ttl-cache';

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

/**
 * One region's instance-type catalogue and per-zone offerings, fetched once
 * (paginated) and cached with a TTL, never a call per machine. Concurrent
 * first callers share one fetch; a failed fetch is not kept (ec2/ttl-cache.ts).
 */
export class InstanceTypeCatalogue {
  private readonly types: LoadingCache<CatalogueEntry[]>;
  private readonly offerings: LoadingCache<Set<string>>;

  constructor(
    private readonly ec2: EC2Client,
    ttlMs = INSTANCE_TYPES_TTL_MS,
    now: () => number = Date.now,
  ) {
    this.types = loadingCache({ ttlMs, now, load: () => this.fetchTypes() });
    this.offerings = loadingCache({ ttlMs, now, load: (zone) => this.fetchOfferings(zone) });
  }

  all(): Promise<CatalogueEntry[]> {
    return fetchLoaded(this.types, 'types', undefined);
  }

  /** Names of the types offered in one availability zone. */
  offeredIn(zone: string): Promise<Set<string>> {
    return fetchLoaded(this.offerings, zone, undefined);
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
