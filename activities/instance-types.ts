import {
  DescribeInstanceTypeOfferingsCommand,
  DescribeInstanceTypesCommand,
  type EC2Client,
  type InstanceTypeInfo as Ec2InstanceTypeInfo,
} from '@aws-sdk/client-ec2';

/** One instance type as the provisioner sees it (cores are vCPUs, memory in MiB). */
export interface CatalogueEntry {
  name: string;
  arches: string[];
  cores: number;
  mem: number;
  currentGeneration: boolean;
}

const ARCH_FROM_EC2: Record<string, string> = { x86_64: 'amd64', arm64: 'arm64' };

export function toCatalogueEntry(t: Ec2InstanceTypeInfo): CatalogueEntry | undefined {
  if (!t.InstanceType) return undefined;
  const arches = (t.ProcessorInfo?.SupportedArchitectures ?? [])
    .map((a) => ARCH_FROM_EC2[a])
    .filter((a): a is string => a !== undefined);
  return {
    name: t.InstanceType,
    arches,
    cores: t.VCpuInfo?.DefaultVCpus ?? 0,
    mem: t.MemoryInfo?.SizeInMiB ?? 0,
    currentGeneration: t.CurrentGeneration ?? false,
  };
}

/**
 * EC2's instance-type catalogue and per-zone offerings, fetched once per
 * region (paginated) and cached with a TTL, never an unfiltered call per machine.
 */
export class InstanceTypeCatalogue {
  private types?: { entries: CatalogueEntry[]; expires: number };
  private readonly offerings = new Map<string, { names: Set<string>; expires: number }>();

  constructor(
    private readonly ec2: EC2Client,
    private readonly ttlMs = 60 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async all(): Promise<CatalogueEntry[]> {
    if (this.types && this.types.expires > this.now()) return this.types.entries;
    const entries: CatalogueEntry[] = [];
    let token: string | undefined;
    do {
      const out = await this.ec2.send(
        new DescribeInstanceTypesCommand({ MaxResults: 100, NextToken: token }),
      );
      for (const t of out.InstanceTypes ?? []) {
        const entry = toCatalogueEntry(t);
        if (entry) entries.push(entry);
      }
      token = out.NextToken;
    } while (token);
    this.types = { entries, expires: this.now() + this.ttlMs };
    return entries;
  }

  /** Names of the types offered in one availability zone. */
  async offeredIn(zone: string): Promise<Set<string>> {
    const hit = this.offerings.get(zone);
    if (hit && hit.expires > this.now()) return hit.names;
    const names = new Set<string>();
    let token: string | undefined;
    do {
      const out = await this.ec2.send(
        new DescribeInstanceTypeOfferingsCommand({
          LocationType: 'availability-zone',
          Filters: [{ Name: 'location', Values: [zone] }],
          MaxResults: 1000,
          NextToken: token,
        }),
      );
      for (const o of out.InstanceTypeOfferings ?? [])
        if (o.InstanceType) names.add(o.InstanceType);
      token = out.NextToken;
    } while (token);
    this.offerings.set(zone, { names, expires: this.now() + this.ttlMs });
    return names;
  }
}
