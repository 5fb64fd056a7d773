import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { GroupCounter, PartitionCounts, ZoneCounts } from '../core/zone-assignment';
import { batchGetAll } from './batch-get';
import { machineSk, modelPk } from './keys';
import type { Life } from './types';
import {
  COUNTER_PROJECTION,
  counterKey,
  MACHINE_VIEW_PROJECTION,
  type CreatedMachineView,
} from './zone-count-items';

type Item = Record<string, unknown>;

/**
 * What the zone-count operations (zone-claim.ts, zone-release.ts,
 * zone-regroup.ts, the reads here) need: the ZoneCountStore itself, with
 * its tries and its pause between them.
 */
export interface ZoneCountTable {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly maxTries: number;
  pause(attempt: number): Promise<void>;
}

export interface MachineView {
  exists: boolean;
  life?: Life;
  /** The machine's applications as recorded now: the groups it counts in (Juju's distribution group). */
  applications?: string[];
  countedZone?: string;
  countedGroups?: string[];
  /** Availability-set mode: the partition the machine is counted in, within `countedZone`. */
  countedPartition?: number;
  /** The zone its workflow holds a claim on, and who made that claim (state/zone-claim.ts). */
  zoneClaim?: string;
  claimedBy?: string;
  /**
   * The uid of the model the machine was created in (MachineRecord.modelUid),
   * when its item records one: a claim made from this view is conditional on it.
   */
  modelUid?: string;
  /**
   * Set only on a view made from the creating request's word, not a read
   * (ClaimRequest.strict): what the launch was planned from. A claim made
   * from it also requires the machine still exactly so: alive, pending,
   * without an instance, with this base, these constraints and this
   * placement (none: no placement), so a machine changed since (its
   * constraints replaced, in error, dying, launched) is never claimed for a
   * plan made from what it was.
   */
  asCreated?: CreatedMachineView;
}

/** What a zone claim relies on of a machine item (read with at least these attributes). */
export function machineView(item: Item): MachineView {
  return {
    exists: true,
    life: item.life as Life,
    ...(Array.isArray(item.applications)
      ? { applications: (item.applications as unknown[]).map(String) }
      : {}),
    ...(typeof item.countedZone === 'string' ? { countedZone: item.countedZone } : {}),
    ...(Array.isArray(item.countedGroups) ? { countedGroups: item.countedGroups as string[] } : {}),
    ...(typeof item.countedPartition === 'number'
      ? { countedPartition: item.countedPartition }
      : {}),
    ...(typeof item.modelUid === 'string' ? { modelUid: item.modelUid } : {}),
    ...(typeof item.zoneClaim === 'string' ? { zoneClaim: item.zoneClaim } : {}),
    ...(typeof item.claimedBy === 'string' ? { claimedBy: item.claimedBy } : {}),
  };
}

/** A group's counter item (strongly consistent), or undefined when it has none yet. */
export async function readCounterItem(
  t: ZoneCountTable,
  model: string,
  group: string,
): Promise<Item | undefined> {
  const out = await t.doc.send(
    new GetCommand({
      TableName: t.tableName,
      Key: counterKey(model, group),
      ConsistentRead: true,
    }),
  );
  return out.Item;
}

/** The machines' views (BatchGetItem, strongly consistent); a machine not found is absent. */
export async function readMachines(
  t: ZoneCountTable,
  model: string,
  ids: readonly string[],
): Promise<Map<string, MachineView>> {
  const found = new Map<string, MachineView>();
  const keys = [...new Set(ids)].map((id) => ({ pk: modelPk(model), sk: machineSk(id) }));
  for (const item of await batchGet(t, keys, MACHINE_VIEW_PROJECTION)) {
    found.set(String(item.sk).slice('MACHINE#'.length), machineView(item));
  }
  return found;
}

/** The groups' counters (BatchGetItem, strongly consistent); a group without one starts at version 0. */
export async function readCounters(
  t: ZoneCountTable,
  model: string,
  groups: readonly string[],
): Promise<Map<string, GroupCounter>> {
  const out = new Map<string, GroupCounter>();
  for (const g of groups) out.set(g, { version: 0, counts: {}, partitions: {} });
  const keys = groups.map((g) => counterKey(model, g));
  for (const item of await batchGet(t, keys, COUNTER_PROJECTION)) {
    out.set(String(item.group), {
      version: typeof item.version === 'number' ? item.version : 0,
      counts: { ...((item.counts as ZoneCounts | undefined) ?? {}) },
      partitions: { ...((item.partitions as PartitionCounts | undefined) ?? {}) },
    });
  }
  return out;
}

/** BatchGetItem, strongly consistent (state/batch-get.ts), with the store's backoff. */
async function batchGet(
  t: ZoneCountTable,
  keys: Array<{ pk: string; sk: string }>,
  { projection, names }: { projection: string; names: Readonly<Record<string, string>> },
): Promise<Item[]> {
  return batchGetAll(t.doc, t.tableName, keys, {
    projection,
    names: { ...names },
    pause: (attempt) => t.pause(attempt),
  });
}
