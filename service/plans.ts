import { chooseInstanceType, LaunchPlanError } from '../core/instance-choice';
import { PARTITION_COUNT, leastPopulousPartition, placementGroupName } from '../core/partitions';
import {
  NoSuitableZoneError,
  orderZones,
  parseConstraints,
  type AvailabilityZone,
  type InstanceTypeInfo,
  type Placement,
} from '../core';
import {
  bucketsLeft,
  estimateLaunch,
  type Bucket,
  type LaunchRecord,
  type RecordedBucket,
} from '../core/launch-estimate';
import type { PlanView, PlannedMachineView } from './views';
import {
  countedGroups,
  partitionKey,
  type PartitionCounts,
  type ZoneCounts,
} from '../state/zone-counts';
import type { MachineRecord, ModelRecord } from '../state/types';
import type { ServiceContext } from './context';
import { DependencyUnavailableError } from './errors';
import { launchBudgetFromEnv, type PlanSources } from './plan-sources';

/** Hours in a month, as AWS's own price pages count them. */
export const HOURS_PER_MONTH = 730;

/**
 * One machine a request would add or use, as its decision made it (the same
 * decision the real request writes: service/deploy.ts, units.ts, machines.ts).
 */
export type PlanEntry =
  | {
      /** A new machine the provisioner launches (a top-level machine). */
      kind: 'launch';
      units: string[];
      base: string;
      /** Collapsed constraints, canonical. */
      constraints: string;
      placement?: Placement;
      /** Its distribution groups: the applications of its units ([] for a bare machine). */
      applications: string[];
    }
  | { kind: 'existing'; machine: MachineRecord; units: string[] }
  | {
      /** A new container: on an existing host, or on the launch entry just before it. */
      kind: 'container';
      units: string[];
      base: string;
      constraints: string;
      host?: MachineRecord;
    }
  | { kind: 'manual'; units: string[]; base: string; constraints: string };

const roundPrice = (usd: number) => Math.round(usd * 1e6) / 1e6;
const roundCents = (usd: number) => Math.round(usd * 100) / 100;

interface TypeChoice {
  type?: InstanceTypeInfo;
  zonesConstraint: string[];
  placementZone?: string;
  error?: string;
}

/**
 * Turns a request's decision into its plan (API.md "Plans (dry run)"):
 * each new machine's instance type and price as the launch chooses them
 * (activities/plan.ts chooseInstanceType, the same catalogue, offerings and
 * price list), its zone as the zone claims would give it now (core's
 * orderZones over the healthy zones offering the type, counting the model's
 * machines by distribution group from the same counters the claims read,
 * one machine after the other), and in availability-set mode its placement
 * group and partition. Reads only.
 */
export async function buildPlan(
  ctx: ServiceContext,
  model: ModelRecord,
  entries: readonly PlanEntry[],
): Promise<PlanView> {
  const notes: string[] = [];
  // every EC2 read of this plan answers by one deadline, or the plan is refused (503)
  const sources = ctx.planSources && boundedReads(ctx.planSources, ctx.requestStartedAt);
  const launches = entries.filter((e) => e.kind === 'launch');
  let zones: AvailabilityZone[] = [];
  let catalogue: readonly InstanceTypeInfo[] = [];
  let prices: ReadonlyMap<string, number> = new Map();
  let ec2Known = false;
  // this deployment's launches already sent, read while EC2 is asked (one GetItem)
  const recorded: Promise<{ record?: LaunchRecord; at: number; failed?: string }> =
    launches.length > 0 && ctx.launchRecord
      ? ctx.launchRecord.read(model.region).then(
          (record) => ({ ...(record ? { record } : {}), at: ctx.now().getTime() }),
          (err: unknown) => ({
            at: ctx.now().getTime(),
            failed: err instanceof Error ? err.name : String(err),
          }),
        )
      : Promise.resolve({ at: ctx.now().getTime() });
  if (launches.length > 0) {
    if (!sources) {
      notes.push('EC2 cannot be asked here: zones, instance types and prices are not known');
    } else {
      const deadlineMs = sources.priceDeadlineMs ?? PRICE_DEADLINE_MS;
      let priced = true;
      const pricesRead = sources.prices(model.region);
      try {
        [zones, catalogue, prices] = await Promise.all([
          sources.zones(model.region),
          sources.catalogue(model.region),
          // a cold price list takes many seconds: the plan waits a bounded time for it
          withDeadline(pricesRead, deadlineMs).then((p) => {
            if (p === undefined) priced = false;
            return p ?? new Map<string, number>();
          }),
        ]);
        ec2Known = true;
        if (!priced) {
          // the prices may have come while the catalogue was still being read: take them
          const late = await withDeadline(pricesRead, 0);
          if (late !== undefined) [prices, priced] = [late, true];
        }
      } catch (err) {
        if (err instanceof PlanReadsDeadlineError) throw err;
        notes.push(
          `EC2 could not be asked (${err instanceof Error ? err.name : String(err)}): ` +
            'zones, instance types and prices are not known',
        );
      }
      if (ec2Known && !priced) {
        notes.push(priceDeadlineNote(deadlineMs));
      } else if (ec2Known && prices.size === 0) {
        const failure = sources.priceFailure?.(model.region);
        notes.push(
          failure?.kind === 'timeout'
            ? priceLookupTimeoutNote(failure.afterMs)
            : PRICE_LIST_UNREACHABLE_NOTE,
        );
      }
    }
  }

  // one type choice per distinct constraints and placement (a 1,000-machine plan makes one)
  const choices = new Map<string, Promise<TypeChoice>>();
  const chooseFor = (e: Extract<PlanEntry, { kind: 'launch' }>): Promise<TypeChoice> => {
    const key = JSON.stringify([e.constraints, e.placement ?? null]);
    let choice = choices.get(key);
    if (!choice) {
      choice = typeFor(sources!, model, e, catalogue, prices, zones);
      choices.set(key, choice);
    }
    return choice;
  };

  // A unit placed `--to N` moves machine N into its application's distribution
  // group before any new machine of the request claims a zone (the real request
  // regroups it in the unit's own write: ZoneCountStore.regroup), so the plan
  // moves it first too: +1 in its zone for the groups it joins, -1 for those it leaves.
  const moves: { zone: string; partition?: number; joined: string[]; left: string[] }[] = [];
  const now = new Map<string, string[]>();
  for (const entry of entries) {
    if (entry.kind !== 'existing') continue;
    const m = entry.machine;
    if (!m.zone) continue;
    const apps = entry.units.map((u) => u.slice(0, u.lastIndexOf('/')));
    const before = now.get(m.id) ?? m.applications;
    const after = [...new Set([...before, ...apps])];
    now.set(m.id, after);
    const have = countedGroups(before);
    const want = countedGroups(after);
    const joined = want.filter((g) => !have.includes(g));
    const left = have.filter((g) => !want.includes(g));
    if (joined.length > 0 || left.length > 0) {
      moves.push({
        zone: m.zone,
        ...(m.partition !== undefined ? { partition: m.partition } : {}),
        joined,
        left,
      });
    }
  }
  // The new machines of one request claim their zones as their workflows reach
  // the claim, in no fixed order: an unplaced machine claiming before a `zone=`
  // or `subnet=` one of its group does not count that one (the plan counts them
  // in request order). Say so rather than state those zones as fact.
  const pinned = new Set<string>();
  const free = new Set<string>();
  for (const e of launches) {
    const placed = e.placement?.kind === 'zone' || e.placement?.kind === 'subnet';
    for (const g of countedGroups(e.applications)) (placed ? pinned : free).add(g);
  }
  const mixed = [...free].filter((g) => pinned.has(g));
  for (const g of mixed) {
    const whose = g === '' ? 'bare machines' : `machines of ${g}`;
    notes.push(
      `new ${whose} placed with zone= or subnet= and unplaced ones claim their zones in ` +
        'no fixed order: the unplaced ones may get other zones than planned',
    );
  }
  const launchGroups = launches.flatMap((e) => countedGroups(e.applications));
  const groups =
    launchGroups.length > 0
      ? [...new Set([...launchGroups, ...moves.flatMap((mv) => [...mv.joined, ...mv.left])])]
      : [];
  const counters: Map<string, { counts: ZoneCounts; partitions: PartitionCounts }> =
    ec2Known && groups.length > 0
      ? await ctx.repo.groupCounts(model.name, groups)
      : new Map<string, { counts: ZoneCounts; partitions: PartitionCounts }>();
  const working = new Map<
    string,
    { counts: Record<string, number>; partitions: Record<string, number> }
  >(
    groups.map((g) => {
      const c = counters.get(g);
      return [g, { counts: { ...(c?.counts ?? {}) }, partitions: { ...(c?.partitions ?? {}) } }];
    }),
  );

  for (const mv of moves) {
    for (const [list, by] of [
      [mv.joined, 1],
      [mv.left, -1],
    ] as const) {
      for (const g of list) {
        const w = working.get(g);
        if (!w) continue;
        w.counts[mv.zone] = Math.max(0, (w.counts[mv.zone] ?? 0) + by);
        if (mv.partition !== undefined) {
          const k = partitionKey(mv.zone, mv.partition);
          w.partitions[k] = Math.max(0, (w.partitions[k] ?? 0) + by);
        }
      }
    }
  }

  const machines: PlannedMachineView[] = [];
  const batches = new Map<string, number>();
  let total = 0;
  let totalKnown = true;
  let lastLaunched: PlannedMachineView | undefined;
  for (const entry of entries) {
    if (entry.kind === 'existing') {
      const m = entry.machine;
      machines.push({
        id: m.id,
        units: entry.units,
        base: m.base,
        constraints: m.constraints,
        zone: m.zone ?? null,
        instanceType: m.instanceType ?? null,
        pricePerHour: m.pricePerHour ?? null,
        ...(m.placementGroup !== undefined ? { placementGroup: m.placementGroup } : {}),
        ...(m.partition !== undefined ? { partition: m.partition } : {}),
      });
      notes.push(`machine ${m.id} exists: its cost is not added to the totals`);
      continue;
    }
    if (entry.kind === 'container' || entry.kind === 'manual') {
      const zone =
        entry.kind === 'container' ? (entry.host?.zone ?? lastLaunched?.zone ?? null) : null;
      machines.push({
        id: null,
        units: entry.units,
        base: entry.base,
        constraints: entry.constraints,
        zone,
        instanceType: null,
        pricePerHour: 0,
      });
      continue;
    }
    const choice = ec2Known ? await chooseFor(entry) : undefined;
    if (choice?.error !== undefined) notes.push(choice.error);
    const type = choice?.type;
    let zone: string | null = null;
    let partition: number | undefined;
    const mine = countedGroups(entry.applications);
    if (type && choice) {
      let offered: string[] | undefined;
      try {
        offered = await sources!.zonesOffering(
          model.region,
          type.name,
          zones.map((z) => z.name),
        );
      } catch (err) {
        if (err instanceof PlanReadsDeadlineError) throw err;
        notes.push(ec2ReadNote(err, `the zones offering ${type.name}`));
      }
      const offering = new Set(offered ?? []);
      const population: Record<string, number> = {};
      for (const g of mine) {
        for (const [z, n] of Object.entries(working.get(g)?.counts ?? {})) {
          population[z] = (population[z] ?? 0) + n;
        }
      }
      try {
        zone =
          orderZones({
            machineId: 'planned',
            zones: zones.filter((z) => offering.has(z.name)),
            population,
            zonesConstraint: choice.zonesConstraint,
            ...(choice.placementZone !== undefined ? { placementZone: choice.placementZone } : {}),
          })[0] ?? null;
      } catch (err) {
        if (!(err instanceof NoSuitableZoneError)) throw err;
        // the offerings could not be read: that is the note already, not a zone without the type
        if (offered !== undefined)
          notes.push(
            `no healthy zone offers ${type.name} for constraints "${entry.constraints}": ` +
              'the machine would wait for one, then go to error',
          );
      }
      if (zone !== null) {
        if (model.availabilitySets && model.uid) {
          const inZone: Record<number, number> = {};
          for (const g of mine) {
            const parts = working.get(g)?.partitions ?? {};
            for (let p = 1; p <= PARTITION_COUNT; p++) {
              inZone[p] = (inZone[p] ?? 0) + (parts[partitionKey(zone, p)] ?? 0);
            }
          }
          partition = leastPopulousPartition(inZone, PARTITION_COUNT);
        }
        for (const g of mine) {
          const w = working.get(g)!;
          w.counts[zone] = (w.counts[zone] ?? 0) + 1;
          if (partition !== undefined) {
            const k = partitionKey(zone, partition);
            w.partitions[k] = (w.partitions[k] ?? 0) + 1;
          }
        }
      }
    }
    const price = type?.cost ?? null;
    if (price === null) totalKnown = false;
    else total += price;
    const group =
      model.availabilitySets && model.uid && entry.applications.length > 0
        ? placementGroupName(model.uid, [...entry.applications].sort()[0]!)
        : undefined;
    const planned: PlannedMachineView = {
      id: null,
      units: entry.units,
      base: entry.base,
      constraints: entry.constraints,
      zone,
      instanceType: type?.name ?? null,
      pricePerHour: price,
      ...(group !== undefined ? { placementGroup: group } : {}),
      ...(group !== undefined && partition !== undefined ? { partition } : {}),
    };
    machines.push(planned);
    lastLaunched = planned;
    // the worker batches launches of one spec and zone into one RunInstances
    const batch = JSON.stringify([
      zone,
      type?.name ?? null,
      entry.base,
      group ?? null,
      partition ?? null,
    ]);
    batches.set(batch, (batches.get(batch) ?? 0) + 1);
  }

  const configured = sources?.budget ?? launchBudgetFromEnv();
  const { record, at, failed } = await recorded;
  // the worker's buckets as it recorded them (its settings), else this process's
  const budget = record
    ? { ...configured, requests: bucketOf(record.requests), instances: bucketOf(record.instances) }
    : configured;
  const estimate = estimateLaunch([...batches.values()], budget, bucketsLeft(record, budget, at));
  if (launches.length > 0) {
    notes.push(CAPACITY_NOTE);
    notes.push(
      failed !== undefined
        ? `this deployment's recent launches could not be read (${failed}): the estimate takes EC2's buckets as full`
        : NOT_COUNTED_NOTE,
    );
  }
  notes.push(...estimate.notes);
  const pricePerHour = totalKnown ? roundPrice(total) : null;
  return {
    machines,
    pricePerHour,
    pricePerMonth: pricePerHour === null ? null : roundCents(pricePerHour * HOURS_PER_MONTH),
    estimatedSeconds: estimate.seconds,
    notes: [...new Set(notes)],
  };
}

/** How long a plan waits for the price list before answering without prices. */
export const PRICE_DEADLINE_MS = 3_000;

/** The notes a plan can carry, beyond those built from the request's own values (docs/api.md lists all). */
export const CAPACITY_NOTE =
  "a zone's spare capacity is not known: a zone short of capacity moves a machine to the next one at launch";
export const NOT_COUNTED_NOTE =
  'the estimate counts the launches this deployment has sent to EC2, not machines still ' +
  'waiting to launch nor anything else launching in this account and region';
/** How a plan without prices says what its instance types are (never what the launch gets). */
export const UNPRICED_TYPES =
  'prices are unknown, and instance types are chosen without prices: they may differ from ' +
  "the launch's, which chooses the cheapest fitting type when it can read prices";
export const PRICE_LIST_UNREACHABLE_NOTE = `the price list cannot be reached: ${UNPRICED_TYPES}`;

/** This plan stopped waiting for the price list (the lookup goes on for the next plans). */
export function priceDeadlineNote(deadlineMs: number): string {
  return `the price list did not answer within ${deadlineMs / 1000} s: ${UNPRICED_TYPES}`;
}

/** The lookup itself gave up: the price list answered too slowly, it was reached. */
export function priceLookupTimeoutNote(timeoutMs: number): string {
  return (
    `the price list did not answer within ${timeoutMs / 1000} s (it is asked again shortly): ` +
    UNPRICED_TYPES
  );
}

/**
 * How long a plan's EC2 reads (zones, instance types, offerings, subnets) may
 * take together, counted from the start of the request (the time spent before
 * the first read is in API Gateway's 29 s too): a cold catalogue read once took
 * 34 s, past API Gateway's 29 s, which then answers a bare 503 of its own. The
 * plan answers its own `503 unavailable` by then, naming what did not answer;
 * the reads go on and fill the caches for the next plan.
 */
export const PLAN_READS_DEADLINE_MS = 20_000;

/** A plan's EC2 reads did not all answer by PLAN_READS_DEADLINE_MS: the plan is refused, 503. */
export class PlanReadsDeadlineError extends DependencyUnavailableError {
  constructor(deadlineMs: number, pending: readonly string[]) {
    super(
      `EC2 did not answer within ${deadlineMs / 1000} s for this plan ` +
        `(still waiting for ${pending.length > 0 ? pending.join(', ') : 'a read'}); ` +
        'nothing was planned, try again shortly',
    );
  }
}

/**
 * The plan sources with their EC2 reads bounded by one deadline, counted from
 * the request's start (`startedAt`; without it, from the first read): a read
 * still unanswered then rejects with PlanReadsDeadlineError naming every read
 * still under way (the price list keeps its own, shorter deadline: a plan
 * answers without prices).
 */
function boundedReads(sources: PlanSources, startedAt?: number): PlanSources {
  const deadlineMs = sources.readsDeadlineMs ?? PLAN_READS_DEADLINE_MS;
  let end: number | undefined = startedAt === undefined ? undefined : startedAt + deadlineMs;
  const pending = new Map<string, number>();
  const read = <T>(what: string, value: Promise<T>): Promise<T> => {
    end ??= Date.now() + deadlineMs;
    pending.set(what, (pending.get(what) ?? 0) + 1);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new PlanReadsDeadlineError(deadlineMs, [...pending.keys()])),
        Math.max(0, end! - Date.now()),
      );
    });
    return Promise.race([value, late]).finally(() => {
      clearTimeout(timer);
      const n = (pending.get(what) ?? 1) - 1;
      if (n > 0) pending.set(what, n);
      else pending.delete(what);
    });
  };
  return {
    ...sources,
    zones: (region) => read(`the availability zones of ${region}`, sources.zones(region)),
    catalogue: (region) => read(`the instance types of ${region}`, sources.catalogue(region)),
    zonesOffering: (region, type, zones) =>
      read(`the zones offering ${type}`, sources.zonesOffering(region, type, zones)),
    findSubnet: (region, idOrCidr) =>
      read(`subnet ${idOrCidr}`, sources.findSubnet(region, idOrCidr)),
  };
}

/** The value, or undefined once `ms` have passed without it. */
function withDeadline<T>(value: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([value, late]).finally(() => clearTimeout(timer));
}

function bucketOf(b: RecordedBucket): Bucket {
  return { burst: b.burst, perSecond: b.perSecond };
}

/** A note for an EC2 read that failed: what the plan therefore does not know. */
function ec2ReadNote(err: unknown, what: string): string {
  const name = err instanceof Error ? err.name : String(err);
  return `EC2 could not be asked (${name}): ${what} of this machine are not known`;
}

async function typeFor(
  sources: PlanSources,
  model: ModelRecord,
  entry: Extract<PlanEntry, { kind: 'launch' }>,
  catalogue: readonly InstanceTypeInfo[],
  prices: ReadonlyMap<string, number>,
  zones: readonly AvailabilityZone[],
): Promise<TypeChoice> {
  let placementZone: string | undefined;
  if (entry.placement?.kind === 'zone') placementZone = entry.placement.zone;
  if (entry.placement?.kind === 'subnet') {
    let subnet: { subnetId: string; zone: string } | undefined;
    try {
      subnet = await sources.findSubnet(model.region, entry.placement.subnet);
    } catch (err) {
      if (err instanceof PlanReadsDeadlineError) throw err;
      return { zonesConstraint: [], error: ec2ReadNote(err, 'the subnet, zone and instance type') };
    }
    if (!subnet) {
      return {
        zonesConstraint: [],
        error: `unable to find subnet "${entry.placement.subnet}" in region ${model.region}`,
      };
    }
    placementZone = subnet.zone;
  }
  const constraints = parseConstraints(entry.constraints);
  try {
    const { chosen, zonesConstraint } = await chooseInstanceType({
      region: model.region,
      constraints,
      constraintsText: entry.constraints,
      ...(placementZone !== undefined ? { placementZone } : {}),
      catalogue,
      ...(prices.size > 0 ? { prices } : {}),
      zones: zones.map((z) => z.name),
      zonesOffering: (type, names) => sources.zonesOffering(model.region, type, names),
    });
    return {
      type: chosen,
      zonesConstraint,
      ...(placementZone !== undefined ? { placementZone } : {}),
    };
  } catch (err) {
    if (err instanceof PlanReadsDeadlineError) throw err;
    if (!(err instanceof LaunchPlanError)) {
      // a read of EC2 failed (throttled, timed out): a plan that says so, never a 500
      return { zonesConstraint: [], error: ec2ReadNote(err, 'the instance type and zone') };
    }
    // the real request records the machine, which then goes to error with this message
    return { zonesConstraint: [], error: `${err.message}: the machine would go to error` };
  }
}
