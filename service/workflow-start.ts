import type { CreatedMachine } from '../temporal/created-machine';
import type { ServiceContext } from './context';

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
