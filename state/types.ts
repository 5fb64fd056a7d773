import type { InstanceState } from '../core/liveness';

export type { InstanceState } from '../core/liveness';

export type HarvestMode = 'none' | 'unknown' | 'destroyed' | 'all';
export const HARVEST_MODES: readonly HarvestMode[] = ['none', 'unknown', 'destroyed', 'all'];

export type Life = 'alive' | 'dying' | 'dead';
export type MachineStatus = 'pending' | 'allocating' | 'running' | 'error' | 'down' | 'stopping';

export interface ModelRecord {
  name: string;
  /**
   * Made at creation and never reused: a model re-created under the same name
   * is another model, and its instances are told apart by this id (tagged on
   * every instance), never by the name alone.
   */
  uid: string;
  region: string;
  /** Canonical constraint string (core's toString). */
  constraints: string;
  harvestMode: HarvestMode;
  /** Availability-set mode (Juju's availability-sets-enabled): fixed at creation. */
  availabilitySets: boolean;
  /** The sweep reprovisions machines whose instance was lost (status `down`) by itself. */
  reprovisionLost: boolean;
  life: Life;
  createdAt: string;
}

export interface ApplicationRecord {
  model: string;
  name: string;
  charm: string;
  /** Immutable once deployed. */
  base: string;
  constraints: string;
  subordinate: boolean;
  life: Life;
  createdAt: string;
  /** Optimistic-concurrency version, bumped by every API change. */
  version: number;
}

export interface UnitRecord {
  model: string;
  /** `app/N` */
  name: string;
  application: string;
  machine: string;
  /** Model and application constraints collapsed when the unit was created; empty for subordinates. */
  constraints: string;
  life: Life;
  /** For a subordinate unit: the principal unit it lives beside. */
  principal?: string;
  /** For a principal unit: its subordinate units. */
  subordinates: string[];
  createdAt: string;
  version: number;
}

export interface RelationRecord {
  model: string;
  /** The two application names, sorted. */
  endpoints: [string, string];
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
  /**
   * Applications with principal units on this machine: its distribution group
   * for zone spread is every machine sharing one of them. Maintained by the API
   * in the same transaction that places or removes a unit.
   */
  applications: string[];
  /** Principal unit names on this machine (`wordpress/0`). */
  principals: string[];
  /** Container machine ids hosted on this machine (`1/lxd/0`). */
  containers: string[];
  /** Manually provisioned (`ssh:`): recorded, never launched or terminated. */
  manual?: boolean;
  life: Life;
  status: MachineStatus;
  message: string;
  /**
   * How many times provisioning has ended in `error` (absent: never). Every
   * write of `error` adds one, so a retry that fails again with the same
   * message still reads as a new failure.
   */
  errorCount?: number;
  instanceId?: string;
  imageId?: string;
  zone?: string;
  instanceType?: string;
  hardware?: Hardware;
  /** EC2's state of `instanceId` as last seen (liveness). */
  instanceStatus?: InstanceState;
  /** When `instanceId` was recorded (ISO): how long EC2 not listing it says nothing (core/liveness.ts). */
  instanceRecordedAt?: string;
  /** When `instanceStatus` was written (ISO): the launch's `pending`, or the sweep or event that saw it change. */
  instanceStatusAt?: string;
  /** The instance's private and public IPv4 addresses as EC2 last listed them (the sweep records them). */
  privateAddress?: string;
  publicAddress?: string;
  /** Availability-set mode: the partition placement group and partition the instance is in. */
  placementGroup?: string;
  partition?: number;
  /** On-demand USD per hour of `instanceType` when it was chosen. */
  pricePerHour?: number;
  /**
   * The uid of the model the machine was created in, when the creating
   * request handed its workflow what the launch needs (issue 26: the
   * workflow's start input, `MachineWorkflowInput.created`): the zone claim
   * made from that input is conditional on it, so it never lands on another
   * machine under the same key (a model destroyed and re-created by name).
   * Absent on machines created otherwise; never changed.
   */
  modelUid?: string;
  createdAt: string;
  updatedAt: string;
  /** Bumped by every API change to membership, life or constraints (the workflow's status writes leave it alone). */
  version?: number;
}

/** What following a host needs of it: its containers and its instance. */
export interface HostContainers {
  containers: readonly string[];
  instanceId?: string;
}
