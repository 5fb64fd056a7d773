import type { ServiceContext } from './context';

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
