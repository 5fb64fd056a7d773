import type { Hardware, MachineStatus } from '../state/types';

/** What a machine will be launched as, decided once per provisioning pass. */
export interface LaunchPlan {
  region: string;
  instanceType: string;
  imageId: string;
  hardware: Hardware;
  /** Zones the machine may use (from `zone=` placement or the `zones` constraint); empty means any. */
  allowedZones: string[];
}

export interface MachineRef {
  model: string;
  machineId: string;
}

export interface StatusUpdate extends MachineRef {
  status: MachineStatus;
  message: string;
}
