import { checkUnitOnMachineBase, needsNewHost, type Placement } from '../core';
import { EntityConflictError, EntityNotFoundError, retryOnConcurrentChange } from '../state/errors';
import type { ModelRecord, ApplicationRecord } from '../state/types';
import { guardUnitWrite } from '../state/unit-writes';
import { createMachine, createUnit, updateMachineMembership } from '../state/writes';
import type { ServiceContext } from './context';
import { placementText } from './placement';
import { newMachine, newUnit } from './records';
import { relatedSubordinates } from './subordinates';
import { checkApplicationAlive } from './unit-decision';
import type { RecordedUnit } from './unit-undo';
import type { PlacedUnitView } from './views';
import { startWorkflows } from './workflow-start';

function union(list: readonly string[], more: readonly string[]): string[] {
  return [...new Set([...list, ...more])].sort();
}

/** Each unit in its own transaction with its machine and subordinates, retried inside on a lost race. */
export async function addUnitsOneByOne(
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
): Promise<PlacedUnitView[]> {
  const { model, constraints } = args;
  const modelName = model.name;
  const appName = args.app.name;
  const machineIds = [...args.machineIds];
  const count = args.numbers.length;
  const placements = args.placements;
  const numbers = args.numbers;
  const placed: PlacedUnitView[] = [];
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
  checkApplicationAlive(app);
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
  guardUnitWrite(tx, model.name, app, subordinates);
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
      requestedBy: ctx.user,
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
        requestedBy: ctx.user,
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
      requestedBy: ctx.user,
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
