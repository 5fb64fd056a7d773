import type { Clock } from './limits';
import type { QueryFilter } from './query';
import { filterMatches } from './query';
import type { Splice, XmlElement } from './xml';
import {
  applySplices,
  childElement,
  childElements,
  childText,
  descendant,
  escapeXml,
  parseXml,
} from './xml';

/**
 * What the proxy knows about the instances launched through it and moto does
 * not: when each was launched (so it can report `pending` for
 * `pendingToRunning` milliseconds, where moto reports `running` at once) and
 * its placement group and partition (moto has no placement groups).
 *
 * Describe answers are rewritten instance by instance; the filters that
 * select on what the proxy rewrites (`INSTANCE_FILTERS`) are taken out of the
 * request before it reaches moto and applied here to the rewritten values, so
 * `instance-state-name=running` never returns an instance reported `pending`.
 */

/** Filters the proxy applies itself to DescribeInstances / DescribeInstanceStatus answers. */
export const INSTANCE_FILTERS: ReadonlySet<string> = new Set([
  'instance-state-name',
  'instance-state-code',
  'placement-group-name',
  'placement-partition-number',
]);

/** EC2's instance state codes (low byte). */
export const INSTANCE_STATE_CODES: Readonly<Record<string, number>> = {
  pending: 0,
  running: 16,
  'shutting-down': 32,
  terminated: 48,
  stopping: 64,
  stopped: 80,
};

/**
 * The `instance-state-name` filter to hand moto as well, so it leaves out
 * what the proxy would drop anyway: the values asked, plus `running` when
 * `pending` is asked (the proxy reports a running instance of moto's
 * `pending` for a while), so moto's answer is a superset of the proxy's and
 * the proxy's own filter still decides. Without it moto wrote every
 * terminated instance of a model into a teardown's search for live ones,
 * which moto's per-instance cost made the longest part of a 1,000-machine
 * destroy (issue 30). Undefined when a value has a wildcard (applied by the
 * proxy alone, as before) or no state filter is asked.
 */
export function motoStateFilter(taken: readonly QueryFilter[]): QueryFilter | undefined {
  const asked = taken.filter((f) => f.name === 'instance-state-name');
  if (asked.length !== 1) return undefined;
  const values = asked[0]!.values;
  if (values.length === 0 || values.some((v) => /[*?]/.test(v))) return undefined;
  const wider = new Set(values);
  if (wider.has('pending')) wider.add('running');
  return { name: 'instance-state-name', values: [...wider] };
}

/** `params` with `filter` added after its last filter (moto stops at a gap in the numbers). */
export function withFilter(
  params: ReadonlyArray<[string, string]>,
  filter: QueryFilter,
): Array<[string, string]> {
  let last = 0;
  for (const [key] of params) {
    const m = /^Filter\.(\d+)\.Name$/.exec(key);
    if (m) last = Math.max(last, Number(m[1]));
  }
  const n = last + 1;
  return [
    ...params,
    [`Filter.${n}.Name`, filter.name],
    ...filter.values.map((v, i): [string, string] => [`Filter.${n}.Value.${i + 1}`, v]),
  ];
}

export interface TrackedInstance {
  /** Clock time of the launch (ms). */
  readonly launchedAt: number;
  readonly groupName?: string;
  readonly partitionNumber?: number;
  /** The placement group's key (owner and Region scope + name), for in-use checks. */
  readonly groupKey?: string;
}

/** How an instance is to be reported. */
export interface InstanceView {
  readonly pending: boolean;
  /** Left out of Describe answers (the `unlisted` fault: EC2's listing has not caught up). */
  readonly unlisted?: boolean;
  readonly groupName?: string;
  readonly partitionNumber?: number;
}

export class InstanceBook {
  private readonly instances = new Map<string, TrackedInstance>();

  constructor(private readonly clock: Clock) {}

  record(instanceId: string, placement: Omit<TrackedInstance, 'launchedAt'>): void {
    this.instances.set(instanceId, { launchedAt: this.clock(), ...placement });
  }

  /** The view of an instance given the current `pendingToRunning` (ms). */
  view(instanceId: string, pendingToRunning: number): InstanceView | undefined {
    const t = this.instances.get(instanceId);
    if (!t) return undefined;
    return {
      pending: this.clock() - t.launchedAt < pendingToRunning,
      ...(t.groupName === undefined ? {} : { groupName: t.groupName }),
      ...(t.partitionNumber === undefined ? {} : { partitionNumber: t.partitionNumber }),
    };
  }

  /** Each instance launched through the proxy and when (clock ms). */
  launchTimes(): Array<[instanceId: string, launchedAt: number]> {
    return [...this.instances].map(([id, t]) => [id, t.launchedAt]);
  }

  /** Instance ids recorded in a placement group. */
  inGroup(groupKey: string): string[] {
    return [...this.instances].filter(([, t]) => t.groupKey === groupKey).map(([id]) => id);
  }

  /** Recorded instances per partition (1..count) of a group. */
  partitionLoad(groupKey: string, count: number): number[] {
    const load = new Array<number>(count).fill(0);
    for (const t of this.instances.values()) {
      if (t.groupKey === groupKey && t.partitionNumber !== undefined) {
        load[t.partitionNumber - 1] = (load[t.partitionNumber - 1] ?? 0) + 1;
      }
    }
    return load;
  }

  forgetGroup(groupKey: string): void {
    for (const [id, t] of this.instances) {
      if (t.groupKey === groupKey) {
        this.instances.set(id, { launchedAt: t.launchedAt });
      }
    }
  }
}

/**
 * Partitions for `count` new instances of a partition group, as EC2 does
 * without a `PartitionNumber`: each to the least-loaded partition (lowest first).
 */
export function assignPartitions(load: readonly number[], count: number): number[] {
  const current = [...load];
  const out: number[] = [];
  for (let n = 0; n < count; n++) {
    let best = 0;
    current.forEach((l, i) => {
      if (l < (current[best] ?? Infinity)) best = i;
    });
    current[best] = (current[best] ?? 0) + 1;
    out.push(best + 1);
  }
  return out;
}

type ViewOf = (instanceId: string) => InstanceView | undefined;

/** The state an instance is reported in: `pending` while the proxy says so and moto says running. */
function reportedState(motoState: string, view: InstanceView | undefined): string {
  return view?.pending && motoState === 'running' ? 'pending' : motoState;
}

function stateXml(state: string): string {
  const code = INSTANCE_STATE_CODES[state] ?? 0;
  return `<instanceState><code>${code}</code><name>${escapeXml(state)}</name></instanceState>`;
}

function matchesAll(
  filters: readonly QueryFilter[],
  state: string,
  view: InstanceView | undefined,
): boolean {
  return filters.every((f) => {
    switch (f.name) {
      case 'instance-state-name':
        return filterMatches(f, state);
      case 'instance-state-code':
        return filterMatches(f, String(INSTANCE_STATE_CODES[state] ?? ''));
      case 'placement-group-name':
        return view?.groupName !== undefined && filterMatches(f, view.groupName);
      case 'placement-partition-number':
        return (
          view?.partitionNumber !== undefined && filterMatches(f, String(view.partitionNumber))
        );
      default:
        return true;
    }
  });
}

/** The `<placement>` element with the proxy's group name and partition number in it. */
function placementSplice(xml: string, item: XmlElement, view: InstanceView): Splice | undefined {
  if (view.groupName === undefined) return undefined;
  const placement = childElement(item, 'placement');
  if (!placement) return undefined;
  const kept = placement.children
    .filter((c) => c.name !== 'groupName' && c.name !== 'partitionNumber')
    .map((c) => xml.slice(c.start, c.end))
    .join('');
  const text =
    `<placement>${kept}<groupName>${escapeXml(view.groupName)}</groupName>` +
    (view.partitionNumber === undefined
      ? ''
      : `<partitionNumber>${view.partitionNumber}</partitionNumber>`) +
    '</placement>';
  return { start: placement.start, end: placement.end, text };
}

interface ItemOutcome {
  readonly keep: boolean;
  readonly splices: Splice[];
}

/** Rewrites one instance item (an `instancesSet` or `instanceStatusSet` entry). */
function rewriteItem(
  xml: string,
  item: XmlElement,
  viewOf: ViewOf,
  filters: readonly QueryFilter[],
  dropPending = false,
): ItemOutcome {
  const id = childText(xml, item, 'instanceId');
  const view = id === undefined ? undefined : viewOf(id);
  const stateElement = childElement(item, 'instanceState');
  const nameElement = descendant(item, 'instanceState', 'name');
  const motoState = nameElement ? xml.slice(nameElement.innerStart, nameElement.innerEnd) : '';
  const state = reportedState(motoState, view);
  if (
    view?.unlisted === true ||
    !matchesAll(filters, state, view) ||
    (dropPending && state !== motoState)
  ) {
    return { keep: false, splices: [] };
  }
  const splices: Splice[] = [];
  if (state !== motoState && stateElement) {
    splices.push({ start: stateElement.start, end: stateElement.end, text: stateXml(state) });
  }
  const placement = view && placementSplice(xml, item, view);
  if (placement) splices.push(placement);
  return { keep: true, splices };
}

/** A DescribeInstances answer with states and placements as the proxy reports them, filtered. */
export function rewriteDescribeInstances(
  xml: string,
  viewOf: ViewOf,
  filters: readonly QueryFilter[],
): string {
  const root = parseXml(xml);
  const set = childElement(root, 'reservationSet');
  if (!set) return xml;
  const splices: Splice[] = [];
  for (const reservation of childElements(set, 'item')) {
    const instances = childElement(reservation, 'instancesSet');
    if (!instances) continue;
    const outcomes = childElements(instances, 'item').map((item) => ({
      item,
      ...rewriteItem(xml, item, viewOf, filters),
    }));
    if (outcomes.length > 0 && outcomes.every((o) => !o.keep)) {
      splices.push({ start: reservation.start, end: reservation.end, text: '' });
      continue;
    }
    for (const o of outcomes) {
      if (o.keep) splices.push(...o.splices);
      else splices.push({ start: o.item.start, end: o.item.end, text: '' });
    }
  }
  return applySplices(xml, splices);
}

/** A RunInstances answer with each instance's placement group and partition. */
export function rewriteRunInstances(xml: string, viewOf: ViewOf): string {
  const root = parseXml(xml);
  const set = childElement(root, 'instancesSet');
  if (!set) return xml;
  const splices = childElements(set, 'item').flatMap((item) => {
    const id = childText(xml, item, 'instanceId');
    const view = id === undefined ? undefined : viewOf(id);
    const placement = view && placementSplice(xml, item, view);
    return placement ? [placement] : [];
  });
  return applySplices(xml, splices);
}

/**
 * A DescribeInstanceStatus answer with pending instances reported so; without
 * `IncludeAllInstances` they are left out, as EC2 lists only running ones then.
 */
export function rewriteDescribeInstanceStatus(
  xml: string,
  viewOf: ViewOf,
  filters: readonly QueryFilter[],
  includeAll: boolean,
): string {
  const root = parseXml(xml);
  const set = childElement(root, 'instanceStatusSet');
  if (!set) return xml;
  const splices: Splice[] = [];
  for (const item of childElements(set, 'item')) {
    const outcome = rewriteItem(xml, item, viewOf, filters, !includeAll);
    if (outcome.keep) splices.push(...outcome.splices);
    else splices.push({ start: item.start, end: item.end, text: '' });
  }
  return applySplices(xml, splices);
}
