import { BadRequestError } from '../functions/errors';
import type { HarvestMode, ModelRecord } from '../state/types';
import { canonicalConstraints } from './constraints';
import type { ServiceContext } from './context';

export const NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;
const REGION_PATTERN = /^[a-z]{2}(-[a-z]+)+-\d+$/;

export interface CreateModelInput {
  name: string;
  region?: string;
  constraints?: string;
  harvestMode?: HarvestMode;
}

export interface ModelView {
  name: string;
  region: string;
  constraints: string;
  harvestMode: HarvestMode;
  createdAt: string;
}

export function modelView(m: ModelRecord): ModelView {
  return {
    name: m.name,
    region: m.region,
    constraints: m.constraints,
    harvestMode: m.harvestMode,
    createdAt: m.createdAt,
  };
}

export async function createModel(
  ctx: ServiceContext,
  input: CreateModelInput,
): Promise<ModelView> {
  if (!NAME_PATTERN.test(input.name))
    throw new BadRequestError(`invalid model name "${input.name}"`);
  const region = input.region ?? ctx.defaultRegion;
  if (!REGION_PATTERN.test(region)) throw new BadRequestError(`invalid region "${region}"`);
  const record: ModelRecord = {
    name: input.name,
    region,
    constraints: canonicalConstraints(input.constraints ?? ''),
    harvestMode: input.harvestMode ?? 'destroyed',
    life: 'alive',
    createdAt: ctx.now().toISOString(),
  };
  await ctx.repo.createModel(record);
  return modelView(record);
}

export async function listModels(ctx: ServiceContext): Promise<ModelView[]> {
  return (await ctx.repo.listModels()).map(modelView);
}

export async function getModel(ctx: ServiceContext, name: string): Promise<ModelView> {
  return modelView(await ctx.repo.getModel(name));
}
