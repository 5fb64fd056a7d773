import { checkUnitOnMachineBase } from '../core';
import { InvalidRequestError, isRefusal } from './errors';
import type { ApplicationView, ConstraintsView, PlanView } from './views';
import { EntityConflictError, EntityNotFoundError, retryOnConcurrentChange } from '../state/errors';
import {
  bumpApplicationVersion,
  createRelation,
  setApplicationConstraints as writeApplicationConstraints,
} from '../state/application-writes';
import { createApplication, guardModelAndApp } from '../state/writes';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import type { Placement } from '../core';
import { buildPlan } from './plans';
import { canonicalConstraints, collapseConstraints, constraintsView } from './constraints';
import { deployAtOnce, fitsOneTransaction } from './deploy';
import { checkOffered } from './offerings';
import { checkSubordinateRoom } from './relation-limits';
import { addSubordinateUnits, fanOutIncomplete } from './subordinates';
import { requestStep, type ServiceContext } from './context';
import { NAME_PATTERN } from './names';
import { validateBase } from './placement';
import { signalDead } from './removal';
import {
  collectDead,
  INLINE_REMOVAL_LIMIT,
  markApplicationsDying,
  removeApplicationContents,
  removeInBackground,
} from './removal-batches';
import { checkUnitPlacements } from './unit-placement';
import { unitPlanEntries } from './unit-plan';
import { addUnits, type PlacedUnit } from './units';

export interface DeployInput {
  name: string;
  base: string;
  charm?: string;
  constraints?: string;
  numUnits?: number;
  to?: string[];
  subordinate?: boolean;
}

export type { ApplicationView };

export function applicationView(a: ApplicationRecord): ApplicationView {
  return {
    name: a.name,
    charm: a.charm,
    base: a.base,
    constraints: a.constraints,
    subordinate: a.subordinate,
    life: a.life,
    createdAt: a.createdAt,
  };
}

export const SUBORDINATE_CONSTRAINTS = 'constraints do not apply to subordinate applications';

/** What deploy decided before it writes anything (the same for its plan). */
export interface DeployDecision {
  modelRecord: ModelRecord;
  record: ApplicationRecord;
  numUnits: number;
  placements: Placement[];
}

/**
 * deploy's decision: the name, base, constraints, unit count and placement
 * checked as a real deploy checks them before it records anything, and the
 * application record it would write.
 */
export async function decideDeploy(
  ctx: ServiceContext,
  model: string,
  input: DeployInput,
): Promise<DeployDecision> {
  if (!NAME_PATTERN.test(input.name))
    throw new InvalidRequestError(`invalid application name "${input.name}"`);
  const base = validateBase(input.base);
  const subordinate = input.subordinate ?? false;
  if (subordinate && input.constraints !== undefined && input.constraints.trim() !== '') {
    throw new EntityConflictError(SUBORDINATE_CONSTRAINTS);
  }
  const constraints = canonicalConstraints(input.constraints ?? '');
  const numUnits = input.numUnits ?? (subordinate ? 0 : 1);
  if (subordinate && numUnits !== 0)
    throw new InvalidRequestError('subordinate application must be deployed without units');
  if (subordinate && (input.to?.length ?? 0) > 0)
    throw new InvalidRequestError('subordinate application cannot have placement directives');
  const modelRecord = await ctx.repo.getLiveModel(model);
  // refuse bad placement before anything is recorded
  const placements = await checkUnitPlacements(
    ctx,
    modelRecord,
    { name: input.name, base },
    numUnits,
    input.to ?? [],
  );
  const record: ApplicationRecord = {
    model,
    name: input.name,
    charm: input.charm ?? input.name,
    base,
    constraints,
    subordinate,
    life: 'alive',
    createdAt: ctx.now().toISOString(),
    version: 0,
  };
  await checkOffered(ctx, modelRecord.region, { constraints });
  return { modelRecord, record, numUnits, placements };
}

/**
 * deploy with `"dryRun": true`: the same decision as a plan; nothing
 * written. A name taken answers what the real deploy's write answers.
 */
export async function planDeploy(
  ctx: ServiceContext,
  model: string,
  input: DeployInput,
): Promise<PlanView> {
  const { modelRecord, record, numUnits, placements } = await decideDeploy(ctx, model, input);
  const taken = await ctx.repo.getApplication(model, input.name).then(
    () => true,
    (err: unknown) => {
      if (err instanceof EntityNotFoundError) return false;
      throw err;
    },
  );
  if (taken) throw new EntityConflictError(`application "${input.name}" already exists`);
  const entries = await unitPlanEntries(ctx, modelRecord, record, {
    firstNumber: 0,
    count: numUnits,
    placements,
    constraints: collapseConstraints(modelRecord.constraints, record.constraints),
  });
  return buildPlan(ctx, modelRecord, entries);
}

/**
 * deploy: the application and its constraints are recorded before its first
 * unit is added, so every unit collapses the constraints as they are then.
 */
export async function deploy(
  ctx: ServiceContext,
  model: string,
  input: DeployInput,
): Promise<{ application: ApplicationView; units: PlacedUnit[] }> {
  const { modelRecord, record, numUnits } = await decideDeploy(ctx, model, input);
  // before any machine id is reserved: a refused deploy spends no number (Juju never skips
  // one); a step, so a retry of a deploy that wrote its application goes on past it
  await requestStep(ctx, 'nameFree', () => checkApplicationAbsent(ctx, model, input.name));
  if (fitsOneTransaction(numUnits, input.to ?? [])) {
    const units = await deployAtOnce(ctx, modelRecord, record, numUnits);
    return { application: applicationView(record), units };
  }
  const tx = ctx.repo.transaction();
  guardModelAndApp(tx, model, []);
  createApplication(tx, record);
  // a step, so a deploy cut off after this write and retried with its Idempotency-Key goes on
  await requestStep(ctx, 'application', async () => {
    await ctx.repo.commit(tx);
    return true;
  });
  try {
    const units = await addUnits(ctx, model, input.name, numUnits, input.to ?? []);
    return { application: applicationView(record), units };
  } catch (err) {
    await undoDeploy(ctx, model, input.name, err);
    throw err;
  }
}

/**
 * The application's name is free in the model. The deploy's own write still
 * holds the name (`attribute_not_exists`); this only refuses the common case
 * before anything, machine ids included, is spent on it.
 */
async function checkApplicationAbsent(
  ctx: ServiceContext,
  model: string,
  name: string,
): Promise<true> {
  try {
    await ctx.repo.getApplication(model, name);
  } catch (err) {
    if (err instanceof EntityNotFoundError) return true;
    throw err;
  }
  throw new EntityConflictError(`application "${name}" already exists`);
}

/**
 * A deploy too large for one transaction (or with placement directives)
 * writes its application first and its units after; when a unit write fails,
 * what was written goes again, so the deploy is all or nothing. Except when
 * the failure is ours (no `code`: a 5xx) and the request carries an
 * Idempotency-Key: then its retry completes the deploy from its recorded
 * steps (functions/http.ts), which needs the application kept.
 */
async function undoDeploy(
  ctx: ServiceContext,
  model: string,
  app: string,
  cause: unknown,
): Promise<void> {
  const refusal = isRefusal(cause);
  if (ctx.step && !refusal) return;
  try {
    await destroyApplication(ctx, model, app);
  } catch (err) {
    ctx.log.error('could not undo a failed deploy', {
      model,
      application: app,
      error: String(err),
      cause: String(cause),
    });
  }
}

export async function getApplication(
  ctx: ServiceContext,
  model: string,
  app: string,
): Promise<ApplicationView> {
  await ctx.repo.getModel(model);
  return applicationView(await ctx.repo.getApplication(model, app));
}

export async function getApplicationConstraints(
  ctx: ServiceContext,
  model: string,
  app: string,
): Promise<ConstraintsView> {
  await ctx.repo.getModel(model);
  const record = await ctx.repo.getApplication(model, app);
  if (record.subordinate) throw new EntityConflictError(SUBORDINATE_CONSTRAINTS);
  return constraintsView(record.constraints);
}

/** set-constraints on an application: applies to units added from now on, never to existing ones. */
export async function setApplicationConstraints(
  ctx: ServiceContext,
  model: string,
  app: string,
  text: string,
): Promise<ConstraintsView> {
  const modelRecord = await ctx.repo.getModel(model);
  const record = await ctx.repo.getApplication(model, app);
  if (record.subordinate) throw new EntityConflictError(SUBORDINATE_CONSTRAINTS);
  const view = constraintsView(text);
  await checkOffered(ctx, modelRecord.region, { constraints: view.constraints });
  const tx = ctx.repo.transaction();
  writeApplicationConstraints(tx, model, app, view.constraints);
  await ctx.repo.commit(tx);
  return view;
}

/**
 * remove-application: its units go (machines left empty go Dead), then its
 * relations and itself. An application of more than INLINE_REMOVAL_LIMIT
 * units is removed by a removal workflow: the request starts it, marks the
 * application Dying and answers; a retried request finds it running.
 */
export async function destroyApplication(
  ctx: ServiceContext,
  model: string,
  app: string,
): Promise<void> {
  const modelRecord = await ctx.repo.getModel(model);
  const appRecord = await ctx.repo.getApplication(model, app);
  const units = await ctx.repo.listUnits(model, app);
  if (
    units.length > INLINE_REMOVAL_LIMIT &&
    (await removeInBackground(ctx, {
      model,
      modelUid: modelRecord.uid,
      application: app,
      applicationCreatedAt: appRecord.createdAt,
    }))
  ) {
    await markApplicationsDying(ctx, model, [app]);
    return;
  }
  const dead = collectDead();
  await removeApplicationContents(ctx, model, app, dead);
  await signalDead(ctx, model, dead.ids);
}

/**
 * relate: records the relation; a subordinate related to a principal gets a
 * unit beside every principal unit, now and for units added later.
 */
export async function relate(
  ctx: ServiceContext,
  model: string,
  endpoints: string[],
): Promise<{ endpoints: [string, string] }> {
  return retryOnConcurrentChange(() => relateOnce(ctx, model, endpoints));
}

async function relateOnce(
  ctx: ServiceContext,
  model: string,
  endpoints: string[],
): Promise<{ endpoints: [string, string] }> {
  if (endpoints.length !== 2)
    throw new InvalidRequestError(
      `a relation needs exactly two endpoints, got ${endpoints.length}`,
    );
  const [a, b] = endpoints.map((e) => e.split(':')[0] ?? e).sort() as [string, string];
  for (const name of [a, b]) {
    if (!NAME_PATTERN.test(name))
      throw new InvalidRequestError(`invalid application name "${name.slice(0, 100)}"`);
  }
  if (a === b) throw new InvalidRequestError(`cannot relate application "${a}" to itself`);
  await ctx.repo.getLiveModel(model);
  const [appA, appB] = await Promise.all([
    ctx.repo.getApplication(model, a),
    ctx.repo.getApplication(model, b),
  ]);
  for (const app of [appA, appB]) {
    if (app.life !== 'alive')
      throw new EntityConflictError(`application "${app.name}" is being destroyed`);
  }
  if (appA.subordinate && appB.subordinate) {
    throw new InvalidRequestError(`cannot relate subordinate applications "${a}" and "${b}"`);
  }
  if (appA.subordinate !== appB.subordinate) {
    const [principal, subordinate] = appA.subordinate ? [appB, appA] : [appA, appB];
    checkUnitOnMachineBase(subordinate.base, principal.base);
    await checkSubordinateRoom(ctx, model, principal, subordinate.name);
  }
  const tx = ctx.repo.transaction();
  guardModelAndApp(tx, model, []);
  // Bumping both versions makes a unit being added to either concurrently
  // retry, so it is written with its new subordinates or before the relation.
  for (const app of [appA, appB]) bumpApplicationVersion(tx, app);
  const exists = new EntityConflictError(`relation "${a} ${b}" already exists`);
  createRelation(tx, { model, endpoints: [a, b], createdAt: ctx.now().toISOString() }, exists);
  const fansOut = appA.subordinate !== appB.subordinate;
  const [principal, subordinate] = appA.subordinate ? [appB, appA] : [appA, appB];
  try {
    await ctx.repo.commit(tx);
  } catch (err) {
    // a relation whose fan-out was cut off is completed by relating again
    if (
      err !== exists ||
      !fansOut ||
      !(await fanOutIncomplete(ctx, model, principal.name, subordinate.name))
    )
      throw err;
  }
  if (fansOut) await addSubordinateUnits(ctx, model, principal, subordinate);
  return { endpoints: [a, b] };
}
