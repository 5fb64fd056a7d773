import type { InstanceTypeInfo as Ec2InstanceTypeInfo } from '@aws-sdk/client-ec2';

/**
 * A SYNTHETIC on-demand price list for the instance types the local EC2
 * endpoint (moto) offers. These are not AWS's prices: they are made up by the
 * rules below so that the price ordering is exercised end to end on the local
 * stack, with the relations between types that AWS's own list has:
 *
 * - a type's price is proportional to its vCPUs and memory, at per-vCPU and
 *   per-GiB rates set by its family (general purpose `m`, compute `c`,
 *   memory `r`/`x`/`z`/`u`, storage `i`/`d`/`h`, accelerated `p`/`g`/…);
 * - burstable types (`t*`, EC2's BurstablePerformanceSupported) are priced by
 *   memory alone at a low rate, so they are the cheapest small types;
 * - Graviton (arm64-only) types cost 20% less, AMD (`…a`) 10% less, local NVMe
 *   (`…d`) 10% more, enhanced networking (`…n`) 20% more;
 * - previous-generation types cost 25% more than a current type of the same
 *   size, as AWS's older families cost more per vCPU and GiB than the new.
 *
 * Tests must derive what they expect from the prices this serves, never from
 * memory of AWS.
 */

export interface SyntheticPriceInput {
  name: string;
  vcpus: number;
  memMiB: number;
  currentGeneration: boolean;
  burstable: boolean;
  arches: readonly string[];
}

interface Rates {
  perVcpu: number;
  perGiB: number;
}

const GENERAL: Rates = { perVcpu: 0.0336, perGiB: 0.0036 };
const COMPUTE: Rates = { perVcpu: 0.0336, perGiB: 0.0045 };
const MEMORY: Rates = { perVcpu: 0.0336, perGiB: 0.0037 };
const BURSTABLE: Rates = { perVcpu: 0, perGiB: 0.0104 };

/** The family's letters before its generation digit (`m` of m5, `inf` of inf2, `u-` of u-6tb1). */
function familyLetters(name: string): string {
  const family = name.split('.')[0] ?? name;
  return /^[a-z-]+/.exec(family)?.[0] ?? family;
}

/** The family's letters after its generation digit (`gd` of m6gd, `a` of c7a, `` of m5). */
function familySuffix(name: string): string {
  const family = name.split('.')[0] ?? name;
  return /^[a-z-]+\d+([a-z-]*)/.exec(family)?.[1] ?? '';
}

function rates(t: SyntheticPriceInput): { rates: Rates; factor: number } {
  if (t.burstable || familyLetters(t.name) === 't') return { rates: BURSTABLE, factor: 1 };
  const letters = familyLetters(t.name);
  if (letters === 'c') return { rates: COMPUTE, factor: 1 };
  if (['r', 'x', 'z', 'u', 'u-'].includes(letters)) return { rates: MEMORY, factor: 1.2 };
  if (['i', 'im', 'is', 'd', 'h'].includes(letters)) return { rates: MEMORY, factor: 1.25 };
  if (['p', 'g', 'inf', 'trn', 'dl', 'f', 'vt', 'gr'].includes(letters)) {
    return { rates: GENERAL, factor: 3 };
  }
  if (letters === 'hpc') return { rates: COMPUTE, factor: 1.1 };
  if (letters === 'mac') return { rates: GENERAL, factor: 4 };
  return { rates: GENERAL, factor: 1 };
}

/** USD per hour, rounded to 4 decimal places, never below $0.0001. */
export function syntheticPrice(t: SyntheticPriceInput): number {
  const { rates: r, factor: familyFactor } = rates(t);
  let factor = familyFactor;
  const suffix = familySuffix(t.name);
  const armOnly = t.arches.length > 0 && t.arches.every((a) => a === 'arm64');
  if (armOnly || suffix.startsWith('g')) factor *= 0.8;
  else if (suffix.startsWith('a')) factor *= 0.9;
  if (suffix.includes('d')) factor *= 1.1;
  if (suffix.includes('n')) factor *= 1.2;
  if (!t.currentGeneration) factor *= 1.25;
  const raw = (t.vcpus * r.perVcpu + (t.memMiB / 1024) * r.perGiB) * factor;
  return Math.max(0.0001, Math.round(raw * 10_000) / 10_000);
}

/** The synthetic price input of one of EC2's DescribeInstanceTypes entries. */
export function syntheticPriceInput(t: Ec2InstanceTypeInfo): SyntheticPriceInput | undefined {
  if (!t.InstanceType) return undefined;
  return {
    name: t.InstanceType,
    vcpus: t.VCpuInfo?.DefaultVCpus ?? 0,
    memMiB: t.MemoryInfo?.SizeInMiB ?? 0,
    currentGeneration: t.CurrentGeneration ?? false,
    burstable: t.BurstablePerformanceSupported ?? false,
    arches: (t.ProcessorInfo?.SupportedArchitectures ?? []).map((a) =>
      a === 'x86_64' ? 'amd64' : a,
    ),
  };
}
