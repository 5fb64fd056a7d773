import { randomBytes } from 'node:crypto';
import type { IdempotencyScope } from './idempotency';
import type { QueryFilter, QueryParams } from './query';
import { filterMatches, paramValue, takeFilters } from './query';
import { escapeXml } from './xml';

/**
 * Placement groups, which moto lacks, served by the proxy itself
 * (CreatePlacementGroup, DescribePlacementGroups, DeletePlacementGroup), per
 * caller and Region as in EC2, with EC2's error codes. RunInstances'
 * `Placement.GroupName` / `Placement.PartitionNumber` are checked here
 * (`resolvePlacement`) and then kept by the proxy (instances.ts).
 */

export const PLACEMENT_STRATEGIES = ['cluster', 'spread', 'partition'] as const;
export type PlacementStrategy = (typeof PLACEMENT_STRATEGIES)[number];

/** EC2's bounds on a partition group's partitions, and its default. */
export const MAX_PARTITIONS = 7;
export const DEFAULT_PARTITIONS = 2;

export interface PlacementGroup {
  readonly groupName: string;
  readonly groupId: string;
  readonly strategy: PlacementStrategy;
  readonly partitionCount?: number;
  readonly state: 'available';
  readonly groupArn: string;
}

/** An EC2 error the proxy answers with (code and EC2's wording). */
export interface Ec2Refusal {
  readonly code: string;
  readonly message: string;
}

export type Outcome<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: Ec2Refusal };

const refuse = (code: string, message: string): { ok: false; error: Ec2Refusal } => ({
  ok: false,
  error: { code, message },
});

export function unknownGroup(name: string): Ec2Refusal {
  return {
    code: 'InvalidPlacementGroup.Unknown',
    message: `The Placement Group '${name}' is unknown.`,
  };
}

export function groupInUse(name: string): Ec2Refusal {
  return {
    code: 'InvalidPlacementGroup.InUse',
    message: `The placement group '${name}' is in use and may not be deleted.`,
  };
}

function isStrategy(value: string): value is PlacementStrategy {
  return (PLACEMENT_STRATEGIES as readonly string[]).includes(value);
}

/** Whose groups: caller and Region (the idempotency scope's parts). */
export function groupScopeKey(scope: IdempotencyScope): string {
  return JSON.stringify([scope.principal, scope.region]);
}

/** The key a group is held under (scope + name). */
export function groupKey(scope: IdempotencyScope, name: string): string {
  return JSON.stringify([scope.principal, scope.region, name]);
}

/** Validates a CreatePlacementGroup request into a group (not yet stored). */
export function parseCreatePlacementGroup(
  params: QueryParams,
  region: string,
  account: string,
): Outcome<PlacementGroup> {
  const name = paramValue(params, 'GroupName');
  if (!name) return refuse('MissingParameter', 'The request must contain the parameter groupName');
  if (name.length > 255) {
    return refuse('InvalidParameterValue', `Value (${name}) for parameter groupName is invalid.`);
  }
  const strategy = paramValue(params, 'Strategy') ?? 'cluster';
  if (!isStrategy(strategy)) {
    return refuse(
      'InvalidParameterValue',
      `Value (${strategy}) for parameter strategy is invalid. Valid values are: ${PLACEMENT_STRATEGIES.join(', ')}.`,
    );
  }
  const rawCount = paramValue(params, 'PartitionCount');
  let partitionCount: number | undefined;
  if (strategy === 'partition') {
    partitionCount = rawCount === undefined ? DEFAULT_PARTITIONS : Number(rawCount);
    if (
      !Number.isInteger(partitionCount) ||
      partitionCount < 1 ||
      partitionCount > MAX_PARTITIONS
    ) {
      return refuse(
        'InvalidParameterValue',
        `Value (${rawCount ?? ''}) for parameter partitionCount is invalid. The partition count must be between 1 and ${MAX_PARTITIONS}.`,
      );
    }
  } else if (rawCount !== undefined) {
    return refuse(
      'InvalidParameterCombination',
      'PartitionCount can only be specified for placement groups with the partition strategy.',
    );
  }
  const groupId = `pg-${randomBytes(9).toString('hex').slice(0, 17)}`;
  return {
    ok: true,
    value: {
      groupName: name,
      groupId,
      strategy,
      ...(partitionCount === undefined ? {} : { partitionCount }),
      state: 'available',
      groupArn: `arn:aws:ec2:${region}:${account}:placement-group/${name}`,
    },
  };
}

/** The groups of one caller and Region. */
export class PlacementGroups {
  private readonly groups = new Map<string, PlacementGroup>();

  get(scope: IdempotencyScope, name: string): PlacementGroup | undefined {
    return this.groups.get(groupKey(scope, name));
  }

  add(scope: IdempotencyScope, group: PlacementGroup): Outcome<PlacementGroup> {
    const key = groupKey(scope, group.groupName);
    if (this.groups.has(key)) {
      return refuse(
        'InvalidPlacementGroup.Duplicate',
        `The Placement Group '${group.groupName}' already exists.`,
      );
    }
    this.groups.set(key, group);
    return { ok: true, value: group };
  }

  delete(scope: IdempotencyScope, name: string): void {
    this.groups.delete(groupKey(scope, name));
  }

  list(scope: IdempotencyScope): PlacementGroup[] {
    const prefix = groupScopeKey(scope).slice(0, -1);
    return [...this.groups]
      .filter(([key]) => key.startsWith(`${prefix},`))
      .map(([, g]) => g)
      .sort((a, b) => a.groupName.localeCompare(b.groupName));
  }
}

function listParam(params: QueryParams, prefix: string): string[] {
  const re = new RegExp(`^${prefix}\\.\\d+$`);
  return params.filter(([k]) => re.test(k)).map(([, v]) => v);
}

const GROUP_FILTERS: ReadonlySet<string> = new Set([
  'group-name',
  'group-arn',
  'strategy',
  'state',
  'spread-level',
]);

function groupMatches(group: PlacementGroup, filter: QueryFilter): boolean {
  switch (filter.name) {
    case 'group-name':
      return filterMatches(filter, group.groupName);
    case 'group-arn':
      return filterMatches(filter, group.groupArn);
    case 'strategy':
      return filterMatches(filter, group.strategy);
    case 'state':
      return filterMatches(filter, group.state);
    default:
      return false;
  }
}

/** DescribePlacementGroups: by GroupName.N / GroupId.N (each must exist) and filters. */
export function describePlacementGroups(
  all: readonly PlacementGroup[],
  params: QueryParams,
): Outcome<PlacementGroup[]> {
  const names = listParam(params, 'GroupName');
  const ids = listParam(params, 'GroupId');
  for (const name of names) {
    if (!all.some((g) => g.groupName === name)) return { ok: false, error: unknownGroup(name) };
  }
  for (const id of ids) {
    if (!all.some((g) => g.groupId === id)) {
      return refuse('InvalidPlacementGroupId.Malformed', `Invalid id: "${id}"`);
    }
  }
  const { taken } = takeFilters(params, GROUP_FILTERS);
  return {
    ok: true,
    value: all
      .filter((g) => names.length === 0 || names.includes(g.groupName))
      .filter((g) => ids.length === 0 || ids.includes(g.groupId))
      .filter((g) => taken.every((f) => groupMatches(g, f))),
  };
}

function groupXml(g: PlacementGroup): string {
  return (
    `<groupName>${escapeXml(g.groupName)}</groupName>` +
    `<strategy>${g.strategy}</strategy>` +
    `<state>${g.state}</state>` +
    `<groupId>${escapeXml(g.groupId)}</groupId>` +
    `<groupArn>${escapeXml(g.groupArn)}</groupArn>` +
    (g.partitionCount === undefined ? '' : `<partitionCount>${g.partitionCount}</partitionCount>`) +
    '<tagSet/>'
  );
}

const NAMESPACE = 'http://ec2.amazonaws.com/doc/2016-11-15/';

function answer(action: string, requestId: string, inner: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<${action}Response xmlns="${NAMESPACE}">` +
    `<requestId>${escapeXml(requestId)}</requestId>${inner}</${action}Response>`
  );
}

export function createPlacementGroupXml(group: PlacementGroup, requestId: string): string {
  return answer(
    'CreatePlacementGroup',
    requestId,
    `<return>true</return><placementGroup>${groupXml(group)}</placementGroup>`,
  );
}

export function describePlacementGroupsXml(
  groups: readonly PlacementGroup[],
  requestId: string,
): string {
  const items = groups.map((g) => `<item>${groupXml(g)}</item>`).join('');
  return answer(
    'DescribePlacementGroups',
    requestId,
    `<placementGroupSet>${items}</placementGroupSet>`,
  );
}

export function deletePlacementGroupXml(requestId: string): string {
  return answer('DeletePlacementGroup', requestId, '<return>true</return>');
}

/** What RunInstances asked of placement groups. */
export interface PlacementRequest {
  readonly groupName?: string;
  readonly partitionNumber?: string;
}

export function parsePlacementRequest(params: QueryParams): PlacementRequest {
  const groupName = paramValue(params, 'Placement.GroupName');
  const partitionNumber = paramValue(params, 'Placement.PartitionNumber');
  return {
    ...(groupName ? { groupName } : {}),
    ...(partitionNumber !== undefined ? { partitionNumber } : {}),
  };
}

/** RunInstances parameters the proxy handles itself and moto never sees. */
export const PLACEMENT_PARAMS: ReadonlySet<string> = new Set([
  'Placement.GroupName',
  'Placement.PartitionNumber',
]);

/** A launch's checked placement: the group, and a fixed partition if the caller named one. */
export interface ResolvedPlacement {
  readonly group: PlacementGroup;
  readonly partitionNumber?: number;
}

/**
 * Checks RunInstances' placement against the caller's groups: unknown group →
 * InvalidPlacementGroup.Unknown; a partition number outside 1..partitionCount,
 * or given for a group that is not a partition group → InvalidParameterValue.
 * Undefined when no group was asked for.
 */
export function resolvePlacement(
  request: PlacementRequest,
  lookup: (name: string) => PlacementGroup | undefined,
): Outcome<ResolvedPlacement | undefined> {
  if (request.groupName === undefined) {
    if (request.partitionNumber !== undefined) {
      return refuse(
        'InvalidParameterCombination',
        'A partition number can only be specified together with a placement group name.',
      );
    }
    return { ok: true, value: undefined };
  }
  const group = lookup(request.groupName);
  if (!group) return { ok: false, error: unknownGroup(request.groupName) };
  if (request.partitionNumber === undefined) return { ok: true, value: { group } };
  const n = Number(request.partitionNumber);
  const count = group.partitionCount;
  if (count === undefined) {
    return refuse(
      'InvalidParameterValue',
      `Partition number can only be specified for a placement group with the partition strategy; '${group.groupName}' has strategy ${group.strategy}.`,
    );
  }
  if (!Number.isInteger(n) || n < 1 || n > count) {
    return refuse(
      'InvalidParameterValue',
      `Value (${request.partitionNumber}) for parameter partitionNumber is invalid. Partition number must be between 1 and ${count} for placement group '${group.groupName}'.`,
    );
  }
  return { ok: true, value: { group, partitionNumber: n } };
}
