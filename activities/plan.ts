import {
  CoreError,
  DEFAULT_ARCH,
  matchingInstanceTypes,
  parseConstraints,
  parsePlacement,
  type Constraints,
  type InstanceTypeInfo,
} from '../core';
import type { MachineRecord, ModelRecord } from '../state/types';
import { NoImageError, type ImageQuery } from '../ec2/images';
import type { LaunchPlan } from './types';

/** Juju's EC2 root disk: 8 GiB unless the `root-disk` constraint asks for more. */
export const MIN_ROOT_DISK_MIB = 8 * 1024;

/** The root volume's size in GiB (EC2's unit), rounded up, never below the minimum. */
export function rootDiskGiB(constraintMiB: number | undefined): number {
  return Math.ceil(Math.max(constraintMiB ?? 0, MIN_ROOT_DISK_MIB) / 1024);
}

/** The machine cannot be launched as it stands (constraints, type, image): it goes to error at once. */
export class LaunchPlanError extends Error {
  override readonly name = 'LaunchPlanError';
}

export interface PlanInputs {
  model: Pick<ModelRecord, 'region'>;
  machine: Pick<MachineRecord, 'id' | 'base' | 'constraints' | 'placement' | 'applications'>;
  /** The region's instance-type catalogue. */
  catalogue: readonly InstanceTypeInfo[];
  /** On-demand USD per hour by type name (issue 14); a type without one sorts after the priced. */
  prices?: ReadonlyMap<string, number>;
  /** The region's zone names (any state: health is checked at each zone choice). */
  zones: readonly string[];
  /** Zones offering a type (DescribeInstanceTypeOfferings). */
  zonesOffering(instanceType: string, zones: readonly string[]): Promise<string[]>;
  findImage(q: ImageQuery): Promise<string>;
  /** The subnet a `subnet=` placement names (by id or CIDR), with its zone; undefined when there is none. */
  findSubnet(idOrCidr: string): Promise<{ subnetId: string; zone: string } | undefined>;
  /** The instance profile every launched instance carries (PROVISIONER_INSTANCE_PROFILE), if any. */
  instanceProfile?: string;
}

/** The catalogue with each type's price as its cost (core orders by it, then by waste). */
export function priced<T extends InstanceTypeInfo>(
  catalogue: readonly T[],
  prices: ReadonlyMap<string, number> | undefined,
): T[] {
  return catalogue.map((t) => {
    const price = prices?.get(t.name);
    return price === undefined ? t : { ...t, cost: price };
  });
}

/** What the instance-type choice needs: the same for a launch and for a plan (service/plans.ts). */
export interface TypeChoiceInputs {
  region: string;
  /** The machine's constraints, parsed. */
  constraints: Constraints;
  /** The machine's constraints as text (for the error). */
  constraintsText: string;
  /** The zone a `zone=` placement (or a `subnet=` placement's subnet) allows, if any. */
  placementZone?: string;
  catalogue: readonly InstanceTypeInfo[];
  prices?: ReadonlyMap<string, number>;
  /** The region's zone names. */
  zones: readonly string[];
  zonesOffering(instanceType: string, zones: readonly string[]): Promise<string[]>;
}

/**
 * The instance type a machine is launched as: the cheapest, least wasteful
 * type that satisfies its constraints (core's matching, by price then waste)
 * and is offered in at least one zone the machine may use (its `zones`
 * constraint and placement). Throws LaunchPlanError with the message the
 * machine's status shows.
 */
export async function chooseInstanceType(
  inputs: TypeChoiceInputs,
): Promise<{ chosen: InstanceTypeInfo; zonesConstraint: string[] }> {
  const { region, constraints, placementZone } = inputs;
  let candidates: InstanceTypeInfo[];
  try {
    candidates = matchingInstanceTypes(
      region,
      priced(inputs.catalogue, inputs.prices),
      constraints,
    );
  } catch (err) {
    if (err instanceof CoreError) throw new LaunchPlanError(err.message);
    throw err;
  }
  const zonesConstraint = [...(constraints.zones ?? [])];
  const allowed = inputs.zones.filter(
    (z) =>
      (zonesConstraint.length === 0 || zonesConstraint.includes(z)) &&
      (placementZone === undefined || z === placementZone),
  );
  if (allowed.length === 0) {
    // the zones asked for (placement, `zones` constraint) are none the region has: name them
    const asked = [...(placementZone === undefined ? [] : [placementZone]), ...zonesConstraint];
    const unknown = asked.filter((z) => !inputs.zones.includes(z));
    const named = (unknown.length > 0 ? unknown : asked).map((z) => `"${z}"`).join(', ');
    throw new LaunchPlanError(
      `availability zone ${named} not valid: region ${region} has ${inputs.zones.join(', ') || 'no zones'}`,
    );
  }
  for (const candidate of candidates) {
    if ((await inputs.zonesOffering(candidate.name, allowed)).length > 0) {
      return { chosen: candidate, zonesConstraint };
    }
  }
  throw new LaunchPlanError(
    `no instance type matching constraints "${inputs.constraintsText}" is offered in ${allowed.join(', ')} (region ${region})`,
  );
}

/**
 * Decides what a machine is launched as: its instance type
 * (chooseInstanceType) and its image (the `image-id` constraint, or the
 * newest Canonical image for its base and the type's arch). Throws
 * LaunchPlanError with the message the machine's status shows.
 */
export async function buildLaunchPlan(inputs: PlanInputs): Promise<LaunchPlan> {
  const { machine, model } = inputs;
  const region = model.region;
  let placementZone: string | undefined;
  let subnetPlacement: string | undefined;
  let subnetId: string | undefined;
  let constraints: Constraints;
  try {
    constraints = parseConstraints(machine.constraints);
    const placement = machine.placement ? parsePlacement(machine.placement) : undefined;
    if (placement?.kind === 'zone') placementZone = placement.zone;
    if (placement?.kind === 'subnet') subnetPlacement = placement.subnet;
  } catch (err) {
    if (err instanceof CoreError) throw new LaunchPlanError(err.message);
    throw err;
  }
  if (subnetPlacement !== undefined) {
    // a subnet lives in one zone: the machine goes there (Juju: the subnet decides the zone)
    const subnet = await inputs.findSubnet(subnetPlacement);
    if (!subnet)
      throw new LaunchPlanError(`unable to find subnet "${subnetPlacement}" in region ${region}`);
    subnetId = subnet.subnetId;
    placementZone = subnet.zone;
  }
  const { chosen, zonesConstraint } = await chooseInstanceType({
    region,
    constraints,
    constraintsText: machine.constraints,
    ...(placementZone !== undefined ? { placementZone } : {}),
    catalogue: inputs.catalogue,
    ...(inputs.prices ? { prices: inputs.prices } : {}),
    zones: inputs.zones,
    zonesOffering: (type, zones) => inputs.zonesOffering(type, zones),
  });
  const arch = chosen.arches[0] ?? DEFAULT_ARCH;
  let imageId = constraints.imageId;
  if (!imageId) {
    try {
      imageId = await inputs.findImage({ region, base: machine.base, arch });
    } catch (err) {
      if (err instanceof NoImageError) throw new LaunchPlanError(err.message);
      throw err;
    }
  }
  return {
    region,
    instanceType: chosen.name,
    imageId,
    hardware: {
      arch,
      cores: chosen.cores,
      mem: chosen.mem,
      rootDisk: rootDiskGiB(constraints.rootDisk) * 1024,
    },
    zonesConstraint,
    ...(placementZone !== undefined ? { placementZone } : {}),
    ...(subnetId !== undefined ? { subnetId } : {}),
    applications: [...(machine.applications ?? [])],
    ...(chosen.cost !== undefined ? { pricePerHour: chosen.cost } : {}),
    ...(inputs.instanceProfile ? { instanceProfile: inputs.instanceProfile } : {}),
  };
}
