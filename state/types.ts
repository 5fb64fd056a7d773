export type HarvestMode = 'none' | 'unknown' | 'destroyed' | 'all';
export const HARVEST_MODES: readonly HarvestMode[] = ['none', 'unknown', 'destroyed', 'all'];

export type Life = 'alive' | 'dying' | 'dead';
export type MachineStatus = 'pending' | 'allocating' | 'running' | 'error' | 'stopping';

export interface ModelRecord {
  name: string;
  region: string;
  /** Canonical constraint string (core's toString). */
  constraints: string;
  harvestMode: HarvestMode;
  life: Life;
  createdAt: string;
}

export interface Hardware {
  arch: string;
  cores: number;
  mem: number;
  rootDisk?: number;
}

export interface MachineRecord {
  model: string;
  id: string;
  base: string;
  constraints: string;
  /** The placement directive the machine was created with (`zone=…`, `ssh:…`), if any. */
  placement?: string;
  life: Life;
  status: MachineStatus;
  message: string;
  instanceId?: string;
  imageId?: string;
  zone?: string;
  instanceType?: string;
  hardware?: Hardware;
  createdAt: string;
  updatedAt: string;
}
