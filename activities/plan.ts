import {
  CoreError,
  DEFAULT_ARCH,
  parseConstraints,
  parsePlacement,
  type Constraints,
  type InstanceTypeInfo,
} from '../core';
import { chooseInstanceType, LaunchPlanError } from '../core/instance-choice';
import type { MachineRecord, ModelRecord } from '../state/types';
import { NoImageError, type ImageQuery } from '../ec2/images';
import type { LaunchPlan } from './types';

// The type choice is pure and shared with the API's plans: core/instance-choice.ts.
export {
  chooseInstanceType,
  LaunchPlanError,
  priced,
  type TypeChoiceInputs,
} from '../core/instance-choice';

/** Juju's EC2 root disk: 8 GiB unless the `root-disk` constraint asks for more. */
export const MIN_ROOT_DISK_MIB = 8 * 1024;

/** The root volume's size in GiB (EC2's unit), rounded up, never below the minimum. */
export function rootDiskGiB(constraintMiB: number | undefined): number {
  return Math.ceil(Math.max(constraintMiB ?? 0, MIN_ROOT_DISK_MIB) / 1024);
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
