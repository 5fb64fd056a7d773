import type { Client } from '@temporalio/client';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { ProvisioningTuning } from '../config/env';
import type { ContainerStore } from '../state/containers';
import type { LaunchRecordStore } from '../state/launch-record';
import type { ProvisioningStore } from '../state/provisioning';
import type { Repository } from '../state/repository';
import type { RecentReads } from './recent-reads';
import type { CapacityMemory } from './capacity-memory';
import type { InstancePrices } from './pricing';
import type { RegionalEc2 } from '../ec2/regional';

/** What the activities are built from (activities-dependency-injection): real clients or fakes. */
export interface ActivityDeps {
  repo: Repository;
  store: ProvisioningStore;
  /** The EC2 client and caches of a model's region. */
  ec2ForRegion: (region: string) => RegionalEc2;
  /** The region of a machine whose model record is gone. */
  defaultRegion: string;
  /** On-demand prices by region (issue 14); absent: every type unpriced, the least-wasteful order. */
  prices?: InstancePrices;
  tuning: ProvisioningTuning;
  /** Capacity failures remembered across machines; made from the tuning when absent. */
  capacityMemory?: CapacityMemory;
  /** Machine records just read, for the same workflow run's next step (recent-reads.ts). */
  recentReads?: RecentReads;
  /** Tag value that scopes this deployment's instances (IAM conditions in the cloud use it). */
  deployment: string;
  /**
   * This deployment's launches against EC2's buckets, one write per
   * RunInstances (plans read it: state/launch-record.ts); absent, not recorded.
   */
  launchRecord?: LaunchRecordStore;
  /** For the sweep: restarting machine workflows and keeping its own schedule in line. */
  temporal?: Client;
  /** The task queue this worker polls; machine workflows the sweep restarts go there. */
  taskQueue: string;
  now?: () => number;
  /**
   * Tests: the first read's launch budget (activities/launch.ts `launchPrepared`) as a
   * signal the test aborts itself, given what is left of it (ms); absent, a timer that long.
   */
  firstLaunchBudget?: (leftMs: number) => AbortSignal;
  /** Containers (issue 15): their records, and the SSM client of a region to run commands on hosts. */
  containers?: ContainerStore;
  ssmForRegion?: (region: string) => SSMClient;
  /** The IAM instance profile launched instances carry (`PROVISIONER_INSTANCE_PROFILE`). */
  instanceProfile?: string;
}
