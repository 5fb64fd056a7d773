import { TRANSACTION_LIMIT } from '../state/repository';
import { createApplication, createMachine, createUnit, guardModelAndApp } from '../state/writes';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import { collapseConstraints } from './constraints';
import { requestStep, type ServiceContext } from './context';
import { newMachine, newUnit } from './records';
import type { PlacedUnit } from './units';
import { startWorkflows, withPrincipals } from './workflow-start';
import { creationHint } from '../temporal/created-machine';
import { retryOnConcurrentChange } from '../state/errors';

/** The model check and the application itself. */
const FIXED_ITEMS = 2;
/** A unit on a new machine of its own: the machine and the unit. */
const ITEMS_PER_UNIT = 2;

/**
 * The most units a deploy without placement directives writes in the same
 * transaction as its application (a new application has no relations yet,
 * so no subordinate units ride along).
 */
export const MAX_UNITS_AT_ONCE = Math.floor((TRANSACTION_LIMIT - FIXED_ITEMS) / ITEMS_PER_UNIT);

/** True when `deployAtOnce` can write the whole deploy as one transaction. */
export function fitsOneTransaction(numUnits: number, directives: readonly string[]): boolean {
  return directives.length === 0 && numUnits <= MAX_UNITS_AT_ONCE;
}

/**
 * Writes an application, its unit counter and its units on new machines in
 * one transaction: the deploy is recorded whole or not at all, so a failed
 * write never leaves an application without its units (which a retry would
 * then find taken, 409). The machine ids are reserved first, after every
 * check that can refuse the deploy (deploy() in service/applications.ts), so
 * a refused deploy spends no id; only a write that loses a race to another
 * deploy of the same name leaves a gap.
 */
export async function deployAtOnce(
  ctx: ServiceContext,
  model: ModelRecord,
  record: ApplicationRecord,
  numUnits: number,
): Promise<PlacedUnit[]> {
  const machineIds = await requestStep(ctx, 'machineIds', () =>
    ctx.repo.allocateMachineIds(model.name, numUnits),
  );
  const constraints = collapseConstraints(model.constraints, record.constraints);
  const now = ctx.now().toISOString();
  const units = machineIds.map((machine, n) => ({ name: `${record.name}/${n}`, machine }));
  // each workflow is handed what this request writes, so its first step reads neither the
  // machine nor the model; the machines name the model's uid (see creationHint)
  const created = withPrincipals(
    creationHint(model, { base: record.base, constraints, applications: [record.name] }),
    units,
  );
  await requestStep(ctx, 'application', async () => {
    const tx = ctx.repo.transaction();
    guardModelAndApp(tx, model.name, [], created?.modelUid);
    createApplication(tx, record, { nextUnit: numUnits });
    units.forEach((u, n) => {
      createMachine(
        tx,
        newMachine({
          model: model.name,
          id: u.machine,
          base: record.base,
          constraints,
          principals: [u.name],
          applications: [record.name],
          ...(created ? { modelUid: created.modelUid } : {}),
          requestedBy: ctx.user,
          now,
        }),
      );
      createUnit(
        tx,
        newUnit({
          model: model.name,
          application: record.name,
          number: n,
          machine: u.machine,
          constraints,
          now,
        }),
      );
    });
    // another request touching the model meanwhile (an add-unit, a relate) is a lost race, not a refusal
    await retryOnConcurrentChange(() => ctx.repo.commit(tx));
    return true;
  });
  await startWorkflows(ctx, model.name, machineIds, created);
  return units;
}
