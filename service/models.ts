import { randomUUID } from 'node:crypto';
import { InvalidRequestError } from './errors';
import type { ConstraintsView, ModelListEntryView, ModelView } from './views';
import type { HarvestMode, ModelRecord } from '../state/types';
import { canonicalConstraints, constraintsView } from './constraints';
import { EntityConflictError, EntityNotFoundError } from '../state/errors';
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
import { checkOffered } from './offerings';

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
  const constraints = canonicalConstraints(input.constraints ?? '');
  await checkOffered(ctx, region, { constraints });
  const record: ModelRecord = {
    name: input.name,
    uid: randomUUID(),
    region,
    constraints,
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

/** Models whose contents are read at once for `summary`. */
const SUMMARY_LANES = 8;

/** A page of the models list when a page is asked for (`limit`, `cursor`) or `summary` is. */
export const MODELS_PAGE_DEFAULT = 100;

/** Where the next page starts: after this model name (opaque to clients). */
function modelsCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after }), 'utf8').toString('base64url');
}

/** The name a cursor this server made continues after; anything else is `400 invalid cursor`. */
function modelsCursorAfter(cursor: string): string {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidRequestError('invalid cursor');
  }
  const after = (value as { after?: unknown } | null)?.after;
  if (
    typeof value !== 'object' ||
    value === null ||
    Object.keys(value).length !== 1 ||
    typeof after !== 'string' ||
    after === '' ||
    after.length > 255 ||
    modelsCursor(after) !== cursor
  ) {
    throw new InvalidRequestError('invalid cursor');
  }
  return after;
}

/**
 * Every model, or with `readableBy`, only those that user can read (a
 * superuser is not filtered). With `summary`, each model also carries its
 * machine and unit counts, last change and the caller's access (Juju's
 * `models` columns), so a client needs one request, not one per model.
 * With `summary`, `limit` or `cursor`, one page (by name; `limit` models,
 * default MODELS_PAGE_DEFAULT) and the cursor of the next when more follow:
 * a summary reads each model's contents, so it is never read for every model
 * at once. Without any of them, every model, as before paging.
 */
export async function listModels(
  ctx: ServiceContext,
  readableBy?: string,
  options: { summary?: boolean; limit?: number; cursor?: string } = {},
): Promise<{ models: ModelListEntryView[]; cursor?: string }> {
  const after = options.cursor === undefined ? undefined : modelsCursorAfter(options.cursor);
  const paged = options.summary === true || options.limit !== undefined || after !== undefined;
  const all = await ctx.repo.listModels();
  const grants =
    readableBy === undefined || !ctx.access
      ? undefined
      : await ctx.access.grantsOf(all.map((m) => m.name));
  const readable =
    grants === undefined || readableBy === undefined
      ? all
      : all.filter((m) => grants.get(m.name)?.users[readableBy] !== undefined);
  let models = readable;
  let cursor: string | undefined;
  if (paged) {
    const limit = options.limit ?? MODELS_PAGE_DEFAULT;
    const from = [...readable]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .filter((m) => after === undefined || m.name > after);
    models = from.slice(0, limit);
    if (from.length > limit) cursor = modelsCursor(models[models.length - 1]!.name);
  }
  const page = (list: ModelListEntryView[]) => ({ models: list, ...(cursor ? { cursor } : {}) });
  if (!options.summary) return page(models.map(modelView));
  const out: ModelListEntryView[] = models.map(modelView);
  let next = 0;
  const lane = async () => {
    while (next < models.length) {
      const i = next++;
      const record = models[i]!;
      let contents;
      try {
        contents = await ctx.repo.loadModel(record.name);
      } catch (err) {
        if (err instanceof EntityNotFoundError) continue; // gone meanwhile: listed as read
        throw err;
      }
      const times = [record.createdAt, ...contents.machines.map((m) => m.updatedAt)]
        .filter((t): t is string => typeof t === 'string' && !Number.isNaN(Date.parse(t)))
        .sort((a, b) => Date.parse(a) - Date.parse(b));
      const access =
        readableBy === undefined ? 'admin' : grants?.get(record.name)?.users[readableBy];
      out[i] = {
        ...modelView(record),
        summary: {
          machines: contents.machines.length,
          units: contents.units.length,
          lastChange: times.at(-1) ?? record.createdAt,
          ...(access ? { access } : {}),
        },
      };
    }
  };
  await Promise.all(Array.from({ length: Math.min(SUMMARY_LANES, models.length) }, lane));
  return page(out);
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
  // the region's zones and offered types, before anything is written
  await checkOffered(ctx, (await ctx.repo.getModel(name)).region, {
    constraints: view.constraints,
  });
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
