import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { LaunchPlan, StartedInstance, StepFailure } from '../activities/types';
import { publish, type MachineContext } from './context';
import { startAfresh } from './carry';
import { afterClaimFailure, afterLaunchFailure } from './failover';
import {
  BATCHED_LAUNCHES,
  BOUNDED_FAILING_HISTORY,
  DESTROY_CANCELS_PLANNING,
  INSTANCE_LIVENESS,
  NO_ORPHAN_ON_ERROR,
  QUIET_FAILOVER,
  ROUTINE_CLEARS_INSTANCE_STATUS,
  uses,
} from './patches';
import { FAILURE } from '../temporal/failures';
import { launchTokenSeed } from '../temporal/launch-token';
import {
  attemptFailedMessage,
  recordFailedMessage,
  recordFailedUnterminatedMessage,
  unterminatedMessage,
  stepFailedMessage,
  startingMessage,
  zoneFailoverMessage,
} from '../temporal/messages';
import {
  ec2,
  failureMessage,
  failureType,
  LAUNCH_OPTIONS,
  launching,
  LOCAL_LAUNCH_OPTIONS,
  localLaunching,
  localPlanning,
  localRecording,
  localRecords,
  planning,
  records,
  recording,
  tearing,
} from './proxies';

/**
 * How a provisioning pass ended. `recheck`: the machine went Dead or was
 * removed meanwhile (the caller re-reads it and tears down what was launched).
 */
export type ProvisionOutcome = 'running' | 'error' | 'recheck';

class MachineGoneSignal extends Error {}

/** Runs an activity; "the machine is gone or Dead" becomes MachineGoneSignal for the pass to stop on. */
async function orStop<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (failureType(err) === FAILURE.machineGone) throw new MachineGoneSignal();
    throw err;
  }
}

/**
 * One provisioning pass (DESIGN.md "Provisioning", steps 1–4): plan, then up
 * to `startAttempts` attempts, each trying the zones least to most populous
 * within the machine's group. A zone-specific failure gives up that zone's
 * claim and tries the next at once, without spending an attempt; when every
 * zone failed, or on a zone-independent error, the attempt is spent and the
 * workflow waits `retryDelay`. The final failure is recorded as `error`.
 */
export async function provision(ctx: MachineContext): Promise<ProvisionOutcome> {
  try {
    // instances an earlier pass launched and could not terminate: tried again first, and
    // while EC2 still refuses, the machine stays in error saying so (nothing more launched)
    if (ctx.launched.length > 0 && ctx.region && patched(NO_ORPHAN_ON_ERROR)) {
      const kept = [...ctx.launched];
      const outcome = await terminateUnrecorded(ctx);
      if (ctx.launched.length > 0) {
        return await recordFailure(ctx, unterminatedMessage(kept, outcome.cause!));
      }
    }
    return await runPass(ctx);
  } catch (err) {
    if (err instanceof MachineGoneSignal) return 'recheck';
    // A step out of its retries (proxies.ts STEP_DEADLINE) or refused for good:
    // the machine says so in `error` instead of the workflow failing unseen.
    if (!(err instanceof ActivityFailure)) throw err;
    let message = stepFailedMessage(err);
    if (ctx.launched.length > 0 && ctx.region && patched(NO_ORPHAN_ON_ERROR)) {
      // `error` has no instance (API.md): one launched and not recorded is terminated first
      if (isCancellation(err)) throw err;
      message += `; ${(await terminateUnrecorded(ctx)).note}`;
    }
    try {
      return await recordFailure(ctx, message);
    } catch (again) {
      if (again instanceof MachineGoneSignal) return 'recheck';
      throw again;
    }
  }
}

/**
 * Terminates the instances this run launched and did not record (a step
 * failed between the launch and the record). Answers what became of them, for
 * the machine's message (and EC2's refusal); those EC2 would not terminate
 * stay in `ctx.launched`, tried again by the next pass and by teardown.
 */
async function terminateUnrecorded(ctx: MachineContext): Promise<{ note: string; cause?: string }> {
  const instanceIds = [...ctx.launched];
  try {
    await tearing.terminateInstances({ region: ctx.region!, instanceIds, fresh: instanceIds });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.error('cannot terminate an instance launched and not recorded', {
      model: ctx.model,
      machineId: ctx.machineId,
      instanceId: instanceIds.join(','),
      error: failureMessage(err),
    });
    return {
      note: unterminatedMessage(instanceIds, failureMessage(err)),
      cause: failureMessage(err),
    };
  }
  ctx.launched = ctx.launched.filter((id) => !instanceIds.includes(id));
  if (ctx.state.instanceId && instanceIds.includes(ctx.state.instanceId)) {
    ctx.state.instanceId = undefined;
  }
  log.warn('terminated an instance launched and not recorded', {
    model: ctx.model,
    machineId: ctx.machineId,
    instanceId: instanceIds.join(','),
  });
  return { note: `instance ${instanceIds.join(', ')} launched for it was terminated` };
}

/**
 * Events a run may hold, between two attempts of a failing pass, before it
 * continues as new (BOUNDED_FAILING_HISTORY) carrying the attempt it goes on
 * with. An attempt adds about 11 events per zone it tries, at most 12 (a
 * zone claim, a RunInstances activity and its workflow tasks, the failover's
 * status; measured: runs of 108 events for 3 attempts of 3 zones, README), so
 * a run holds at most this many plus one attempt's.
 */
export const FAILING_HISTORY_EVENTS = 100;

async function runPass(ctx: MachineContext): Promise<ProvisionOutcome> {
  const { model, machineId, state, tuning, signals } = ctx;
  // a pass the previous run cut short between attempts goes on where it was
  const resumeAt = ctx.resumeAttempt;
  ctx.resumeAttempt = undefined;
  let lastError = (resumeAt !== undefined ? state.lastError : undefined) ?? 'provisioning failed';
  if (resumeAt === undefined) state.pass += 1;
  state.attempt = 0;
  state.failedZones = [];
  state.lastError = undefined;
  state.instanceId = undefined;
  state.instanceStatus = undefined;
  state.zone = undefined;
  state.instanceType = undefined;
  state.phase = 'planning';
  // an explicit retry looks at every zone afresh, whatever capacity failures were remembered
  const ignoreCapacityMemory = ctx.retrying === true;
  // a launch of an earlier pass that never answered: this pass's first launch looks for it
  let mayHaveLaunched = state.mayHaveLaunched === true;
  const batched = uses(ctx, BATCHED_LAUNCHES);
  const quick = ctx.local ? localRecords : records;

  // the first read planned and claimed for this pass (LEAN_LAUNCH): its plan, and its zone
  // for the first try of attempt 1
  const prepared = resumeAt === undefined ? ctx.prepared : undefined;
  ctx.prepared = undefined;
  let preparedClaim = prepared?.plan !== undefined ? prepared : undefined;

  let plan: LaunchPlan;
  try {
    plan =
      prepared?.plan ??
      (prepared?.planFailure
        ? fromPrepared(prepared.planFailure)
        : await orStop(planUnlessDestroyed(ctx)));
  } catch (err) {
    const type = failureType(err);
    if (type === FAILURE.planFailed || type === FAILURE.ec2Refused) {
      return recordFailure(ctx, failureMessage(err));
    }
    throw err;
  }
  state.instanceType = plan.instanceType;
  ctx.region = plan.region;

  for (let attempt = resumeAt ?? 1; attempt <= tuning.startAttempts; attempt++) {
    state.attempt = attempt;
    state.failedZones = [];
    for (;;) {
      // a launch the first read made (LAUNCH_IN_READ) is recorded first: a Dead machine's
      // teardown then terminates it
      if (signals.destroy && preparedClaim?.launched === undefined) await stopIfDead(ctx);
      state.phase = 'starting';
      let zone: string;
      const claimed = preparedClaim;
      preparedClaim = undefined;
      try {
        zone = claimed
          ? (claimed.zone ?? fromPrepared(claimed.claimFailure))
          : await orStop(
              quick.claimZone({
                model,
                machineId,
                plan,
                exclude: state.failedZones,
                ...(batched
                  ? { attempt, maxAttempts: tuning.startAttempts, ignoreCapacityMemory }
                  : {}),
              }),
            );
      } catch (err) {
        const decision = afterClaimFailure(
          failureType(err),
          failureMessage(err),
          state.failedZones,
          lastError,
        );
        if (decision.kind === 'error') return recordFailure(ctx, failureMessage(err));
        if (decision.kind === 'rethrow') throw err;
        lastError = decision.lastError;
        break;
      }
      state.zone = zone;
      // a failover's zone is not published (an upsert, a history event and an action per zone
      // tried): the zone the machine lands in is published with its launch (QUIET_FAILOVER)
      const quietFailover = state.failedZones.length > 0 && patched(QUIET_FAILOVER);
      // a claim made with the first read is published with the launch (one upsert for both)
      if (!claimed) {
        publish(ctx, quietFailover ? { status: 'allocating' } : { status: 'allocating', zone });
      }
      if (!batched) {
        await orStop(
          quick.recordStatus({
            model,
            machineId,
            status: 'allocating',
            message: startingMessage(zone, attempt, tuning.startAttempts),
          }),
        );
      }
      let started: StartedInstance;
      try {
        const input = {
          model,
          machineId,
          zone,
          plan,
          // one token per machine, pass, attempt and zone: stable across worker restarts and replays
          tokenSeed: launchTokenSeed(workflowInfo(), state.pass, attempt, zone),
          ...(mayHaveLaunched ? { mayHaveLaunched } : {}),
          // the launch records the instance itself (LEAN_LAUNCH), only in a run whose own first
          // read answered `prepared`; its answer says whether it did
          ...(ctx.lean && ctx.recordsLaunch && batched ? { record: true } : {}),
        };
        // the launch that follows the first read's claim runs in the same workflow task when that
        // read said so (LAUNCH_IN_TASK): no activity task, no second workflow task
        const options = {
          summary: `RunInstances in ${zone}, attempt ${attempt} of ${tuning.startAttempts}`,
        };
        // the first read launched too (LAUNCH_IN_READ): its answer is the launch's, taken from
        // the history (no marker); a failure there the launch would not retry is thrown as its
        // own failure would be; without either (histories before, a failure it would retry),
        // the launch runs as below, with the same token seed
        if (claimed?.launchFailure) throw launchFailed(claimed.launchFailure);
        started = claimed?.launched
          ? claimed.launched
          : !batched
            ? await ec2.startInstance(input)
            : claimed?.launchInTask === true
              ? await localLaunching.startInstance.executeWithOptions(
                  { ...LOCAL_LAUNCH_OPTIONS, ...options },
                  [input],
                )
              : await launching.startInstance.executeWithOptions(
                  { ...LAUNCH_OPTIONS, ...options },
                  [input],
                );
        mayHaveLaunched = false;
        state.mayHaveLaunched = undefined;
      } catch (err) {
        const decision = afterLaunchFailure(failureType(err), batched);
        if (decision === 'stop') throw new MachineGoneSignal();
        if (decision === 'rethrow') throw err;
        if (decision === 'error') {
          state.zone = undefined;
          await orStop(quick.releaseZone({ model, machineId }));
          return recordFailure(ctx, failureMessage(err));
        }
        if (decision === 'spend-attempt-may-have-launched') {
          // the next launch looks first
          mayHaveLaunched = true;
          lastError = `launch did not complete: ${failureMessage(err)}`;
          state.lastError = lastError;
          log.warn('launch did not complete', {
            model,
            machineId,
            zone,
            attempt,
            error: lastError,
          });
          break;
        }
        lastError = failureMessage(err);
        state.lastError = lastError;
        if (decision === 'spend-attempt') {
          log.warn('zone-independent start failure', {
            model,
            machineId,
            zone,
            attempt,
            error: lastError,
          });
          break;
        }
        state.failedZones.push(zone);
        log.warn('zone unavailable, trying the next', {
          model,
          machineId,
          zone,
          attempt,
          error: lastError,
        });
        await orStop(
          quick.recordStatus({
            model,
            machineId,
            status: 'allocating',
            message: zoneFailoverMessage(machineId, zone, lastError),
          }),
        );
        continue;
      }
      return recordLaunch(ctx, plan, started);
    }

    // The attempt is spent: give up the claim, then wait (unless it was the last).
    state.lastError = lastError;
    state.zone = undefined;
    await orStop(quick.releaseZone({ model, machineId }));
    if (attempt === tuning.startAttempts) break;
    state.phase = 'waiting';
    await orStop(
      quick.recordStatus({
        model,
        machineId,
        status: 'allocating',
        message: attemptFailedMessage(
          machineId,
          lastError,
          tuning.retryDelayMs,
          tuning.startAttempts - attempt,
        ),
      }),
    );
    // a destroy cuts the wait short
    if (batched) {
      await waitUnlessDestroyed(
        ctx,
        tuning.retryDelayMs,
        `waiting ${Math.round(tuning.retryDelayMs / 1000)}s before attempt ${attempt + 1}`,
      );
    } else {
      await condition(() => signals.destroy, tuning.retryDelayMs);
    }
    // a long failing pass goes on in a new run (its history stays small): the next attempt there
    if (
      workflowInfo().historyLength > FAILING_HISTORY_EVENTS &&
      !signals.destroy &&
      !signals.retry &&
      signals.reprovision === undefined &&
      ctx.launched.length === 0 &&
      patched(BOUNDED_FAILING_HISTORY)
    ) {
      state.lastError = lastError;
      if (mayHaveLaunched) state.mayHaveLaunched = true;
      await startAfresh(
        ctx,
        { retryRequested: false, destroyRequested: false },
        { attempt: attempt + 1 },
      );
    }
  }
  // the last launch never answered: the next pass (a retry) looks for what it launched
  if (mayHaveLaunched) state.mayHaveLaunched = true;
  return recordFailure(ctx, lastError);
}

/**
 * Plans the launch; a destroy that arrives meanwhile cancels the planning
 * (it may page a region's whole catalogue, or wait out EC2's retries) and
 * stops the pass if the machine is Dead, instead of waiting behind it. No
 * launch has gone out yet, so nothing can be left behind. Runs begun before
 * this change replay as they ran: they waited for the plan.
 */
async function planUnlessDestroyed(ctx: MachineContext): Promise<LaunchPlan> {
  const { model, machineId, signals } = ctx;
  for (;;) {
    const scope = new CancellationScope();
    const planned = scope.run(() =>
      (ctx.local ? localPlanning : planning).planLaunch({ model, machineId }),
    );
    let settled = false;
    planned.then(
      () => (settled = true),
      () => (settled = true),
    );
    await condition(() => settled || signals.destroy);
    if (settled || !patched(DESTROY_CANCELS_PLANNING)) return planned;
    scope.cancel();
    await planned.catch(() => undefined);
    await stopIfDead(ctx); // Dead: the pass stops; alive (a stray signal): plan again
  }
}

/** Waits `ms` with a named timer (it reads as a sentence in the history), or until a destroy. */
async function waitUnlessDestroyed(
  ctx: MachineContext,
  ms: number,
  summary: string,
): Promise<void> {
  try {
    await CancellationScope.cancellable(async () => {
      await Promise.race([sleep(ms, { summary }), condition(() => ctx.signals.destroy)]);
      CancellationScope.current().cancel();
    });
  } catch (err) {
    if (!isCancellation(err)) throw err;
  }
}

/** Consumes a destroy signal: stops the pass if the machine is really Dead (or gone). */
async function stopIfDead(ctx: MachineContext): Promise<void> {
  ctx.signals.destroy = false;
  const machine = await (ctx.local ? localRecords : records).loadMachine({
    model: ctx.model,
    machineId: ctx.machineId,
  });
  if (!machine || machine.life === 'dead') throw new MachineGoneSignal();
}

async function recordLaunch(
  ctx: MachineContext,
  plan: LaunchPlan,
  started: StartedInstance,
): Promise<ProvisionOutcome> {
  const { model, machineId, state } = ctx;
  ctx.launched.push(started.instanceId);
  state.instanceId = started.instanceId;
  state.zone = started.zone;
  if (started.adopted) {
    log.info('adopted an instance already tagged for the machine', {
      model,
      machineId,
      instanceId: started.instanceId,
      zone: started.zone,
    });
  }
  let life;
  if (started.recorded !== undefined) {
    // recorded by the launch itself (LEAN_LAUNCH): a machine Dead meanwhile is torn down below
    life = started.recorded;
    return launchRecorded(ctx, started, life);
  }
  // Dead while the launch was in flight: stop the instance as soon as the launch returns.
  if (ctx.signals.destroy) await stopIfDead(ctx);

  try {
    life = await (ctx.local ? localRecording : recording).recordRunning({
      model,
      machineId,
      plan,
      started,
    });
  } catch (err) {
    // No orphan: an instance that cannot be recorded is terminated.
    log.error('cannot record the launched instance; terminating it', {
      model,
      machineId,
      instanceId: started.instanceId,
      error: failureMessage(err),
    });
    try {
      await tearing.terminateInstances({
        region: plan.region,
        instanceIds: [started.instanceId],
        fresh: [started.instanceId],
      });
    } catch (refused) {
      if (isCancellation(refused) || !patched(NO_ORPHAN_ON_ERROR)) throw refused;
      // kept in `launched`: the next pass, teardown or the removal terminates it
      state.instanceId = undefined;
      if (failureType(err) === FAILURE.machineGone) return 'recheck';
      return recordFailure(
        ctx,
        recordFailedUnterminatedMessage(
          machineId,
          started.instanceId,
          failureMessage(err),
          failureMessage(refused),
        ),
      );
    }
    ctx.launched = ctx.launched.filter((id) => id !== started.instanceId);
    state.instanceId = undefined;
    if (failureType(err) === FAILURE.machineGone) return 'recheck';
    return recordFailure(
      ctx,
      recordFailedMessage(machineId, started.instanceId, failureMessage(err)),
    );
  }
  return launchRecorded(ctx, started, life);
}

/** The launched instance is recorded on the machine, whose life the write answered. */
function launchRecorded(
  ctx: MachineContext,
  started: StartedInstance,
  life: string,
): ProvisionOutcome {
  const { model, machineId, state } = ctx;
  // Dead meanwhile: the instance stays in `launched`, so teardown treats it as
  // fresh (EC2 may not list it yet) and never skips terminating it.
  if (life === 'dead') return 'recheck';
  ctx.launched = ctx.launched.filter((id) => id !== started.instanceId);
  state.phase = 'running';
  state.lastError = undefined;
  if (ctx.recordsLaunch) {
    // recorded `pending` with the launch; routine news (→ running) is written by
    // whoever hears it and never reaches the workflow, so the search attribute
    // is left unset: it names only a state the workflow acted on (a loss, a stop);
    // one this run published (the lost instance a reprovision replaces) is cleared
    state.instanceStatus = 'pending';
    const told = ctx.published.instanceStatus != null && patched(ROUTINE_CLEARS_INSTANCE_STATUS);
    publish(ctx, {
      status: 'running',
      zone: started.zone,
      ...(told ? { instanceStatus: null } : {}),
    });
  } else if (uses(ctx, INSTANCE_LIVENESS)) {
    // recorded `pending` with the launch; routine news moves it on without the
    // workflow, so `pending` would stay on a running machine: cleared instead
    // (with what an earlier run published, carried by continue-as-new)
    state.instanceStatus = 'pending';
    const clears = patched(ROUTINE_CLEARS_INSTANCE_STATUS);
    publish(ctx, {
      status: 'running',
      zone: started.zone,
      instanceStatus: clears ? null : 'pending',
    });
  } else {
    publish(ctx, { status: 'running', zone: started.zone });
  }
  log.debug('machine running', {
    model,
    machineId,
    instanceId: started.instanceId,
    zone: started.zone,
  });
  return 'running';
}

/**
 * A step the first read took (LEAN_LAUNCH) failed: thrown as that step's own
 * failure would have been, so the pass handles it the same way (a machine
 * gone or Dead stops the pass, as orStop makes it).
 */
function fromPrepared(failed: StepFailure | undefined): never {
  if (failed?.type === FAILURE.machineGone) throw new MachineGoneSignal();
  throw ApplicationFailure.create({
    type: failed?.type ?? FAILURE.startFailed,
    message: failed?.message ?? 'the prepared step answered nothing',
    nonRetryable: true,
  });
}

/**
 * A launch the first read made failed (LAUNCH_IN_READ) in a way the launch
 * step would not retry: the failure that step would have thrown, for the
 * pass's decision (failover.ts afterLaunchFailure) by its type.
 */
function launchFailed(failed: StepFailure): ApplicationFailure {
  return ApplicationFailure.create({
    type: failed.type,
    message: failed.message,
    nonRetryable: true,
  });
}

async function recordFailure(ctx: MachineContext, message: string): Promise<ProvisionOutcome> {
  const { model, machineId, state } = ctx;
  state.phase = 'error';
  state.lastError = message;
  state.zone = undefined;
  await orStop((ctx.local ? localRecords : records).recordError({ model, machineId, message }));
  publish(ctx, { status: 'error', zone: null });
  log.warn('provisioning failed', { model, machineId, attempt: state.attempt, error: message });
  return 'error';
}
