import type {
  HarvestMode,
  Hardware,
  InstanceState,
  Life,
  MachineStatus,
  ModelRecord,
} from '../state/types';

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
  /** The model's uid, tagged on the instance (a re-created model's instances are told apart). */
  modelUid?: string;
  /**
   * Availability-set mode: the partition placement group of the machine's
   * distribution group (created on first use); the zone claim also assigns
   * the partition.
   */
  placementGroup?: string;
  /** The IAM instance profile launched instances carry (lets the SSM agent register: containers, issue 15). */
  instanceProfile?: string;
}

export interface MachineRef {
  model: string;
  machineId: string;
}

interface MachineSnapshotFields {
  status: MachineStatus;
  message: string;
  instanceId?: string;
  /** EC2's state of `instanceId` as last recorded (liveness). */
  instanceStatus?: InstanceState;
  applications: string[];
  /** Principal units on the machine, its constraints and where it runs (shown in the Temporal UI). */
  units?: string[];
  constraints?: string;
  zone?: string;
  instanceType?: string;
  /** Manually provisioned (`ssh:`): never launched or terminated. */
  manual: boolean;
  /** A container (`1/lxd/0`): hosted by a machine, not launched on EC2. */
  container: boolean;
  /** The model's uid: only instances tagged with it are this model's. */
  modelUid?: string;
  /** The worker's tuning (`machine` runs read it here rather than in a step of its own). */
  tuning?: WorkflowTuning;
  /** Asked with `prepare` (records.ts loadMachine): the machine's launch, planned and its zone claimed. */
  prepared?: PreparedLaunch;
}

/** A failure the workflow branches on (temporal/failures.ts), answered as data instead of thrown. */
export interface StepFailure {
  type: string;
  message: string;
}

/**
 * A machine's first provisioning steps, taken in its first read (the
 * workflow's `lean-launch` change, workflows/patches.ts): the plan, then
 * the zone claimed for attempt 1, or the failure of either, which the
 * workflow handles exactly as if that step had failed on its own.
 */
export interface PreparedLaunch {
  plan?: LaunchPlan;
  planFailure?: StepFailure;
  zone?: string;
  claimFailure?: StepFailure;
  /**
   * Planned and claimed from what the creating request wrote
   * (MachineWorkflowInput.created), reading neither the machine nor its
   * model: says so in the run's history; the workflow does not branch on it.
   */
  fromCreation?: true;
  /**
   * The launch after this claim runs as a local activity in the same
   * workflow task (workflows/patches.ts LAUNCH_IN_TASK). Set by every
   * answer with a zone from code that knows the change; histories recorded
   * before it lack it and replay with the launch as an activity. `false`:
   * the first read's launch outlasted its budget and was withdrawn
   * (LAUNCH_OUT_OF_TASK): the launch is the workflow's activity, as without.
   */
  launchInTask?: boolean;
  /**
   * The launch itself, made in the same step when the workflow passed its
   * pass and attempt (`launch`, workflows/patches.ts LAUNCH_IN_READ): the
   * instance, recorded on the machine by the launch (`recorded`, as a launch
   * asked to `record`). Absent where the step made no launch (histories
   * before the change, a launch whose failure the launch would retry): the
   * workflow then launches in a step of its own, with the same token seed.
   */
  launched?: StartedInstance;
  /**
   * The launch made in this step failed in a way a launch step would not
   * retry (a non-retryable failure type): the workflow handles it exactly
   * as that step's thrown failure.
   */
  launchFailure?: StepFailure;
}

/** The first launch a first read makes with its claim (workflows/patches.ts LAUNCH_IN_READ). */
export interface FirstLaunch {
  /** The pass and attempt the workflow launches for: with the run and zone, the token seed. */
  pass: number;
  attempt: number;
}

/**
 * A machine as its workflow needs it, re-read from DynamoDB (the source of
 * truth) on every wake-up. Only a Dead machine's snapshot carries its
 * model's region and harvest mode, which its teardown needs: reading the
 * model for every live machine that wakes was one DynamoDB read in three
 * of a thousand-machine request (a live machine's region is its plan's).
 */
/** The worker's tuning a machine workflow takes (recorded in its history with the read that carried it). */
export interface WorkflowTuning {
  startAttempts: number;
  retryDelayMs: number;
  /** History events a blocked teardown's run holds before it continues as new (absent: the default). */
  blockedHistoryEvents?: number;
}

export type MachineSnapshot =
  | (MachineSnapshotFields & {
      life: Exclude<Life, 'dead'>;
      region?: string;
      harvestMode?: HarvestMode;
    })
  | DeadMachineSnapshot;

export interface DeadMachineSnapshot extends MachineSnapshotFields {
  life: 'dead';
  region: string;
  harvestMode: HarvestMode;
  /**
   * The model runs in availability-set mode: the machine's removal may delete
   * its placement group (seconds of EC2 calls), so teardown removes it with
   * an activity, not a local one. Absent otherwise (and in snapshots recorded
   * before it was carried).
   */
  availabilitySets?: true;
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
  /** True when an instance an earlier attempt launched for the machine was adopted instead of launching. */
  adopted: boolean;
  /** The launch batch the instance came from, and how many machines it served. */
  batch?: { id: string; size: number };
  /** Availability-set mode: the placement group and partition it was launched into. */
  placementGroup?: string;
  partition?: number;
  /**
   * Asked with `record` (workflows/launch.ts, `lean-launch`): the launch also
   * recorded the instance on its machine (status `running`), and this is the
   * machine's life after that write. Absent: not recorded, the workflow
   * records it (its own step, as before).
   */
  recorded?: Life;
}

export interface SweepReport {
  model: string;
  /** The model is gone (the sweeper stops seeing it). */
  modelGone: boolean;
  harvestMode?: HarvestMode;
  /** Instances tagged for the model that no live machine owns, older than the grace period. */
  strays: string[];
  terminated: string[];
  /** Machines whose workflow was missing and has been started again. */
  restarted: string[];
  /** Instance states that differ from the record (`machine:instance:state`), signalled to the workflows. */
  instanceChanges: string[];
  /** Machines whose instance this sweep saw lost (they go `down`). */
  lost: string[];
  /** Machines given a new instance by the sweep (`reprovisionLost`). */
  reprovisioned: string[];
}

/** What a launch plan needs of its model: fixed for the model's life. */
export type PlanModel = Pick<ModelRecord, 'name' | 'uid' | 'region' | 'availabilitySets'>;

/**
 * A launch prepared from what the creating request wrote (records.ts
 * loadMachine with `created`): the model as that request knew it, read
 * nowhere.
 */
export interface CreatedPreparation {
  model: PlanModel;
}
