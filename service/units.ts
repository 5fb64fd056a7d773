import {
  checkUnitMachineAssignment,
  checkUnitOnMachineBase,
  PlacementError,
  type Placement,
} from '../core';
import { InvalidRequestError, isRefusal } from './errors';
import { undoUnits, type RecordedUnit } from './unit-undo';
import type { PlacedUnitView, PlanView } from './views';
import {
  ConcurrentChangeError,
  ContendedError,
  EntityConflictError,
  EntityNotFoundError,
} from '../state/errors';
import { retryOnConcurrentChange } from '../state/errors';
import { TRANSACTION_LIMIT, type Transaction } from '../state/repository';
import {
  createMachine,
  createUnit,
  requireApplicationAlive,
  requireModelAlive,
  updateMachineMembership,
} from '../state/writes';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import { collapseConstraints } from './constraints';
import { requestStep, type ServiceContext } from './context';
import { checkContainerBase, parseUnitPlacements, placementText } from './placement';
import { checkOffered } from './offerings';
import { newMachine, newUnit } from './records';
import { buildPlan, type PlanEntry } from './plans';

/** A unit as add-unit and deploy answer it (its schema: functions/schemas.ts). */
export type PlacedUnit = PlacedUnitView;

const MAX_UNITS = 1000;
/** DynamoDB's limit of items in one transaction (state/table.ts). */
const TRANSACTION_ITEMS = TRANSACTION_LIMIT;

/** A zone directive must name a zone of the model's region (`us-east-1a` in `us-east-1`). */
export function checkZoneInRegion(zone: string, region: string): void {
  if (!new RegExp(`^${region.replace(/-/g, '\\-')}[a-z]$`).test(zone)) {
    throw new PlacementError(`zone "${zone}" is not an availability zone of region ${region}`);
  }
}

/** The subordinate applications related to `app`. */
async function relatedSubordinates(
  ctx: ServiceContext,
  model: string,
  app: string,
): Promise<ApplicationRecord[]> {
  const relations = await ctx.repo.listRelations(model);
  const others = relations
    .filter((r) => r.endpoints.includes(app))
    .map((r) => (r.endpoints[0] === app ? r.endpoints[1] : r.endpoints[0]));
  const apps = await Promise.all(others.map((name) => ctx.repo.getApplication(model, name)));
  return apps.filter((a) => a.subordinate && a.life === 'alive');
}

function checkAlive(app: ApplicationRecord): void {
  if (app.life !== 'alive')
    throw new EntityConflictError(`application "${app.name}" is being destroyed`);
}

/** Adds "the model is alive" and "the application is alive" to a transaction. */
export function guardModelAndApp(tx: Transaction, model: string, apps: readonly string[]): void {
  requireModelAlive(tx, model);
  for (const app of apps) requireApplicationAlive(tx, model, app, { named: true });
}

// A machine's lists under its version (with its zone counts): a state/ write, re-exported for
// the services that compose it.
export { updateMachineMembership };

function union(list: readonly string[], more: readonly string[]): string[] {
  return [...new Set([...list, ...more])].sort();
}

/** A new top-level machine is needed for this placement (none, zone=, subnet=, or `lxd` alone). */
function needsNewHost(p: Placement | undefined): boolean {
  return (
    p === undefined ||
    p.kind === 'zone' ||
    p.kind === 'subnet' ||
    (p.kind === 'container' && p.machineId === undefined)
  );
}

/**
 * Parses and checks `to` directives for units of `app` before anything is
 * written or any number spent, so deploy can refuse bad placement before it
 * records the application: zone in the region, target machines exist, are
 * alive and of the unit's base, containers only on top-level machines.
 */
export async function checkUnitPlacements(
  ctx: ServiceContext,
  model: ModelRecord,
  app: Pick<ApplicationRecord, 'name' | 'base'>,
  count: number,
  directives: readonly string[],
): Promise<Placement[]> {
  if (model.availabilitySets && directives.length > 0) {
    // every instance exists for one application's units (Juju's Azure availability sets)
    throw new PlacementError('unit placement is not supported with availability-sets-enabled');
  }
  const placements = parseUnitPlacements(directives).slice(0, count);
  for (const p of placements) if (p.kind === 'zone') checkZoneInRegion(p.zone, model.region);
  await checkOffered(ctx, model.region, {
    zones: placements.flatMap((p) => (p.kind === 'zone' ? [p.zone] : [])),
  });
  for (const p of placements) {
    if (p.kind === 'machine') {
      const target = await ctx.repo.getMachine(model.name, p.machineId);
      checkUnitMachineAssignment({
        subordinate: false,
        unitBase: app.base,
        machineBase: target.base,
      });
      if (target.life !== 'alive')
        throw new EntityConflictError(`machine ${target.id} is being destroyed`);
    } else if (p.kind === 'container' && p.machineId !== undefined) {
      checkContainerHost(p.machineId);
      const host = await ctx.repo.getMachine(model.name, p.machineId);
      if (host.life !== 'alive')
        throw new EntityConflictError(`machine ${host.id} is being destroyed`);
      checkContainerBase(app.base, host.base);
    } else if (p.kind === 'container') {
      checkContainerBase(app.base);
    }
  }
  return placements;
}

/** Containers go on top-level machines only (`lxd:0`, not `lxd:0/lxd/1`). */
export function checkContainerHost(hostId: string): void {
  if (hostId.includes('/')) {
    throw new PlacementError(`cannot place a container on container "${hostId}"`);
  }
}

/** What add-unit decided before it writes anything (the same for its plan). */
export interface AddUnitsDecision {
  model: ModelRecord;
  app: ApplicationRecord;
  count: number;
  placements: Placement[];
  /** The units' constraints: the application's over the model's. */
  constraints: string;
}

/**
 * add-unit's decision: every check a real request makes before it writes
 * (count, model and application alive, not subordinate, placement, the
 * related subordinates' bases) and the collapsed constraints. Undefined when
 * there is nothing to add (count 0).
 */
export async function decideAddUnits(
  ctx: ServiceContext,
  modelName: string,
  appName: string,
  count: number,
  directives: readonly string[] = [],
): Promise<AddUnitsDecision | undefined> {
  if (!Number.isInteger(count) || count < 0 || count > MAX_UNITS) {
    throw new InvalidRequestError(
      `count must be an integer from 0 to ${MAX_UNITS}, got ${String(count)}`,
    );
  }
  const model = await ctx.repo.getLiveModel(modelName);
  const app = await ctx.repo.getApplication(modelName, appName);
  checkAlive(app);
  if (app.subordinate)
    throw new EntityConflictError(`cannot add units to subordinate application "${appName}"`);
  if (count === 0) return undefined;
  const placements = await checkUnitPlacements(ctx, model, app, count, directives);
  for (const sub of await relatedSubordinates(ctx, modelName, appName))
    checkUnitOnMachineBase(sub.base, app.base);
  const constraints = collapseConstraints(model.constraints, app.constraints);
  return { model, app, count, placements, constraints };
}

/**
 * The machines `count` units of an application get, one placement directive
 * each (the rest on new machines), as addUnits writes them: a new machine
 * per unit (zone=/subnet= kept), an existing machine (`N`), a container on
 * an existing host (`lxd:N`) or on a new bare host (`lxd`).
 */
export async function unitPlanEntries(
  ctx: ServiceContext,
  model: ModelRecord,
  app: Pick<ApplicationRecord, 'name' | 'base'>,
  args: {
    firstNumber: number;
    count: number;
    placements: readonly Placement[];
    constraints: string;
  },
): Promise<PlanEntry[]> {
  const entries: PlanEntry[] = [];
  const { constraints } = args;
  for (let i = 0; i < args.count; i++) {
    const p = args.placements[i];
    const units = [`${app.name}/${args.firstNumber + i}`];
    if (p?.kind === 'machine') {
      entries.push({
        kind: 'existing',
        machine: await ctx.repo.getMachine(model.name, p.machineId),
        units,
      });
    } else if (p?.kind === 'container' && p.machineId !== undefined) {
      const host = await ctx.repo.getMachine(model.name, p.machineId);
      entries.push({ kind: 'container', units, base: app.base, constraints, host });
    } else if (p?.kind === 'container') {
      // the new host carries no unit of its own: it counts with the bare machines
      entries.push({ kind: 'launch', units: [], base: app.base, constraints, applications: [] });
      entries.push({ kind: 'container', units, base: app.base, constraints });
    } else {
      entries.push({
        kind: 'launch',
        units,
        base: app.base,
        constraints,
        ...(p !== undefined ? { placement: p } : {}),
        applications: [app.name],
      });
    }
  }
  return entries;
}

/** add-unit with `"dryRun": true`: the same decision, returned as a plan; nothing written. */
export async function planAddUnits(
  ctx: ServiceContext,
  modelName: string,
  appName: string,
  count: number,
  directives: readonly string[] = [],
): Promise<PlanView> {
  const decided = await decideAddUnits(ctx, modelName, appName, count, directives);
  if (decided === undefined) return buildPlan(ctx, await ctx.repo.getLiveModel(modelName), []);
  const { model, app, placements, constraints } = decided;
  const firstNumber = await ctx.repo.nextUnitNumber(modelName, appName);
  return buildPlan(
    ctx,
    model,
    await unitPlanEntries(ctx, model, app, { firstNumber, count, placements, constraints }),
  );
}

/**
 * deploy and add-unit: `count` principal units of `app`, one placement
 * directive each (the rest get new machines; extra directives are ignored, as
 * Juju's CLI does), each unit written in its own transaction together with
 * its machine (new, or updated under its version) and one subordinate unit
 * per related subordinate application. Unit and machine numbers come from
 * atomic counters; a write that loses a race is retried inside.
 */
export async function addUnits(
  ctx: ServiceContext,
  modelName: string,
  appName: string,
  count: number,
  directives: readonly string[] = [],
): Promise<PlacedUnit[]> {
  const decided = await decideAddUnits(ctx, modelName, appName, count, directives);
  if (decided === undefined) return [];
  const { model, app, placements, constraints } = decided;
  const numbers = await requestStep(ctx, 'unitNumbers', () =>
    ctx.repo.allocateUnitNumbers(modelName, appName, count),
  );
  const hosts = Array.from({ length: count }, (_, i) => placements[i]).filter(needsNewHost).length;
  // a copy: it is cut below, and the step's memo must keep every id for a retry
  const machineIds = [
    ...(await requestStep(ctx, 'machineIds', () => ctx.repo.allocateMachineIds(modelName, hosts))),
  ];

  // Units with no placement directive (the bulk of a large request) are written together,
  // after the directed ones: those are the units a race can refuse (their machine being
  // destroyed meanwhile), and a refusal then finds nothing of the bulk written. What the
  // directed units wrote before a refusal is taken back: all or nothing.
  const direct = placements.length === 0 ? count : Math.max(0, count - placements.length);
  const bulkStart = count - direct;
  const recorded: RecordedUnit[] = [];
  try {
    if (direct > 1) {
      const bulkHosts = machineIds.slice(machineIds.length - direct);
      machineIds.length -= direct;
      const directed = await addUnitsOneByOne(ctx, {
        model,
        app,
        constraints,
        numbers: numbers.slice(0, bulkStart),
        placements: placements.slice(0, bulkStart),
        machineIds,
        recorded,
      });
      const written = await addUnitsInBulk(ctx, {
        model,
        app,
        constraints,
        units: numbers.slice(bulkStart).map((n, i) => ({ number: n, hostId: bulkHosts[i]! })),
      });
      await startWorkflows(
        ctx,
        modelName,
        written.map((u) => u.machine),
      );
      return [...directed, ...written];
    }
    return await addUnitsOneByOne(ctx, {
      model,
      app,
      constraints,
      numbers,
      placements: Array.from({ length: count }, (_, i) => placements[i]),
      machineIds,
      recorded,
    });
  } catch (err) {
    // Ours (a 5xx) with an Idempotency-Key: the retry completes the request from its steps.
    // Bulk units a refusal left are the concurrent destroy's (only a dying model or
    // application refuses them), which removes them.
    // A ContendedError (code 'conflict') is ours too: contention, not a refusal, and
    // undoing the directed units would leave the committed bulk chunks behind.
    const refused = isRefusal(err) && !(err instanceof ContendedError);
    if (refused || !ctx.step) await undoUnits(ctx, modelName, recorded);
    throw err;
  }
}

/**
 * Units on new machines of their own, many to a transaction: each
 * transaction holds the model alive, the application alive at the version
 * read (a relation made meanwhile moves it), the related subordinate
 * applications alive, and for each unit its machine and subordinate units.
 * Transactions run one after another (they share the model and application
 * items, which concurrent transactions would conflict on). A transaction that
 * loses a race hands its units to the one-by-one path, which retries inside.
 * Each committed transaction is one request step, so a retried request with
 * the same Idempotency-Key does not write it again.
 */
async function addUnitsInBulk(
  ctx: ServiceContext,
  args: {
    model: ModelRecord;
    app: ApplicationRecord;
    constraints: string;
    units: ReadonlyArray<{ number: number; hostId: string }>;
  },
): Promise<PlacedUnit[]> {
  const { model, app } = args;
  const subordinates = await relatedSubordinates(ctx, model.name, app.name);
  const perUnit = 2 + subordinates.length;
  const fixed = 2 + subordinates.length;
  const chunkSize = Math.max(1, Math.floor((TRANSACTION_ITEMS - fixed) / perUnit));
  const subNumbers = await requestStep(ctx, 'subordinateNumbers', async () => {
    const out: Record<string, number[]> = {};
    for (const sub of subordinates) {
      out[sub.name] = await ctx.repo.allocateUnitNumbers(model.name, sub.name, args.units.length);
    }
    return out;
  });
  const now = ctx.now().toISOString();
  const placed: PlacedUnit[] = [];
  for (let start = 0; start < args.units.length; start += chunkSize) {
    const chunk = args.units.slice(start, start + chunkSize);
    const committed = await requestStep(ctx, `units-${start}`, async () => {
      const tx = ctx.repo.transaction();
      guardModelAndApp(tx, model.name, []);
      requireApplicationAlive(tx, model.name, app.name, { version: app.version ?? 0 });
      for (const sub of subordinates) requireApplicationAlive(tx, model.name, sub.name);
      chunk.forEach((u, i) => {
        const unitName = `${app.name}/${u.number}`;
        createMachine(
          tx,
          newMachine({
            model: model.name,
            id: u.hostId,
            base: app.base,
            constraints: args.constraints,
            principals: [unitName],
            applications: [app.name],
            now,
          }),
        );
        const subUnits = subordinates.map((sub) =>
          newUnit({
            model: model.name,
            application: sub.name,
            number: subNumbers[sub.name]![start + i]!,
            machine: u.hostId,
            constraints: '',
            principal: unitName,
            now,
          }),
        );
        createUnit(
          tx,
          newUnit({
            model: model.name,
            application: app.name,
            number: u.number,
            machine: u.hostId,
            constraints: args.constraints,
            subordinates: subUnits.map((x) => x.name),
            now,
          }),
        );
        for (const sub of subUnits) createUnit(tx, sub);
      });
      try {
        await ctx.repo.commit(tx);
        return true;
      } catch (err) {
        if (err instanceof ConcurrentChangeError) return false;
        throw err;
      }
    });
    if (committed) {
      placed.push(...chunk.map((u) => ({ name: `${app.name}/${u.number}`, machine: u.hostId })));
      continue;
    }
    // lost a race (a relation, another writer): these units go one by one, re-reading as they go
    placed.push(
      ...(await addUnitsOneByOne(ctx, {
        model,
        app,
        constraints: args.constraints,
        numbers: chunk.map((u) => u.number),
        placements: chunk.map(() => undefined),
        machineIds: chunk.map((u) => u.hostId),
        startWorkflowsToo: false,
      })),
    );
  }
  return placed;
}

/** Each unit in its own transaction with its machine and subordinates, retried inside on a lost race. */
async function addUnitsOneByOne(
  ctx: ServiceContext,
  args: {
    model: ModelRecord;
    app: ApplicationRecord;
    constraints: string;
    numbers: readonly number[];
    placements: ReadonlyArray<Placement | undefined>;
    /** New host ids, taken in order by the units that need one. */
    machineIds: string[];
    /** Start the new machines' workflows here (false when the caller does). */
    startWorkflowsToo?: boolean;
    /** Each unit written is added here as it is (so a refusal later can take it back). */
    recorded?: RecordedUnit[];
  },
): Promise<PlacedUnit[]> {
  const { model, constraints } = args;
  const modelName = model.name;
  const appName = args.app.name;
  const machineIds = [...args.machineIds];
  const count = args.numbers.length;
  const placements = args.placements;
  const numbers = args.numbers;
  const placed: PlacedUnit[] = [];
  const toStart: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const placement = placements[i];
      const unitNumber = numbers[i]!;
      const hostId = needsNewHost(placement) ? machineIds.shift()! : undefined;
      // A retry with the request's Idempotency-Key: its unit numbers are its alone, so a
      // unit already under one was written by the try that was cut off (no second write).
      const earlier = ctx.step
        ? await ctx.repo.getUnit(modelName, `${appName}/${unitNumber}`).catch((err: unknown) => {
            if (err instanceof EntityNotFoundError) return undefined;
            throw err;
          })
        : undefined;
      if (earlier !== undefined) {
        const createdContainer = placement?.kind === 'container' ? earlier.machine : undefined;
        placed.push({ name: earlier.name, machine: earlier.machine });
        args.recorded?.push({
          name: earlier.name,
          machine: earlier.machine,
          created: [hostId, createdContainer].filter((id) => id !== undefined),
        });
        if (hostId !== undefined) toStart.push(hostId);
        if (createdContainer !== undefined) toStart.push(createdContainer);
        continue;
      }
      let containerId: string | undefined;
      if (placement?.kind === 'container') {
        containerId =
          placement.machineId === undefined
            ? `${hostId!}/lxd/0`
            : (await ctx.repo.allocateContainerIds(modelName, placement.machineId, 1))[0]!;
      }
      const subNumbers = new Map<string, number>();
      const machineId = await retryOnConcurrentChange(() =>
        placeOne(ctx, {
          model,
          appName,
          unitNumber,
          placement,
          hostId,
          containerId,
          subNumbers,
          constraints,
        }),
      );
      placed.push({ name: `${appName}/${unitNumber}`, machine: machineId });
      args.recorded?.push({
        name: `${appName}/${unitNumber}`,
        machine: machineId,
        created: [hostId, containerId].filter((id) => id !== undefined),
      });
      if (hostId !== undefined) toStart.push(hostId);
      if (containerId !== undefined) toStart.push(containerId);
    }
  } finally {
    // whatever was recorded gets its workflow, even when a later unit failed
    if (args.startWorkflowsToo !== false) await startWorkflows(ctx, modelName, toStart);
  }
  return placed;
}

async function placeOne(
  ctx: ServiceContext,
  args: {
    model: ModelRecord;
    appName: string;
    unitNumber: number;
    placement: Placement | undefined;
    hostId?: string;
    containerId?: string;
    /** Subordinate unit numbers already reserved by an earlier try, by application. */
    subNumbers: Map<string, number>;
    constraints: string;
  },
): Promise<string> {
  const { model, placement } = args;
  // Read inside the retry: a relation made meanwhile bumps the application's
  // version, so this unit is written with its subordinates or not at all.
  const app = await ctx.repo.getApplication(model.name, args.appName);
  checkAlive(app);
  const subordinates = await relatedSubordinates(ctx, model.name, app.name);
  for (const sub of subordinates) {
    if (!args.subNumbers.has(sub.name)) {
      args.subNumbers.set(
        sub.name,
        (await ctx.repo.allocateUnitNumbers(model.name, sub.name, 1))[0]!,
      );
    }
  }
  const now = ctx.now().toISOString();
  const unitName = `${app.name}/${args.unitNumber}`;
  const tx = ctx.repo.transaction();
  guardModelAndApp(tx, model.name, []);
  requireApplicationAlive(tx, model.name, app.name, { version: app.version ?? 0 });
  for (const sub of subordinates) {
    // no error of its own: a subordinate application going away meanwhile is re-read on the retry
    requireApplicationAlive(tx, model.name, sub.name);
  }
  let machineId: string;

  if (placement?.kind === 'machine') {
    const target = await ctx.repo.getMachine(model.name, placement.machineId);
    if (target.life !== 'alive')
      throw new EntityConflictError(`machine ${target.id} is being destroyed`);
    for (const sub of subordinates) checkUnitOnMachineBase(sub.base, target.base);
    machineId = target.id;
    const applications = union(target.applications, [app.name]);
    // the machine now counts in the application's zone spread too (Juju's distribution group)
    const regroup = await ctx.repo.regroupMachine(model.name, target.id, applications);
    updateMachineMembership(
      tx,
      target,
      {
        principals: union(target.principals, [unitName]),
        applications,
        containers: target.containers,
      },
      regroup,
    );
  } else if (placement?.kind === 'container') {
    const containerId = args.containerId!;
    machineId = containerId;
    const container = newMachine({
      model: model.name,
      id: containerId,
      base: app.base,
      constraints: args.constraints,
      principals: [unitName],
      applications: [app.name],
      now,
    });
    createMachine(tx, container);
    if (placement.machineId !== undefined) {
      const host = await ctx.repo.getMachine(model.name, placement.machineId);
      if (host.life !== 'alive')
        throw new EntityConflictError(`machine ${host.id} is being destroyed`);
      updateMachineMembership(tx, host, {
        principals: host.principals,
        applications: host.applications,
        containers: union(host.containers, [containerId]),
      });
    } else {
      const host = newMachine({
        model: model.name,
        id: args.hostId!,
        base: app.base,
        constraints: args.constraints,
        containers: [containerId],
        now,
      });
      createMachine(tx, host);
    }
  } else {
    machineId = args.hostId!;
    const machine = newMachine({
      model: model.name,
      id: machineId,
      base: app.base,
      constraints: args.constraints,
      placement: placementText(placement),
      principals: [unitName],
      applications: [app.name],
      now,
    });
    createMachine(tx, machine);
  }

  const subUnits = subordinates.map((sub) =>
    newUnit({
      model: model.name,
      application: sub.name,
      number: args.subNumbers.get(sub.name)!,
      machine: machineId,
      constraints: '',
      principal: unitName,
      now,
    }),
  );
  const unit = newUnit({
    model: model.name,
    application: app.name,
    number: args.unitNumber,
    machine: machineId,
    constraints: args.constraints,
    subordinates: subUnits.map((u) => u.name),
    now,
  });
  createUnit(tx, unit);
  for (const sub of subUnits) createUnit(tx, sub);
  await ctx.repo.commit(tx);
  return machineId;
}

/**
 * Starts the workflows of new machines. A failure here leaves the machine
 * recorded and `pending`; the model's sweep restarts any machine without a
 * workflow, so the request still succeeds.
 */
export async function startWorkflows(
  ctx: ServiceContext,
  model: string,
  machineIds: readonly string[],
): Promise<void> {
  if (machineIds.length === 0) return;
  const [sweep, starts] = await Promise.allSettled([
    // the model's sweep restarts a workflow that fails to start here: make sure it exists
    ctx.workflows.ensureSweep(model),
    ctx.workflows.startMany(model, machineIds, ctx.user),
  ]);
  if (sweep.status === 'rejected') {
    ctx.log.warn('could not ensure the model sweep', { model, error: String(sweep.reason) });
  }
  if (starts.status === 'rejected') {
    ctx.log.warn('could not start machine workflows; the sweep will', {
      model,
      machines: machineIds.length,
      error: String(starts.reason),
    });
  }
}
