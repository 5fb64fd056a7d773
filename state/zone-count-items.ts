import type { TransactWriteCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { partitionKey, positiveCounts, type GroupCounter } from '../core/zone-assignment';
import { machineSk, modelPk } from './keys';
import { zoneCountSk } from './provisioning-keys';

/**
 * The DynamoDB items of zone claims and releases (state/zone-counts.ts):
 * each write's expression and the condition it holds, built here so the
 * store reads as its protocol.
 */

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A counter's key in the model's partition. */
export const counterKey = (model: string, group: string) => ({
  pk: modelPk(model),
  sk: zoneCountSk(group),
});

const machineItemKey = (model: string, machineId: string) => ({
  pk: modelPk(model),
  sk: machineSk(machineId),
});

/**
 * A group's counter as it stands after a chunk's claims, written only over
 * the version read (none yet: only where no counter is).
 */
export function counterPut(
  tableName: string,
  model: string,
  group: string,
  state: GroupCounter,
): TransactItem {
  const expected = state.version;
  return {
    Put: {
      TableName: tableName,
      Item: {
        ...counterKey(model, group),
        type: 'zone-counts',
        group,
        counts: positiveCounts(state.counts),
        // always a map (possibly empty), so a release can decrement a path in it
        partitions: positiveCounts(state.partitions),
        version: expected + 1,
      },
      ConditionExpression: expected === 0 ? 'attribute_not_exists(pk)' : '#version = :expected',
      ...(expected === 0
        ? {}
        : {
            ExpressionAttributeNames: { '#version': 'version' },
            ExpressionAttributeValues: { ':expected': expected },
          }),
    },
  };
}

/** What a machine's claim was read as: the condition its write holds. */
export interface ClaimedMachineView {
  applications?: string[];
  countedZone?: string;
  countedGroups?: string[];
  countedPartition?: number;
  modelUid?: string;
  asCreated?: CreatedMachineView;
}

/** What a launch planned from a machine's creation relied on (MachineView.asCreated). */
export interface CreatedMachineView {
  base: string;
  constraints: string;
  placement?: string;
}

/**
 * A machine's claim: its zone (and partition) and groups recorded, with its
 * status when asked, conditional on everything its read saw that the claim
 * relies on (alive, its applications, and where it is counted now).
 */
export function machineClaimItem(
  tableName: string,
  model: string,
  machineId: string,
  claim: {
    m: ClaimedMachineView;
    zone: string;
    partition: number | undefined;
    groups: string[];
    status?: { status: string; message: (zone: string) => string };
    /** Who claims (ClaimRequest.claimedBy): written with the zone, or removed. */
    claimedBy?: string;
    now: string;
  },
): TransactItem {
  const { m, zone, partition, groups, now } = claim;
  const names: Record<string, string> = {
    '#zoneClaim': 'zoneClaim',
    '#countedZone': 'countedZone',
    '#countedGroups': 'countedGroups',
    '#updatedAt': 'updatedAt',
    '#life': 'life',
  };
  const values: Record<string, unknown> = {
    ':zone': zone,
    ':groups': groups,
    ':now': now,
    ':dead': 'dead',
  };
  let set = '#zoneClaim = :zone, #countedZone = :zone, #countedGroups = :groups, #updatedAt = :now';
  let remove = '';
  names['#countedPartition'] = 'countedPartition';
  if (partition !== undefined) {
    values[':partition'] = partition;
    set += ', #countedPartition = :partition';
  } else {
    remove = ' REMOVE #countedPartition';
  }
  names['#claimedBy'] = 'claimedBy';
  if (claim.claimedBy !== undefined) {
    values[':claimedBy'] = claim.claimedBy;
    set += ', #claimedBy = :claimedBy';
  } else {
    remove = remove ? `${remove}, #claimedBy` : ' REMOVE #claimedBy';
  }
  if (claim.status) {
    names['#status'] = 'status';
    names['#message'] = 'message';
    values[':status'] = claim.status.status;
    values[':message'] = claim.status.message(zone);
    set += ', #status = :status, #message = :message';
  }
  let condition = 'attribute_exists(pk) AND #life <> :dead';
  if (m.applications !== undefined) {
    // a unit placed on the machine meanwhile: the claim is made again with its group
    names['#applications'] = 'applications';
    values[':applications'] = m.applications;
    condition += ' AND #applications = :applications';
  }
  if (m.modelUid !== undefined) {
    // the machine created in that model, not another under the same key
    names['#modelUid'] = 'modelUid';
    values[':modelUid'] = m.modelUid;
    condition += ' AND #modelUid = :modelUid';
  }
  if (m.asCreated) {
    // planned from the creation, not a read: the machine still as created, or no claim
    // (its constraints replaced, in error, dying or launched since: the caller reads it)
    Object.assign(names, {
      '#status': 'status',
      '#instanceId': 'instanceId',
      '#base': 'base',
      '#constraints': 'constraints',
      '#placement': 'placement',
    });
    Object.assign(values, {
      ':alive': 'alive',
      ':pending': 'pending',
      ':base': m.asCreated.base,
      ':constraints': m.asCreated.constraints,
    });
    condition +=
      ' AND #life = :alive AND #status = :pending AND attribute_not_exists(#instanceId)' +
      ' AND #base = :base AND #constraints = :constraints';
    if (m.asCreated.placement) {
      values[':placement'] = m.asCreated.placement;
      condition += ' AND #placement = :placement';
    } else {
      condition += ' AND attribute_not_exists(#placement)';
    }
  }
  if (m.countedZone) {
    condition += ' AND #countedZone = :was';
    values[':was'] = m.countedZone;
    // the move undoes what the view says the machine is counted in: exactly that
    if (m.countedGroups) {
      condition += ' AND #countedGroups = :wasGroups';
      values[':wasGroups'] = m.countedGroups;
    } else {
      condition += ' AND attribute_not_exists(#countedGroups)';
    }
    if (m.countedPartition !== undefined) {
      condition += ' AND #countedPartition = :wasPartition';
      values[':wasPartition'] = m.countedPartition;
    } else {
      condition += ' AND attribute_not_exists(#countedPartition)';
    }
  } else {
    condition += ' AND attribute_not_exists(#countedZone)';
  }
  return {
    Update: {
      TableName: tableName,
      Key: machineItemKey(model, machineId),
      UpdateExpression: `SET ${set}${remove}`,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/** A machine counted nowhere drops its claim, while it still is counted nowhere. */
export function releaseUncountedMachine(
  tableName: string,
  model: string,
  machineId: string,
  now: string,
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: machineItemKey(model, machineId),
    UpdateExpression: 'REMOVE #zoneClaim SET #updatedAt = :now',
    ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#countedZone)',
    ExpressionAttributeNames: {
      '#zoneClaim': 'zoneClaim',
      '#countedZone': 'countedZone',
      '#updatedAt': 'updatedAt',
    },
    ExpressionAttributeValues: { ':now': now },
  };
}

/**
 * A counted machine's release: first the machine's own update (its claim and
 * counts removed, while it is still counted in `zone`), then one decrement of
 * each group it counted in (in its partition too), each only above zero.
 */
export function releaseItems(
  tableName: string,
  model: string,
  machineId: string,
  counted: { zone: string; partition: number | undefined; groups: readonly string[] },
  now: string,
): [TransactItem, ...TransactItem[]] {
  const { zone, partition } = counted;
  return [
    {
      Update: {
        TableName: tableName,
        Key: machineItemKey(model, machineId),
        UpdateExpression:
          'REMOVE #zoneClaim, #countedZone, #countedGroups, #countedPartition SET #updatedAt = :now',
        ConditionExpression: '#countedZone = :zone',
        ExpressionAttributeNames: {
          '#zoneClaim': 'zoneClaim',
          '#countedZone': 'countedZone',
          '#countedGroups': 'countedGroups',
          '#countedPartition': 'countedPartition',
          '#updatedAt': 'updatedAt',
        },
        ExpressionAttributeValues: { ':now': now, ':zone': zone },
      },
    },
    ...counted.groups.map((g): TransactItem => ({
      Update: {
        TableName: tableName,
        Key: counterKey(model, g),
        ...(partition === undefined
          ? {
              UpdateExpression: 'SET #counts.#zone = #counts.#zone - :one ADD #version :one',
              ConditionExpression: '#counts.#zone > :zero',
              ExpressionAttributeNames: {
                '#counts': 'counts',
                '#zone': zone,
                '#version': 'version',
              },
            }
          : {
              // the partition goes back in the same write as the zone
              UpdateExpression:
                'SET #counts.#zone = #counts.#zone - :one, #partitions.#part = #partitions.#part - :one ADD #version :one',
              ConditionExpression: '#counts.#zone > :zero AND #partitions.#part > :zero',
              ExpressionAttributeNames: {
                '#counts': 'counts',
                '#zone': zone,
                '#partitions': 'partitions',
                '#part': partitionKey(zone, partition),
                '#version': 'version',
              },
            }),
        ExpressionAttributeValues: { ':one': 1, ':zero': 0 },
      },
    })),
  ];
}

/**
 * What a regroup holds of the machine (Regroup.machine's condition): still
 * counted in `zone`, in exactly the groups read.
 */
export function regroupCondition(m: { countedZone: string; countedGroups?: string[] }): {
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
} {
  const names: Record<string, string> = {
    '#countedZone': 'countedZone',
    '#countedGroups': 'countedGroups',
  };
  const values: Record<string, unknown> = { ':rgZone': m.countedZone };
  let condition = '#countedZone = :rgZone';
  if (m.countedGroups) {
    condition += ' AND #countedGroups = :rgWas';
    values[':rgWas'] = m.countedGroups;
  } else {
    condition += ' AND attribute_not_exists(#countedGroups)';
  }
  return { condition, names, values };
}

/** What a regroup holds of a machine counted nowhere yet: that it still is not. */
export function regroupUncountedCondition(): {
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
} {
  return {
    condition: 'attribute_not_exists(#countedZone)',
    names: { '#countedZone': 'countedZone' },
    values: {},
  };
}

/** The attributes of a machine a zone claim relies on (read into a MachineView). */
export const MACHINE_VIEW_PROJECTION = {
  projection:
    'sk, #life, #applications, #countedZone, #countedGroups, #countedPartition, #modelUid, ' +
    '#zoneClaim, #claimedBy',
  names: {
    '#zoneClaim': 'zoneClaim',
    '#claimedBy': 'claimedBy',
    '#modelUid': 'modelUid',
    '#life': 'life',
    '#applications': 'applications',
    '#countedZone': 'countedZone',
    '#countedGroups': 'countedGroups',
    '#countedPartition': 'countedPartition',
  },
} as const;

/** The attributes of a group's counter a claim reads. */
export const COUNTER_PROJECTION = {
  projection: '#group, #counts, #partitions, #version',
  names: {
    '#group': 'group',
    '#counts': 'counts',
    '#partitions': 'partitions',
    '#version': 'version',
  },
} as const;
