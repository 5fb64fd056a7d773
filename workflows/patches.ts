import { patched } from '@temporalio/workflow';

/**
 * Patch ids (`patched()`): workflows begun before a change replay their
 * history on the old path; those begun after take the new one. Remove a
 * patch's old path only once no workflow begun before it can be running.
 *
 * Each patch a run takes costs two Temporal actions (its marker and the
 * TemporalChangeVersion search attribute the SDK upserts with it). So the
 * machine workflow is also versioned by type: `machine` runs take every
 * change listed here without asking (none of them began before these
 * changes), and `machineWorkflow` runs, begun before `machine` existed,
 * ask `patched()` at the very points they always did.
 */

/** Whether this run takes the change `patch` (see above). */
export function uses(run: { lean: boolean }, patch: string): boolean {
  return run.lean || patched(patch);
}

/**
 * Issue 10: zone claims write `allocating` themselves, launches go out in
 * batches (a heartbeating activity with a summary), waits are named timers,
 * and the quick steps are local activities.
 */
export const BATCHED_LAUNCHES = 'batched-launches';

/**
 * Issue 12: EC2's state of the machine's instance (the `instanceState`
 * signal) is recorded by the workflow and shown as a search attribute; a lost
 * instance puts the machine `down`.
 */
export const INSTANCE_LIVENESS = 'instance-liveness';

/**
 * Issue 15: a container machine's workflow creates the container on its host
 * through SSM Run Command and deletes it when the container goes Dead
 * (container.ts); before, it only waited.
 */
export const CONTAINERS = 'containers';

/**
 * Issue 11: a teardown whose instance stays un-terminated for minutes says
 * so in the machine's status and looks once a minute. Changes made after the
 * `machine` type began are asked with `patched()` by every run, lean or not:
 * `machine` runs in flight then have histories without them.
 */
export const BOUNDED_TEARDOWN = 'bounded-teardown';

/** Issue 11: a destroy that arrives while a machine is planned cancels the planning. */
export const DESTROY_CANCELS_PLANNING = 'destroy-cancels-planning';

/**
 * Issue 11: a machine that settles (waits for a signal) with a long history
 * continues as new, carrying its state (machine.ts SETTLED_HISTORY_EVENTS).
 */
export const CONTINUE_WHEN_SETTLED = 'continue-when-settled';
