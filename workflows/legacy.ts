/**
 * Workflow types earlier versions started and this one no longer uses,
 * kept registered for one release so runs in flight at an upgrade end
 * cleanly instead of failing their workflow tasks for ever.
 */

/**
 * A run of a model's sweep Schedule (one Schedule per model, before the
 * sweeper). The sweeper now sweeps every model, and the worker deletes
 * these Schedules at start; a run fired before that has nothing to do.
 */
export async function modelSweepWorkflow(): Promise<void> {
  return Promise.resolve();
}
