import type { ModelRecord } from '../state/types';
import type { CreatedMachine } from '../temporal/created-machine';
import type { ServiceContext } from './context';

/**
 * What a request writes of new machines, to hand their workflows
 * (MachineWorkflowInput.created), when the model has a uid: the machines
 * then name it (`modelUid`) and are written only while the model has it
 * (state/writes.ts requireModelAlive). Undefined for a model without one.
 */
export function creationHint(
  model: Pick<ModelRecord, 'uid' | 'region' | 'availabilitySets'>,
  machines: { base: string; constraints: string; placement?: string; applications: string[] },
): CreatedMachine | undefined {
  if (!model.uid) return undefined;
  return {
    modelUid: model.uid,
    region: model.region,
    availabilitySets: model.availabilitySets,
    base: machines.base,
    constraints: machines.constraints,
    ...(machines.placement ? { placement: machines.placement } : {}),
    applications: [...machines.applications],
  };
}

/** A request's hint with the principal units it placed on each machine (CreatedMachine.principalsOf). */
export function withPrincipals(
  created: CreatedMachine | undefined,
  units: ReadonlyArray<{ name: string; machine: string }>,
): CreatedMachine | undefined {
  if (!created) return undefined;
  const principalsOf: Record<string, string[]> = {};
  for (const u of units) (principalsOf[u.machine] ??= []).push(u.name);
  return { ...created, principalsOf };
}

/**
 * Starts the workflows of new machines. A failure here leaves the machine
 * recorded and `pending`; the model's sweep restarts any machine without a
 * workflow, so the request still succeeds. `created`: what the request wrote
 * of every one of them (MachineWorkflowInput.created), so their first step
 * reads neither the machine nor the model.
 */
export async function startWorkflows(
  ctx: ServiceContext,
  model: string,
  machineIds: readonly string[],
  created?: CreatedMachine,
): Promise<void> {
  if (machineIds.length === 0) return;
  const [sweep, starts] = await Promise.allSettled([
    // the model's sweep restarts a workflow that fails to start here: make sure it exists
    ctx.workflows.ensureSweep(model),
    ctx.workflows.startMany(model, machineIds, ctx.user, created),
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
