import { BadRequestError } from '../functions/errors';
import type { MachineRecord } from '../state/types';
import { canonicalConstraints, mergeIntoModel } from './constraints';
import type { ServiceContext } from './context';
import { parseMachinePlacement, validateBase } from './placement';

export const DEFAULT_BASE = 'ubuntu@24.04';

export interface AddMachinesInput {
  count?: number;
  base?: string;
  constraints?: string;
  placement?: string;
}

/**
 * add-machine: records `count` machines (all or nothing), then starts one
 * workflow per machine. A machine added on its own takes the model's
 * constraints with its own on top. Manual (`ssh:`) machines are recorded
 * running and never launched.
 */
export async function addMachines(
  ctx: ServiceContext,
  model: string,
  input: AddMachinesInput,
): Promise<{ id: string }[]> {
  const count = input.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > 1000) {
    throw new BadRequestError(
      `count must be an integer from 1 to 1000, got ${String(input.count)}`,
    );
  }
  const placement = parseMachinePlacement(input.placement, count);
  const base = validateBase(input.base ?? DEFAULT_BASE);
  const modelRecord = await ctx.repo.getModel(model);
  const constraints = mergeIntoModel(
    modelRecord.constraints,
    canonicalConstraints(input.constraints ?? ''),
  );
  const ids = await ctx.repo.allocateMachineIds(model, count);
  const now = ctx.now().toISOString();
  const manual = placement?.kind === 'ssh';
  const machines: MachineRecord[] = ids.map((id) => ({
    model,
    id,
    base,
    constraints,
    placement: placement?.text,
    life: 'alive',
    status: manual ? 'running' : 'pending',
    message: '',
    createdAt: now,
    updatedAt: now,
  }));
  await ctx.repo.putNewMachines(machines);
  if (!manual) await Promise.all(ids.map((id) => ctx.workflows.start(model, id)));
  return ids.map((id) => ({ id }));
}
