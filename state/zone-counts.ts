import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { PartitionCounts, ZoneCounts } from '../core/zone-assignment';
import { jitteredPause } from './backoff';
import { documentClient } from './table';
import { claimZones, type ClaimRequest, type ClaimResult } from './zone-claim';
import { readCounterItem, readCounters, type ZoneCountTable } from './zone-count-reads';
import { regroup, type Regroup } from './zone-regroup';
import { release, releaseIfDead } from './zone-release';

// The pure assignment lives in core/zone-assignment.ts, the claim in zone-claim.ts, the
// release in zone-release.ts, a regroup in zone-regroup.ts, the reads in zone-count-reads.ts
// and every item in zone-count-items.ts; their names are re-exported for the store's callers.
export {
  countedGroups,
  partitionKey,
  type PartitionCounts,
  type ZoneCounts,
} from '../core/zone-assignment';
export {
  MachineDeadError,
  StaleViewError,
  ZoneClaimContendedError,
  type ClaimRequest,
  type ClaimResult,
} from './zone-claim';
export { machineView, type MachineView } from './zone-count-reads';
export type { Regroup } from './zone-regroup';

/**
 * Zone choice that costs the same whatever the model's size (DESIGN.md
 * "Launching at scale"). Each distribution group (one application's
 * machines; bare machines form one group) has a counter item in the model's
 * partition: machines per zone and a version. A machine records the zone
 * and groups it is counted in (`countedZone`, `countedGroups`), so every
 * increment and decrement happens once, whatever retries.
 *
 * Claims that arrive together are made together: the counters of their
 * groups and the machines are read once, zones assigned one machine after
 * the other from the running counts (least populous first), and written in
 * transactions of up to 100 items conditional on each counter's version. A
 * claim that lost a race to another writer reads the counters again, and
 * only the machines whose own condition failed (the cancellation's reasons
 * say which): a machine's update is conditional on everything its read saw
 * that the claim relies on (alive, and the zone, groups and partition it is
 * counted in), so a view kept across rounds is never acted on stale.
 *
 * A machine hosting several applications counts in each of their groups,
 * and sees the sum of their counts: exact for the usual one application per
 * machine, an approximation of Juju's union of groups otherwise. The groups
 * are those of every application with a unit on the machine (Juju's
 * distribution group: every machine hosting a unit of the application),
 * however the unit got there: a claim counts the applications the machine
 * records when it is made, and a unit placed later on a machine already
 * counted (`--to N`) moves it into its application's group in the same
 * transaction that places the unit (`regroup`).
 *
 * In availability-set mode a claim also assigns a partition: the counter
 * items keep machines per (zone, partition) beside machines per zone, and
 * the machine records `countedPartition`, so the zone and the partition are
 * counted (and given back) in the same writes, least populous first at both
 * levels, and machines claimed together spread over partitions too.
 */
export class ZoneCountStore implements ZoneCountTable {
  readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    private readonly options: {
      maxTries?: number;
      sleep?: (ms: number) => Promise<void>;
      random?: () => number;
    } = {},
  ) {
    this.doc = documentClient(client);
  }

  get maxTries(): number {
    return this.options.maxTries ?? 50;
  }

  async pause(attempt: number): Promise<void> {
    await jitteredPause(attempt, this.options);
  }

  /** A group's counts (strongly consistent), for tests and status. */
  async counts(model: string, group: string): Promise<ZoneCounts> {
    const item = await readCounterItem(this, model, group);
    const counts = (item?.counts as ZoneCounts | undefined) ?? {};
    return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
  }

  /** A group's machines per `<zone>#<partition>` (strongly consistent), for tests. */
  async partitionCounts(model: string, group: string): Promise<PartitionCounts> {
    const item = await readCounterItem(this, model, group);
    const counts = (item?.partitions as PartitionCounts | undefined) ?? {};
    return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
  }

  /**
   * The groups' counts by zone and by `<zone>#<partition>` (strongly
   * consistent, one BatchGetItem per 100 groups): what the next claims of
   * these groups would see. A read only: plans (service/plans.ts) use it.
   */
  async groupCounts(
    model: string,
    groups: readonly string[],
  ): Promise<Map<string, { counts: ZoneCounts; partitions: PartitionCounts }>> {
    const read = await readCounters(this, model, [...new Set(groups)]);
    return new Map([...read].map(([g, c]) => [g, { counts: c.counts, partitions: c.partitions }]));
  }

  /** Claims a zone for each request, in order; each settles on its own (zone-claim.ts). */
  claim(model: string, requests: readonly ClaimRequest[]): Promise<ClaimResult[]> {
    return claimZones(this, model, requests);
  }

  /**
   * Takes the machine out of the zone counts (a failover, a final error,
   * teardown): idempotent, a machine not counted anywhere is left as it is.
   */
  release(model: string, machineId: string): Promise<void> {
    return release(this, model, machineId);
  }

  /**
   * What a change of the machine's applications to `applications` must
   * write with it so the zone counts follow (zone-regroup.ts).
   */
  regroup(model: string, machineId: string, applications: readonly string[]): Promise<Regroup> {
    return regroup(this, model, machineId, applications);
  }

  /** Takes a Dead machine out of the zone counts; any other machine (or none) is left alone. */
  releaseIfDead(model: string, machineId: string): Promise<void> {
    return releaseIfDead(this, model, machineId);
  }
}
