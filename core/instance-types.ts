/**
 * Instance-type selection, after Juju's environs/instances/instancetype.go,
 * with DESIGN.md's rule for `instance-type` combined with other constraints.
 */
import { DEFAULT_ARCH } from './arch';
import {
  type ConstraintKey,
  type Constraints,
  constraintsToString,
  hasArch,
  hasInstanceType,
  withoutConstraints,
} from './constraints';
import { NoMatchingInstanceTypeError } from './errors';
import { compareStrings, goQuote } from './text';

/**
 * Keys kept on a machine and shown but never matched against a type (the
 * keys EC2 cannot honour: ec2/validator.ts reports them as unsupported).
 */
export const UNMATCHED_CONSTRAINTS: readonly ConstraintKey[] = [
  'tags',
  'virt-type',
  'allocate-public-ip',
];

/** One instance type of a region's catalogue. */
export interface InstanceTypeInfo {
  readonly name: string;
  /** Architectures in Juju's names (amd64, arm64). */
  readonly arches: readonly string[];
  /** vCPUs (EC2's DefaultVCpus). */
  readonly cores: number;
  /** MiB. */
  readonly mem: number;
  /** Juju's cpu-power units, when known; types without it pass any cpu-power constraint. */
  readonly cpuPower?: number;
  /** MiB of instance-store root disk, when fixed; types without it pass any root-disk constraint. */
  readonly rootDisk?: number;
  /**
   * Price, in any unit that is the same for the whole catalogue (the
   * provisioner uses USD per on-demand hour), when known. Types without one
   * sort after every priced type.
   */
  readonly cost?: number;
  /** Previous-generation types are only chosen when `instance-type` names them. */
  readonly deprecated?: boolean;
  /** `false` is the same as `deprecated: true` (EC2's CurrentGeneration). */
  readonly currentGeneration?: boolean;
}

/** The least MiB of memory chosen when neither `mem` nor `instance-type` is set. */
export const DEFAULT_MIN_MEM = 2048;
/** The least cores chosen when neither `cores` nor `instance-type` is set. */
export const DEFAULT_MIN_CORES = 1;

interface Requirements {
  /** Acceptable arches; undefined accepts any. */
  readonly arches?: readonly string[];
  readonly cores?: number;
  readonly mem?: number;
  readonly cpuPower?: number;
  readonly rootDisk?: number;
  readonly allowDeprecated: boolean;
}

function isDeprecated(t: InstanceTypeInfo): boolean {
  return t.deprecated === true || t.currentGeneration === false;
}

/** Juju's `match`: the type, with its arches narrowed to acceptable ones, or undefined. */
function match(t: InstanceTypeInfo, req: Requirements): InstanceTypeInfo | undefined {
  const arches =
    req.arches === undefined ? [...t.arches] : t.arches.filter((a) => req.arches?.includes(a));
  if (arches.length === 0) return undefined;
  if (isDeprecated(t) && !req.allowDeprecated) return undefined;
  if (req.cores !== undefined && t.cores < req.cores) return undefined;
  if (req.cpuPower !== undefined && t.cpuPower !== undefined && t.cpuPower < req.cpuPower) {
    return undefined;
  }
  if (req.mem !== undefined && t.mem < req.mem) return undefined;
  if (
    req.rootDisk !== undefined &&
    t.rootDisk !== undefined &&
    t.rootDisk > 0 &&
    t.rootDisk < req.rootDisk
  ) {
    return undefined;
  }
  return { ...t, arches };
}

function select(catalogue: readonly InstanceTypeInfo[], req: Requirements): InstanceTypeInfo[] {
  return catalogue.flatMap((t) => {
    const m = match(t, req);
    return m === undefined ? [] : [m];
  });
}

function compareCost(a: InstanceTypeInfo, b: InstanceTypeInfo): number {
  if (a.cost !== undefined && b.cost !== undefined) return a.cost - b.cost;
  if (a.cost !== undefined) return -1;
  if (b.cost !== undefined) return 1;
  return 0;
}

/**
 * Cheapest and least wasteful first: cost (known before unknown), then mem,
 * cores, cpu-power, root disk, then name. A total order, so results are
 * deterministic whatever the catalogue's order.
 */
export function compareInstanceTypes(a: InstanceTypeInfo, b: InstanceTypeInfo): number {
  return (
    compareCost(a, b) ||
    a.mem - b.mem ||
    a.cores - b.cores ||
    (a.cpuPower ?? 0) - (b.cpuPower ?? 0) ||
    (a.rootDisk ?? 0) - (b.rootDisk ?? 0) ||
    compareStrings(a.name, b.name)
  );
}

function max(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

/**
 * The catalogue's types that satisfy `constraints`, cheapest and least
 * wasteful first, each with its arches narrowed to the acceptable ones.
 *
 * - Without `instance-type`: unset `cores` means at least 1, unset `mem` at
 *   least 2048 MiB, unset or empty `arch` amd64; `0` (or `key=`) does not
 *   filter. If nothing has 2048 MiB and `mem` was unset, the one type with
 *   the most memory that meets the other constraints is chosen (as Juju).
 *   Deprecated types are never chosen.
 * - With `instance-type`: the named type when it meets every other
 *   constraint; otherwise the tightest of both — types with at least the
 *   named type's and the constraints' cores, mem and cpu-power, in the
 *   constraint's arch or else the named type's.
 *
 * Keys the provider reports as unsupported (EC2's: `virt-type`, `tags`,
 * `allocate-public-ip`) are kept on the machine and shown, but take no part
 * in matching. Price (`cost`) orders what fits and never decides it.
 *
 * Throws `NoMatchingInstanceTypeError`, naming the constraints that were
 * matched: `no instance types in us-east-1 matching constraints "mem=1048576M"`.
 */
export function matchingInstanceTypes(
  region: string,
  catalogue: readonly InstanceTypeInfo[],
  requested: Constraints,
  unsupported: readonly ConstraintKey[] = UNMATCHED_CONSTRAINTS,
): InstanceTypeInfo[] {
  const constraints = withoutConstraints(requested, unsupported);
  const arch = hasArch(constraints) ? [constraints.arch ?? ''] : undefined;
  const common = { rootDisk: constraints.rootDisk };
  let found: InstanceTypeInfo[] = [];

  if (hasInstanceType(constraints)) {
    const named = catalogue.find((t) => t.name === constraints.instanceType);
    if (named !== undefined) {
      const exact = match(named, {
        ...common,
        arches: arch,
        cores: constraints.cores,
        mem: constraints.mem,
        cpuPower: constraints.cpuPower,
        allowDeprecated: true,
      });
      if (exact !== undefined) return [exact];
      found = select(catalogue, {
        ...common,
        arches: arch ?? named.arches,
        cores: max(named.cores, constraints.cores),
        mem: max(named.mem, constraints.mem),
        cpuPower: max(named.cpuPower, constraints.cpuPower),
        allowDeprecated: false,
      });
    }
  } else {
    const requirements: Requirements = {
      ...common,
      arches: arch ?? [DEFAULT_ARCH],
      cores: constraints.cores ?? DEFAULT_MIN_CORES,
      mem: constraints.mem ?? DEFAULT_MIN_MEM,
      cpuPower: constraints.cpuPower,
      allowDeprecated: false,
    };
    found = select(catalogue, requirements);
    if (found.length === 0 && constraints.mem === undefined) {
      const relaxed = select(catalogue, {
        ...requirements,
        cores: constraints.cores,
        mem: undefined,
      });
      const largest = relaxed.sort(
        (a, b) => b.mem - a.mem || compareCost(a, b) || compareInstanceTypes(a, b),
      )[0];
      if (largest !== undefined) return [largest];
    }
  }

  if (found.length === 0) {
    throw new NoMatchingInstanceTypeError(
      `no instance types in ${region} matching constraints ${goQuote(constraintsToString(constraints))}`,
    );
  }
  return found.sort(compareInstanceTypes);
}
