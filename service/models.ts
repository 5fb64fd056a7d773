import { randomUUID } from 'node:crypto';
import { InvalidRequestError } from './errors';
import type { ConstraintsView, ModelView } from './views';
import type { HarvestMode, ModelRecord } from '../state/types';
import { canonicalConstraints, constraintsView } from './constraints';
import { EntityConflictError } from '../state/errors';
import { NAME_PATTERN, REGION_PATTERN } from './names';
import { signalDead } from './removal';
import {
  collectDead,
  INLINE_REMOVAL_LIMIT,
  removeInBackground,
  removeModelContents,
} from './removal-batches';
import type { ServiceContext } from './context';
import { firstGrantsItem } from '../state/access';

export interface CreateModelInput {
  name: string;
  region?: string;
  constraints?: string;
  harvestMode?: HarvestMode;
  availabilitySets?: boolean;
  reprovisionLost?: boolean;
}

export interface UpdateModelInput {
  harvestMode?: HarvestMode;
  reprovisionLost?: boolean;
  /** Fixed at creation: only its current value is accepted. */
  availabilitySets?: boolean;
}

/** A model as the API answers it (its schema: functions/schemas.ts). */
export type { ModelView };

export function modelView(m: ModelRecord): ModelView {
  return {
    name: m.name,
    region: m.region,
    constraints: m.constraints,
    harvestMode: m.harvestMode,
    availabilitySets: m.availabilitySets,
    reprovisionLost: m.reprovisionLost,
    createdAt: m.createdAt,
  };
}

export async function createModel(
  ctx: ServiceContext,
  input: CreateModelInput,
): Promise<ModelView> {
  if (!NAME_PATTERN.test(input.name))
    throw new InvalidRequestError(`invalid model name "${input.name}"`);
  const region = input.region ?? ctx.defaultRegion;
  if (!REGION_PATTERN.test(region)) throw new InvalidRequestError(`invalid region "${region}"`);
  if (ctx.regions && !(await ctx.regions.offered()).has(region)) {
    throw new InvalidRequestError(`region "${region}" not found`);
  }
  const record: ModelRecord = {
    name: input.name,
    uid: randomUUID(),
    region,
    constraints: canonicalConstraints(input.constraints ?? ''),
    harvestMode: input.harvestMode ?? 'destroyed',
    availabilitySets: input.availabilitySets ?? false,
    reprovisionLost: input.reprovisionLost ?? false,
    life: 'alive',
    createdAt: ctx.now().toISOString(),
  };
  // the user who adds a model is its admin (API.md)
  await ctx.repo.createModel(record, ctx.user ? [firstGrantsItem(record.name, ctx.user)] : []);
  try {
    await ctx.workflows.ensureSweep(record.name);
  } catch (err) {
    // The model is recorded either way; the worker starts the sweeper too, and so does the next add-machine.
    ctx.log.warn('could not make sure the sweeper is running', {
      model: record.name,
      error: String(err),
    });
  }
  return modelView(record);
}

/**
 * PATCH a model: harvest mode and reprovision-lost may change; the
 * availability-set mode is fixed at creation (Juju's azure-mode), so a PATCH
 * that would change it is refused and changes nothing.
 */
export async function updateModel(
  ctx: ServiceContext,
  name: string,
  input: UpdateModelInput,
): Promise<ModelView> {
  const current = await ctx.repo.getLiveModel(name);
  if (input.availabilitySets !== undefined && input.availabilitySets !== current.availabilitySets) {
    throw new EntityConflictError(
      'availability-sets-enabled cannot be changed after the model is created',
    );
  }
  return modelView(
    await ctx.repo.updateModelSettings(name, {
      harvestMode: input.harvestMode,
      reprovisionLost: input.reprovisionLost,
    }),
  );
}

/** Every model, or with `readableBy`, only those that user can read (a superuser is not filtered). */
export async function listModels(ctx: ServiceContext, readableBy?: string): Promise<ModelView[]> {
  const models = await ctx.repo.listModels();
  if (readableBy === undefined || !ctx.access) return models.map(modelView);
  const grants = await ctx.access.grantsOf(models.map((m) => m.name));
  return models.filter((m) => grants.get(m.name)?.users[readableBy] !== undefined).map(modelView);
}

export async function getModel(ctx: ServiceContext, name: string): Promise<ModelView> {
  return modelView(await ctx.repo.getModel(name));
}

export async function getModelConstraints(
  ctx: ServiceContext,
  name: string,
): Promise<ConstraintsView> {
  return constraintsView((await ctx.repo.getModel(name)).constraints);
}

/** set-model-constraints: applies to what is created from now on, never to existing units or machines. */
export async function setModelConstraints(
  ctx: ServiceContext,
  name: string,
  text: string,
): Promise<ConstraintsView> {
  const view = constraintsView(text);
  await ctx.repo.setModelConstraints(name, view.constraints);
  return view;
}

/**
 * destroy-model: the model goes Dying (no new work is accepted), its
 * applications, units and relations go, every machine goes Dead and is torn
 * down by its workflow; the model itself disappears when it has no machines.
 * A model of more than INLINE_REMOVAL_LIMIT units and machines is removed by
 * a removal workflow: the request starts it, marks the model Dying and
 * answers; a retried request finds it running.
 */
export async function destroyModel(ctx: ServiceContext, name: string): Promise<void> {
  const record = await ctx.repo.getModel(name);
  const contents = await ctx.repo.loadModel(name);
  if (
    contents.units.length + contents.machines.length > INLINE_REMOVAL_LIMIT &&
    (await removeInBackground(ctx, { model: name, modelUid: record.uid }))
  ) {
    await ctx.repo.markModelDying(name);
    return;
  }
  const dead = collectDead();
  await removeModelContents(ctx, name, dead);
  await signalDead(ctx, name, dead.ids);
}
