import type { HarvestMode, Hardware, Life, MachineStatus } from '../state/types';

/** What a machine will be launched as, decided once per provisioning pass. */
export interface LaunchPlan {
  region: string;
  instanceType: string;
  imageId: string;
  hardware: Hardware;
  /** The machine's `zones` constraint; empty allows every zone. */
  zonesConstraint: string[];
  /** The zone of a `zone=` placement (or of a `subnet=` placement's subnet), which allows only that zone. */
  placementZone?: string;
  /** The subnet of a `subnet=` placement: the instance is launched into it. */
  subnetId?: string;
  /** The machine's distribution group key, also tagged on its instance. */
  applications: string[];
  /** The type's on-demand USD per hour it was chosen at, when the price was known. */
  pricePerHour?: number;
}

export interface MachineRef {
  model: string;
  machineId: string;
}

/** A machine as its workflow needs it, re-read from DynamoDB (the source of truth) on every wake-up. */
export interface MachineSnapshot {
  life: Life;
  status: MachineStatus;
  message: string;
  instanceId?: string;
  applications: string[];
  /** Manually provisioned (`ssh:`): never launched or terminated. */
  manual: boolean;
  /** A container (`1/lxd/0`): hosted by a machine, not launched on EC2. */
  container: boolean;
  region: string;
  harvestMode: HarvestMode;
}

export interface StatusUpdate extends MachineRef {
  status: MachineStatus;
  message: string;
}

export interface StartedInstance {
  instanceId: string;
  zone: string;
  instanceType: string;
  imageId: string;
  /** True when an instance already tagged for the machine was adopted instead of launching. */
  adopted: boolean;
}

export interface SweepReport {
  model: string;
  /** The model is gone: its schedule was deleted. */
  modelGone: boolean;
  harvestMode?: HarvestMode;
  /** Instances tagged for the model that no live machine owns, older than the grace period. */
  strays: string[];
  terminated: string[];
  /** Machines whose workflow was missing and has been started again. */
  restarted: string[];
}
