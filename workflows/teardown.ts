import {
  ActivityFailure,
  isCancellation,
  log,
  patched,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeadMachineSnapshot } from '../activities/types';
import { harvestsDestroyed } from '../core/harvest';
import { publish, type MachineContext } from './context';
import { FAILURE } from '../temporal/failures';
import { goDuration, stepFailedMessage, teardownStatusMessage } from '../temporal/messages';
import { startAfresh } from './carry';
import {
  BATCHED_LAUNCHES,
  BOUNDED_TEARDOWN,
  ONE_STEP_TEARDOWN,
  OVERLAPPED_TEARDOWN,
  QUIET_BLOCKED_TEARDOWN,
  uses,
} from './patches';
import {
  failureMessage,
  failureType,
  localRecords,
  records,
  tearing,
  tearingAtOnce,
} from './proxies';
import { duration } from './summaries';
import { metrics } from './metrics';

/** Polls (about 5 minutes at 5 s) before an instance that will not terminate is reported. */
const PATIENT_POLLS = 60;

/**
 * Events a blocked teardown's run may hold before it continues as new (and
 * starts its teardown again from the machine as recorded). A blocked step
 * adds about 8 events a try, so a run lasts hours, and a teardown blocked
 * for weeks never comes near Temporal's history limits.
 * `PROVISIONER_BLOCKED_HISTORY` sets it (tests make it small).
 */
export const BLOCKED_HISTORY_EVENTS = 2_000;

/** A blocked teardown whose history grew long goes on in a new run (QUIET_BLOCKED_TEARDOWN). */
async function afreshIfLong(ctx: MachineContext): Promise<void> {
  const info = workflowInfo();
  const limit = ctx.tuning.blockedHistoryEvents ?? BLOCKED_HISTORY_EVENTS;
  if (info.historyLength <= limit && !info.continueAsNewSuggested) return;
  if (!patched(QUIET_BLOCKED_TEARDOWN)) return;
  log.info('teardown still blocked: continuing as new', {
    model: ctx.model,
    machineId: ctx.machineId,
    events: info.historyLength,
  });
  await startAfresh(ctx, { retryRequested: false, destroyRequested: false });
}

/**
 * A status message on the way: teardown goes on without it when it cannot
 * be written (it is a note to a person; the steps are what matter). Whether
 * it was written.
 */
async function note(ctx: MachineContext, message: string): Promise<boolean> {
  try {
    await records.recordStatus({
      model: ctx.model,
      machineId: ctx.machineId,
      status: 'stopping',
      message,
    });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    if (failureType(err) === FAILURE.machineGone) return false;
    log.warn('cannot write the teardown status', {
      model: ctx.model,
      machineId: ctx.machineId,
      error: failureMessage(err),
    });
    return false;
  }
  return true;
}

/**
 * Says what blocks the teardown. With QUIET_BLOCKED_TEARDOWN, each block only
 * once since this run (or the run it continues) said it, or since a status
 * written after it (forgetBlocks): `key` names the block (the step and EC2's
 * code), since EC2's words may differ at every try (AWS encodes a new
 * authorization message into each refusal). Every block said is remembered,
 * not only the last: the overlapped teardown's steps may be blocked at the
 * same time (a role without EC2's permissions blocks the tag search and the
 * termination), and two alternating keys would each be said again at every
 * try, for ever. In the sequential teardown a step never follows a later
 * one within a run, so the set says what the one key said.
 */
async function sayBlocked(ctx: MachineContext, key: string, message: string): Promise<void> {
  const quiet = patched(QUIET_BLOCKED_TEARDOWN);
  if (quiet && (ctx.blockedNote === key || ctx.blockedNotes?.includes(key))) return;
  log.warn('teardown blocked', { model: ctx.model, machineId: ctx.machineId, error: message });
  metrics.teardownBlocked();
  if ((await note(ctx, message)) && quiet) {
    ctx.blockedNote = key;
    ctx.blockedNotes = [...new Set([...(ctx.blockedNotes ?? []), key])];
  }
}

/** The status no longer says what blocked the teardown: a block found again is said again. */
function forgetBlocks(ctx: MachineContext): void {
  ctx.blockedNote = undefined;
  ctx.blockedNotes = undefined;
}

/**
 * How often a blocked teardown tries again: six retry delays (a minute at
 * the default 10 s), at least a second, at most a minute. Slow, since only
 * a person fixes what blocks it; soon enough that the fix is taken up.
 */
export function blockedRetryMs(retryDelayMs: number): number {
  return Math.min(60_000, Math.max(1_000, 6 * retryDelayMs));
}

/**
 * Runs one teardown step until it succeeds. A step that fails for good
 * (EC2 refused: termination protection, permissions) or ran out of its
 * retries puts what blocks it in the machine's status message and is tried
 * again every `blockedRetryMs`, so fixing the cause lets teardown finish.
 */
async function untilDone<T>(
  ctx: MachineContext,
  what: string,
  step: () => Promise<T>,
  /** A status write started before this step, which what blocks the step must come after. */
  after?: Promise<unknown> | (() => Promise<unknown>),
): Promise<T> {
  const { state } = ctx;
  const waitMs = blockedRetryMs(ctx.tuning.retryDelayMs);
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof ActivityFailure) || failureType(err) === FAILURE.machineGone) throw err;
      // a typed failure is the activity's own words; an untyped one names the step and its causes
      const cause = failureType(err) ? failureMessage(err) : stepFailedMessage(err);
      const message = `cannot ${what}: ${cause} (trying again every ${goDuration(waitMs)})`;
      state.lastError = message;
      // the status says what blocks it (a status that cannot be written is no reason to stop)
      await (typeof after === 'function' ? after() : after);
      await sayBlocked(ctx, `${what}|${cause.split(':')[0]}`, message);
      await sleep(waitMs, { summary: `blocked: ${what}; trying again in ${duration(waitMs)}` });
      if (patched(QUIET_BLOCKED_TEARDOWN)) await afreshIfLong(ctx);
    }
  }
}

/**
 * A Dead machine (DESIGN.md "Provisioning", step 5): status `stopping`;
 * terminate its instance — the recorded one, any launched in this run and
 * not yet recorded, and any other tagged for it — when the harvest mode
 * allows; wait until EC2 reports them terminated; remove the machine (and
 * its model, if dying and now empty).
 */
export async function tearDown(ctx: MachineContext, machine: DeadMachineSnapshot): Promise<void> {
  // a run that took over a blocked teardown or its patient polling goes on the way it began
  if (!ctx.resumedTeardown && !ctx.patientPolls) {
    // a run begun before ONE_STEP_TEARDOWN has no marker of it, and replays as it ran
    if (patched(ONE_STEP_TEARDOWN)) {
      if (await tearDownInOneStep(ctx, machine)) return;
      return tearDownTogether(ctx, machine);
    }
    if (patched(OVERLAPPED_TEARDOWN)) return tearDownTogether(ctx, machine);
  }
  const { model, machineId, state } = ctx;
  state.phase = 'stopping';
  publish(ctx, { status: 'stopping' });
  // leaving: it no longer counts in its zone (removal would do it too, later); a new step, so patched
  if (uses(ctx, BATCHED_LAUNCHES)) {
    await untilDone(ctx, 'release its zone', () => records.releaseZone({ model, machineId })).catch(
      (err: unknown) => {
        if (failureType(err) !== FAILURE.machineGone) throw err;
      },
    );
  }
  const launchable = !machine.manual && !machine.container;
  const terminate = launchable && harvestsDestroyed(machine.harvestMode);
  let instanceIds = [
    ...new Set([...(machine.instanceId ? [machine.instanceId] : []), ...ctx.launched]),
  ];
  if (terminate) {
    const tagged = await untilDone(ctx, 'list the instances tagged for it', () =>
      tearing.instancesTaggedFor({
        model,
        machineId,
        region: machine.region,
        ...(machine.modelUid ? { modelUid: machine.modelUid } : {}),
      }),
    );
    instanceIds = [...new Set([...instanceIds, ...tagged])];
  }
  const message =
    instanceIds.length === 0
      ? ''
      : terminate
        ? `terminating instance ${instanceIds.join(', ')}`
        : `keeping instance ${instanceIds.join(', ')} (harvest mode "${machine.harvestMode}")`;
  // a run that took over a blocked teardown leaves the status saying what blocks it, until
  // the block clears
  if (!ctx.resumedTeardown) await note(ctx, message);
  if (terminate && instanceIds.length > 0) {
    log.info('terminating', { model, machineId, instanceId: instanceIds.join(',') });
    // summaries (UI metadata on the same commands) read as sentences in the history
    await untilDone(ctx, `terminate instance ${instanceIds.join(', ')}`, () =>
      tearing.terminateInstances.executeWithOptions(
        { summary: `terminating ${instanceIds.join(', ')}` },
        [{ region: machine.region, instanceIds, fresh: ctx.launched }],
      ),
    );
    if (ctx.resumedTeardown && !ctx.patientPolls) {
      // terminated now: the status says so instead of what blocked it
      await note(ctx, message);
      forgetBlocks(ctx);
    }
    // a run that took over patient polling goes on looking as slowly
    for (let poll = ctx.patientPolls ? PATIENT_POLLS + 1 : 0; ; poll++) {
      const remaining = await untilDone(ctx, 'check that its instance terminated', () =>
        tearing.instancesNotTerminated({ region: machine.region, instanceIds }),
      );
      if (remaining.length === 0) break;
      let waitMs = Math.min(1000 * 2 ** poll, 5000);
      if (poll >= PATIENT_POLLS && patched(BOUNDED_TEARDOWN)) {
        // still not terminated after minutes: say so, and look less often
        waitMs = blockedRetryMs(ctx.tuning.retryDelayMs);
        if (poll === PATIENT_POLLS) {
          const message = `instance ${remaining.join(', ')} is not terminated yet (asked ${duration(
            PATIENT_POLLS * 5000,
          )} ago); checking every ${goDuration(waitMs)}`;
          state.lastError = message;
          await note(ctx, message);
          ctx.patientPolls = true;
        }
      }
      await sleep(waitMs, {
        summary: `waiting ${duration(waitMs)} for ${remaining.join(', ')} to terminate`,
      });
      if (poll > PATIENT_POLLS) await afreshIfLong(ctx);
    }
  }
  ctx.launched = [];
  const { modelRemoved } = await untilDone(ctx, 'remove the machine', () =>
    records.removeMachine({ model, machineId }),
  );
  state.phase = 'removed';
  state.instanceId = undefined;
  log.info('machine removed', { model, machineId, modelRemoved });
}

/**
 * How long one activity waits for EC2 to report the instances terminated
 * before the workflow looks again (OVERLAPPED_TEARDOWN): EC2 takes seconds
 * to a minute; a few of these make the patience of PATIENT_POLLS.
 */
const TERMINATED_WAIT_MS = 60_000;
/** Waits of TERMINATED_WAIT_MS before a teardown says its instance will not terminate (~5 minutes). */
const PATIENT_WAITS = 5;

/**
 * tearDown's steps overlapped (OVERLAPPED_TEARDOWN; issue 30: a 1,000-machine
 * model was bound by its machines' workflow tasks, about 9 each, every one
 * waiting seconds in Temporal's queue). The signal's workflow task starts
 * them all: the zone's release, the status, the tag search, and the
 * termination of the instances the machine knows (recorded, or launched by
 * this run), which then waits for EC2's `terminated` in the same activity.
 * Instances only the tag search found are terminated as soon as it answers;
 * the machine is removed by a local activity in the workflow task that sees
 * the last of them terminated (an activity in availability-set mode, whose
 * removal may wait for EC2 to delete a placement group). The first writes stay activities: as local
 * activities, a thousand machines' writes queued on DynamoDB held the
 * worker's workflow-task slots (tasks of 3 s at the median, 25 s at worst,
 * some timed out at a minute: measured at N=300). The guarantees are tearDown's: every instance
 * recorded, launched or tagged for the machine is terminated and seen
 * terminated before the machine is removed; a just-launched id EC2 does not
 * list yet is retried by the terminating activity; each step is retried
 * until done, saying what blocks it.
 */
async function tearDownTogether(ctx: MachineContext, machine: DeadMachineSnapshot): Promise<void> {
  const { model, machineId, state } = ctx;
  const region = machine.region;
  state.phase = 'stopping';
  publish(ctx, { status: 'stopping' });
  const launchable = !machine.manual && !machine.container;
  const terminate = launchable && harvestsDestroyed(machine.harvestMode);
  const known = [
    ...new Set([...(machine.instanceId ? [machine.instanceId] : []), ...ctx.launched]),
  ];
  const fresh = [...ctx.launched];
  const say = (ids: string[]): string => teardownStatusMessage(ids, terminate, machine.harvestMode);
  /**
   * Terminates `ids`, while `noted` writes the status that says so; those
   * EC2 does not report terminated after TERMINATED_WAIT_MS.
   */
  const terminating = (ids: string[], noted: Promise<unknown>): Promise<string[]> => {
    log.info('terminating', { model, machineId, instanceId: ids.join(',') });
    return untilDone(
      ctx,
      `terminate instance ${ids.join(', ')}`,
      () =>
        tearing.terminateInstances.executeWithOptions(
          { summary: `terminating ${ids.join(', ')}` },
          [{ region, instanceIds: ids, fresh, waitMs: TERMINATED_WAIT_MS }],
        ),
      noted,
    );
  };
  // the status, started after the release and the search (the first task's commands keep their
  // order) but written before what blocks either: a block said before it would be overwritten
  const first: { noted?: Promise<boolean> } = {};
  const afterNoted = (): Promise<unknown> => first.noted ?? Promise.resolve();
  // leaving: it no longer counts in its zone
  const released = untilDone(
    ctx,
    'release its zone',
    () => records.releaseZone({ model, machineId }),
    afterNoted,
  ).catch((err: unknown) => {
    if (failureType(err) !== FAILURE.machineGone) throw err;
  });
  const tagged = terminate
    ? untilDone(
        ctx,
        'list the instances tagged for it',
        () =>
          tearing.instancesTaggedFor({
            model,
            machineId,
            region,
            ...(machine.modelUid ? { modelUid: machine.modelUid } : {}),
          }),
        afterNoted,
      )
    : Promise.resolve<string[]>([]);
  // the status and the termination together: a block found is written after the status
  const noted = note(ctx, say(known));
  first.noted = noted;
  const knownLeft = terminate && known.length > 0 ? terminating(known, noted) : [];
  // what only the tag search found is terminated as soon as it answers, not after the known
  // instances' wait for terminated (up to TERMINATED_WAIT_MS); its status after the first one
  const foundLeft = tagged.then(async (ids): Promise<string[]> => {
    const found = ids.filter((id) => !known.includes(id));
    if (found.length === 0) return [];
    // this status replaces what a block of the known instances said: said again if still blocked
    const noting = noted.then(async () => {
      const written = await note(ctx, say([...known, ...found]));
      forgetBlocks(ctx);
      return written;
    });
    const [, more] = await Promise.all([noting, terminating(found, noting)]);
    return more;
  });
  const [, , left, more] = await Promise.all([released, noted, knownLeft, foundLeft]);
  await untilTerminated(ctx, region, [...left, ...more]);
  await removeTornDown(ctx, machine);
}

/**
 * tearDown in one activity (ONE_STEP_TEARDOWN; activities/teardown.ts
 * `tearDownMachine`): the zone's release, the status, the tag search, every
 * termination and the wait for terminated, and the machine's removal
 * (REMOVED_IN_TEARDOWN); the removal is the workflow's, in the workflow
 * task that hears the activity answer, when the activity did not remove it
 * (an instance not terminated yet, an availability-set machine, a failed
 * removal, a run recorded before REMOVED_IN_TEARDOWN). Two workflow tasks
 * and one activity a machine where tearDownTogether took three to five and
 * four: at N=300 on a busy worker, its machines' tasks waited ~49 s in all in
 * Temporal's queue (bench teardown phases). False when the activity failed after its few tries:
 * tearDownTogether then does it step by step (every step idempotent), saying
 * what blocks each, with the guarantees it keeps.
 */
async function tearDownInOneStep(
  ctx: MachineContext,
  machine: DeadMachineSnapshot,
): Promise<boolean> {
  const { model, machineId, state } = ctx;
  const region = machine.region;
  state.phase = 'stopping';
  publish(ctx, { status: 'stopping' });
  const launchable = !machine.manual && !machine.container;
  const terminate = launchable && harvestsDestroyed(machine.harvestMode);
  const known = [
    ...new Set([...(machine.instanceId ? [machine.instanceId] : []), ...ctx.launched]),
  ];
  let remaining: string[];
  try {
    const done = await tearingAtOnce.tearDownMachine.executeWithOptions(
      {
        summary: teardownStatusMessage(known, terminate, machine.harvestMode) || 'tearing down',
      },
      [
        {
          model,
          machineId,
          region,
          ...(machine.modelUid ? { modelUid: machine.modelUid } : {}),
          known,
          fresh: [...ctx.launched],
          terminate,
          harvestMode: machine.harvestMode,
          waitMs: TERMINATED_WAIT_MS,
          // REMOVED_IN_TEARDOWN: removed by the activity that sees its instances terminated;
          // in availability-set mode the removal may wait on EC2 for its placement group
          ...(machine.availabilitySets === true ? {} : { remove: true }),
        },
      ],
    );
    remaining = done.remaining;
    // the activity's answer says it removed the machine (never in a history before
    // REMOVED_IN_TEARDOWN, whose runs go on below to remove it as they did)
    if (done.removed) {
      ctx.launched = [];
      state.phase = 'removed';
      state.instanceId = undefined;
      log.info('machine removed', { model, machineId, modelRemoved: done.removed.modelRemoved });
      return true;
    }
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    log.warn('teardown in one step failed; going step by step', {
      model,
      machineId,
      error: failureMessage(err),
    });
    return false;
  }
  await untilTerminated(ctx, region, remaining);
  await removeTornDown(ctx, machine);
  return true;
}

/**
 * Waits until EC2 reports `remaining` terminated: TERMINATED_WAIT_MS an
 * activity, then, past PATIENT_WAITS of them, says so once and looks less
 * often (continuing as new when its history grows long).
 */
async function untilTerminated(
  ctx: MachineContext,
  region: string,
  remaining: string[],
): Promise<void> {
  const { state } = ctx;
  for (let wait = 1; remaining.length > 0; wait++) {
    const ids = remaining;
    if (wait >= PATIENT_WAITS) {
      // still not terminated after minutes: say so once, and look less often
      const waitMs = blockedRetryMs(ctx.tuning.retryDelayMs);
      if (wait === PATIENT_WAITS) {
        const message = `instance ${ids.join(', ')} is not terminated yet (asked ${duration(
          PATIENT_WAITS * TERMINATED_WAIT_MS,
        )} ago); checking every ${goDuration(waitMs)}`;
        state.lastError = message;
        await note(ctx, message);
        forgetBlocks(ctx);
        ctx.patientPolls = true;
      }
      await sleep(waitMs, {
        summary: `waiting ${duration(waitMs)} for ${ids.join(', ')} to terminate`,
      });
    }
    remaining = await untilDone(ctx, 'check that its instance terminated', () =>
      tearing.instancesNotTerminated({
        region,
        instanceIds: ids,
        ...(wait < PATIENT_WAITS ? { waitMs: TERMINATED_WAIT_MS } : {}),
      }),
    );
    if (wait > PATIENT_WAITS) await afreshIfLong(ctx);
  }
}

/** The machine's instances are terminated: it is removed (and its model, if dying and empty). */
async function removeTornDown(ctx: MachineContext, machine: DeadMachineSnapshot): Promise<void> {
  const { model, machineId, state } = ctx;
  ctx.launched = [];
  // a local activity, in this workflow task; but in availability-set mode the removal may
  // delete the placement group, waiting seconds for EC2 (records.ts deleteGroupIfEmpty), which
  // would hold the worker's workflow-task slot: an activity of its own there
  const removal = machine.availabilitySets === true ? records : localRecords;
  const { modelRemoved } = await untilDone(ctx, 'remove the machine', () =>
    removal.removeMachine({ model, machineId }),
  );
  state.phase = 'removed';
  state.instanceId = undefined;
  log.info('machine removed', { model, machineId, modelRemoved });
}
