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

/**
 * Issue 11: a machine put in `error` by a step that ran out (or was
 * refused) after its instance was launched terminates that instance first
 * (before, it was left running, owned by no one); instances launched and not
 * recorded go with the run when it continues as new.
 */
export const NO_ORPHAN_ON_ERROR = 'no-orphan-on-error';

/**
 * Issue 11: a blocked teardown writes its status only when what blocks it
 * changes, and continues as new before its history grows large (it grew by
 * ~17 events a minute for as long as it was blocked).
 */
export const QUIET_BLOCKED_TEARDOWN = 'quiet-blocked-teardown';

/**
 * Issue 10: a running machine told of its instance's state records it and
 * goes on from what the write answered, without reading the machine first
 * (one DynamoDB read less per observation).
 */
export const OBSERVE_WITHOUT_READ = 'observe-without-read';

/**
 * Issue 23: a machine's workflow told to reprovision (the `reprovision`
 * signal) forgets the lost instance and gives up its zone itself, then
 * provisions; before, the API and the sweep wrote that and sent `retry`, and
 * a signal that failed after the write left the machine pending for ever.
 */
export const REPROVISION_IN_WORKFLOW = 'reprovision-in-workflow';

/**
 * Issue 29, withdrawn: a continued run's input says what the state it carries
 * is (`carried.about`). Asked at every continue-as-new, the patch cost each a
 * marker and a search-attribute upsert although an input field cannot break
 * replay; the label is now always set and live runs no longer ask. Runs that
 * recorded its marker replay: carry.ts asks for it only while replaying
 * (the replay test's `machine-failing-mid-pass-carried-label-*` histories).
 */
export const CARRIED_LABEL = 'carried-label';

/**
 * Issue 29: a provisioning pass that keeps failing continues as new between
 * two attempts once its run holds more than FAILING_HISTORY_EVENTS events
 * (launch.ts), carrying the attempt it goes on with; before, one pass of
 * ten attempts over six zones held some 600 events.
 */
export const BOUNDED_FAILING_HISTORY = 'bounded-failing-history';

/**
 * Issue 29: a zone failover does not upsert the zone it tries next (one
 * search-attribute update, history event and action per zone tried); the
 * zone is published with the launch. Asked only at a failover, so a launch
 * that lands in its first zone records no marker.
 */
export const QUIET_FAILOVER = 'quiet-failover';

/**
 * Issue 30: a Dead machine's teardown overlaps its steps: the zone's
 * release, the status, the tag search and the termination of the instances
 * it knows all start in the signal's workflow task; the termination waits
 * for `terminated` in the same activity; the machine's removal is a local
 * activity in the last workflow task (teardown.ts `tearDownTogether`).
 */
export const OVERLAPPED_TEARDOWN = 'overlapped-teardown';

/**
 * Issue 30: a Dead machine's zone release, status, tag search, terminations
 * and wait for terminated are one activity (teardown.ts `tearDownInOneStep`):
 * one activity task and two workflow tasks a machine instead of four and
 * three to five, each of which waited seconds in a saturated worker's queue.
 * When that activity fails, the machine goes on with OVERLAPPED_TEARDOWN's
 * steps, which say what blocks each. Asked before OVERLAPPED_TEARDOWN: a run
 * that takes it records this marker only.
 */
export const ONE_STEP_TEARDOWN = 'one-step-teardown';

/**
 * Issue 26: a `machine` run's launch takes two workflow tasks and four
 * actions (start, one local activity, the launch, one upsert). Its first
 * read also plans and claims the zone (records.ts loadMachine `prepare`:
 * one local activity instead of three, one read of the machine instead of
 * two); the claim is not published on its own (the launch's upsert carries
 * status, zone, instance status and applications); the launch records the
 * instance itself (launch.ts `record`), so no record step follows it.
 *
 * Not asked with `patched()`: a marker and its TemporalChangeVersion upsert
 * would cost two of the four actions. The change is taken from what the
 * history already holds: the first read's answer carries `prepared` only
 * where that read planned and claimed, and the launch's answer carries
 * `recorded` only where it recorded. Histories recorded before the change
 * hold neither, and replay on the old path (the replay test's histories);
 * a worker of older code never asks for either, so what it ran replays too.
 * This id names the change in code and notes; it is never recorded.
 */
export const LEAN_LAUNCH = 'lean-launch';

/**
 * Issue 26: a destroy that arrives while a `machine` run's first read plans
 * and claims (LEAN_LAUNCH) cancels that read. Asked only in that rare branch
 * (the marker costs two actions there and nowhere else): a run begun by
 * code before LEAN_LAUNCH whose first read outlasted a workflow task and met
 * a destroy has no marker there, and awaits the read's answer as that code
 * did (its destroy then cancels the planning that follows, as recorded).
 */
export const LEAN_READ_CUT = 'lean-read-cut';

/**
 * Issue 26: ProvisionerInstanceStatus names only an instance state the
 * machine needs looked at (stopped, terminated, unknown, …): routine news
 * told to the workflow (the return of a stopped or lost instance to
 * `pending` or `running`) clears it instead of publishing it, as routine
 * news the workflow is never told leaves it unset. A launch clears a state
 * the run published before (the lost instance a reprovision replaces), and a
 * launch by a run that does not record its launch itself (one continued as
 * new) clears it where it published `pending`, which then stayed on a running
 * machine. Asked only there: a first run's launch of a new machine never asks
 * (the marker's actions are spent on a stop, a loss, the return from one, or
 * a continued run's launch).
 */
export const ROUTINE_CLEARS_INSTANCE_STATUS = 'routine-clears-instance-status';

/**
 * Issue 26: a one-step teardown's activity (ONE_STEP_TEARDOWN) also removes
 * the machine once it has seen every instance terminated, so the model's
 * removal no longer waits on a workflow task after that wait: at N=1,000 a
 * poll round answers hundreds of machines at once, their tasks queued 4-13 s
 * for the worker, and with two workers the server lost some on their way
 * to a worker, each taken up only by the 60 s task timeout (a 109 s destroy).
 *
 * Not asked with `patched()` (its marker and upsert would cost two actions
 * where the change saves one, the removal's local activity): the workflow
 * asks the activity to remove (`remove` in its input, which replay does not
 * compare) and takes the change from the activity's answer, which carries
 * `removed` only where the activity removed the machine. Histories recorded
 * before the change hold no `removed` and replay on the old path (the
 * removal's local activity after the answer); an activity of older code
 * ignores `remove`, and its workflow then removes the machine as before.
 * This id names the change in code and notes; it is never recorded.
 */
export const REMOVED_IN_TEARDOWN = 'removed-in-teardown';

/**
 * Issue 26: the launch that follows a `machine` run's first read (which
 * planned and claimed: LEAN_LAUNCH) is a local activity in the same
 * workflow task (proxies.ts LOCAL_LAUNCH_OPTIONS): a machine's launch takes
 * one workflow task and three actions (start, the task's local activities,
 * one upsert) instead of two and four, and no activity task. The Temporal
 * server spent ~8 ms less per machine for it (bench/sdk-floor.ts), and the
 * launches of a burst reach the batcher together, in larger batches.
 *
 * Not asked with `patched()` (its marker and upsert would cost two actions
 * where the change saves one): taken from the first read's answer, which
 * carries `launchInTask` only from code that knows the change. Histories
 * recorded before hold none and replay with the launch as an activity.
 *
 * A workflow task that is lost (its worker died, or it timed out) takes its
 * local activities' answers with it: what the history does not hold is run
 * again (read, claim and launch; only the launch after a task heartbeat
 * recorded the read). The launch must then be the same one (same token
 * seed: same batch, same reservation), so a zone claim records the run and
 * attempt that made it (`claimedBy`), and a first read or claim step of that
 * run, run again for the same attempt, keeps that zone instead of claiming
 * again (records.ts `zoneHeldByThisRun`, state/zone-claim.ts `heldZone`), whether
 * the lost launch went out, is still waiting in its batch, or never began.
 */
export const LAUNCH_IN_TASK = 'launch-in-task';

/**
 * Issue 26: the first read that plans and claims (LEAN_LAUNCH) also makes
 * the launch LAUNCH_IN_TASK ran as a second local activity: the workflow
 * tells it the pass and attempt (records.ts loadMachine `launch`), the
 * activity makes the token seed the workflow would (its run from its
 * context: temporal/launch-token.ts) and answers the instance with its plan
 * and claim (`prepared.launched`, recorded on the machine as LEAN_LAUNCH's
 * launches are). One local activity in the first workflow task instead of
 * two: one sandbox activation and core round trip less per machine
 * (bench/sdk-floor.ts `floorOneLocal`: 1.2-1.8 ms of worker CPU).
 *
 * Not asked with `patched()`, as LAUNCH_IN_TASK was not: the SDK matches a
 * local activity's marker by its sequence number, id and type, never its
 * input (the core's local_activity_state_machine.rs
 * `verify_marker_data_matches`, @temporalio 1.24), so the read's grown input
 * replays against every history; the change is taken from the read's
 * answer, which carries `launched` only from code that knows it. Histories
 * recorded before (no `launched`) replay with the launch as the local
 * activity (or the activity) they ran. A worker of older code cannot replay a
 * history that holds one local activity where it would schedule two: deploy
 * this as LEAN_LAUNCH (no overlap of old and new workers, no rollback).
 *
 * A failure of the launch the launch step would not retry (a non-retryable
 * type) is answered as data (`launchFailure`) and goes through the same
 * decision as that step's thrown failure (failover.ts afterLaunchFailure):
 * next zone, error, an attempt spent. Any other failure answers without
 * `launched`, and the workflow runs the launch step as LAUNCH_IN_TASK did,
 * with the same token seed: the batch marks and EC2's idempotency find an
 * instance the failed try may have launched (one more RunInstances, with the
 * batch's token, on that failure path only).
 *
 * A destroy cancels the step and waits for its answer
 * (proxies.ts localPreparing, WAIT_CANCELLATION_COMPLETED; on the replay
 * path the SDK's core treats it as the TRY_CANCEL histories were recorded
 * with): the step answers the cancellation at once while it reads, plans or
 * claims; a launch waiting in its batch is left out of it; a launch whose
 * batch went out is answered, and the workflow keeps that answer (machine.ts
 * loadPrepared): the pass records the instance first, sees the machine
 * Dead, and the teardown terminates it. This id names the change in code and
 * notes; it is never recorded.
 */
export const LAUNCH_IN_READ = 'launch-in-read';

/**
 * Issue 26: the launch a machine's first read makes (LAUNCH_IN_READ) holds the
 * run's first workflow task while it waits for its batch, the RunInstances
 * turn and EC2's answer; the SDK's core keeps the task alive with a heartbeat
 * at 80 % of its 20 s timeout, sent from the worker's one activation poll, and
 * when a task holds its launch that long and the heartbeat comes late, the
 * server times the task out, a 20 s stall and the task run again. Seen in an
 * earlier session with eager start: first tasks held 18.0-20.7 s. (Session
 * 18's starved bench of main, 1,004 workflow tasks timed out, 215.6 s for
 * 1,000 machines at about 14 % of a core, was another cause: first tasks not
 * begun in time, not held; the budget does not help there.) So the read's
 * launch has a budget (activities/launch.ts FIRST_TASK_LAUNCH_BUDGET_MS, 12 s
 * from when the workflow scheduled the read; PROVISIONER_FIRST_LAUNCH_BUDGET):
 * a launch
 * whose batch has not been dispatched by then (still gathering, or waiting at
 * the gate) is withdrawn from it as a cancelled try is, and the read answers
 * its plan and claim without `launched` and with `launchInTask: false`. A
 * batch already
 * dispatched (being marked, committed or sent) is waited for, the try one of
 * its members: its answer comes only once the call is made whatever the try
 * does, so leaving the try out then would gain nothing. The budget does not
 * bound that wait, nor a retried read's `recover`.
 *
 * Not asked with `patched()`, and no workflow code changed: the decision is
 * the recorded local activity's answer, which the workflow already branches
 * on (launch.ts runPass): no `launched`, no `launchFailure`, and a
 * `launchInTask` that is not `true` runs the launch as the activity
 * (`launching.startInstance`, LAUNCH_OPTIONS: heartbeating, a 60 s heartbeat
 * timeout) with the token seed the read used (its run, pass 1, attempt 1, the
 * zone), scheduled by the first task, which then completes. Code from before
 * this change, given such an answer (replaying it, or a worker of it taking
 * the run over), schedules that same activity, so histories either way
 * replay on either code.
 *
 * The activity, on that path, is the one a failed in-read launch left to the
 * workflow: same seed, so whatever the attempt left is found. A try withdrawn
 * by its budget marked nothing; a read run again (its first task lost) may
 * give up waiting for the batch the lost read's try joined: the machine's
 * marker names that batch, the activity's mark is refused for it, and the
 * activity waits for it to be written (sent: its instance; abandoned, or not
 * written within HELD_BATCH_WAIT_MS: settled and replaced) and launches one
 * instance. The read itself recovers nothing when its budget withdrew it:
 * nothing of its try went out, and the activity looks anyway. A destroy
 * meanwhile is the activity's cancellation, not the budget, and keeps
 * LAUNCH_IN_READ's behaviour. This id names the change in code and notes; it
 * is never recorded.
 */
export const LAUNCH_OUT_OF_TASK = 'launch-out-of-task';
