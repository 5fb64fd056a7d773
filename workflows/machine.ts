import {
  ActivityFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { isLost, isRoutine } from '../core/liveness';
import type { MachineSnapshot } from '../activities/types';
import { publish, type MachineContext } from './context';
import {
  destroySignal,
  instanceStateSignal,
  provisioningStateQuery,
  reprovisionSignal,
  retrySignal,
  type MachineWorkflowInput,
  type ProvisioningState,
} from './definitions';
import { containerStep } from './container';
import { provision } from './launch';
import { startAfresh } from './carry';
import {
  BATCHED_LAUNCHES,
  CONTAINERS,
  CONTINUE_WHEN_SETTLED,
  INSTANCE_LIVENESS,
  LEAN_READ_CUT,
  NO_ORPHAN_ON_ERROR,
  OBSERVE_WITHOUT_READ,
  REPROVISION_IN_WORKFLOW,
  ROUTINE_CLEARS_INSTANCE_STATUS,
  uses,
} from './patches';
import {
  failureMessage,
  LOCAL_PREPARE_OPTIONS,
  localPreparing,
  localRecords,
  records,
  tearing,
} from './proxies';
import { SEARCH_ATTRIBUTES } from '../temporal/search-attributes';
import { showDetails } from './summaries';
import { tearDown } from './teardown';

export {
  destroySignal,
  instanceStateSignal,
  provisioningStateQuery,
  reprovisionSignal,
  retrySignal,
} from './definitions';
export type {
  CreatedMachine,
  InstanceObservation,
  MachineWorkflowInput,
  ProvisioningState,
} from './definitions';
import type { CreatedMachine, InstanceObservation } from './definitions';

/**
 * One workflow per machine, for the machine's whole life (id
 * `machine:<model>:<id>`). DynamoDB is the source of truth: the workflow
 * re-reads the machine whenever it wakes (start, retry, destroy), then
 * provisions it, waits, or tears it down. It ends when the machine is removed.
 *
 * - alive, no instance, not in error (or in error and asked to retry):
 *   provision (see launch.ts);
 * - a container: created on its host and deleted from it (see container.ts);
 * - running, in error or manual: wait for a signal;
 * - Dead: tear down (see teardown.ts) and end.
 *
 * Workflow type `machine`; `machineWorkflow` is the same code for runs begun
 * before it (patches.ts).
 */
export async function machine(input: MachineWorkflowInput): Promise<void> {
  return runMachine(input, true);
}

/** Machines whose workflows began before the `machine` type: every patch is asked for. */
export async function machineWorkflow(input: MachineWorkflowInput): Promise<void> {
  return runMachine(input, false);
}

async function runMachine(input: MachineWorkflowInput, lean: boolean): Promise<void> {
  const { model, machineId } = input;
  const state: ProvisioningState = input.carried?.state ?? {
    phase: 'loading',
    pass: 0,
    attempt: 0,
    maxAttempts: 0,
    failedZones: [],
  };
  const signals: MachineContext['signals'] = {
    retry: input.carried?.retryRequested ?? false,
    destroy: input.carried?.destroyRequested ?? false,
    ...(input.carried?.reprovision !== undefined ? { reprovision: input.carried.reprovision } : {}),
  };
  setHandler(provisioningStateQuery, () => state);
  // who asked, for the details; the handler sets it on `ctx` once that exists (below)
  const asked = { by: input.carried?.requestedBy ?? input.requestedBy };
  let onAsked = (by: string) => {
    asked.by = by;
  };
  setHandler(retrySignal, (request) => {
    signals.retry = true;
    if (request?.by) onAsked(request.by);
  });
  setHandler(destroySignal, () => {
    signals.destroy = true;
  });
  setHandler(reprovisionSignal, (request: unknown) => {
    // A run whose history began before the handler existed (no marker) buffered
    // the signal and went on asleep: replayed, it ignores it exactly so. A
    // signal without an instance id is ignored too (a throw here fails the task).
    if (!patched(REPROVISION_IN_WORKFLOW)) return;
    const { instanceId, by } = (request ?? {}) as { instanceId?: unknown; by?: unknown };
    if (typeof instanceId !== 'string' || instanceId === '') {
      log.warn('reprovision signal without an instance id: ignored', { model, machineId });
      return;
    }
    signals.reprovision = instanceId;
    if (typeof by === 'string' && by) onAsked(by);
  });
  // the latest observation wins: the sweep resends a state that is still different
  setHandler(instanceStateSignal, (seen) => {
    signals.instance = seen;
  });
  if (!lean) {
    // Legacy runs set these once per run (every start, signalWithStart included, now sets them).
    upsertSearchAttributes([
      { key: SEARCH_ATTRIBUTES.model, value: model },
      { key: SEARCH_ATTRIBUTES.machine, value: machineId },
    ]);
  }

  // Workflows begun since batched launches run their quick steps as local activities.
  const local = uses({ lean }, BATCHED_LAUNCHES);
  const quick = local ? localRecords : records;
  // lean runs take the worker's tuning from their first read of the machine (one step less)
  const tuning = lean ? undefined : await quick.tuning();
  const ctx: MachineContext = {
    model,
    machineId,
    state,
    signals,
    tuning: tuning ?? { startAttempts: 0, retryDelayMs: 0 },
    local,
    lean,
    launched: [...(input.carried?.launched ?? [])],
    ...(input.carried?.region ? { region: input.carried.region } : {}),
    // a teardown continued as new (teardown.ts): its status already says what blocks it
    ...(input.carried?.blockedNote !== undefined || input.carried?.patientPolls
      ? {
          resumedTeardown: true,
          ...(input.carried.blockedNote !== undefined
            ? { blockedNote: input.carried.blockedNote }
            : {}),
          ...(input.carried.blockedNotes?.length
            ? { blockedNotes: [...input.carried.blockedNotes] }
            : {}),
          ...(input.carried.patientPolls ? { patientPolls: true } : {}),
        }
      : {}),
    published: {},
    ...(asked.by ? { requestedBy: asked.by } : {}),
    ...(input.carried?.resumeAttempt !== undefined
      ? { resumeAttempt: input.carried.resumeAttempt }
      : {}),
  };
  // the UI's page of a continued run has no static summary: its details say it from the start
  showDetails(ctx);
  onAsked = (by) => {
    ctx.requestedBy = by;
  };
  state.maxAttempts = ctx.tuning.startAttempts;

  let first = true;
  for (;;) {
    // Signals are consumed before the machine is read, never after: one that
    // lands while the read is in flight stays set and wakes the next wait.
    const retryRequested = signals.retry;
    const destroyRequested = signals.destroy;
    const seen = signals.instance;
    const reprovisionOf = signals.reprovision;
    signals.retry = false;
    signals.destroy = false;
    signals.instance = undefined;
    signals.reprovision = undefined;
    // only news of its instance for a running machine: the write answers with the machine
    const observed =
      seen && !retryRequested && !destroyRequested && reprovisionOf === undefined
        ? await observeWithoutRead(ctx, seen)
        : undefined;
    // a `machine` run's first read, nothing pending: the read also plans and claims (LEAN_LAUNCH)
    const prepare =
      lean &&
      first &&
      input.carried === undefined &&
      !retryRequested &&
      !destroyRequested &&
      reprovisionOf === undefined &&
      seen === undefined;
    first = false;
    const read =
      observed?.machine ??
      (prepare
        ? await loadPrepared(ctx, input.created)
        : await quick.loadMachine({ model, machineId }));
    // a destroy cut the first read short, or its planning failed: read again, step by step
    if (read === 'interrupted') continue;
    const machine = read;
    if (lean && machine?.tuning && ctx.tuning.startAttempts === 0) {
      ctx.tuning = machine.tuning;
      state.maxAttempts = machine.tuning.startAttempts;
    }
    if (!machine) {
      if (ctx.launched.length > 0 && ctx.region) {
        // removed while a launch was in flight: no orphan
        try {
          await tearing.terminateInstances({
            region: ctx.region,
            instanceIds: ctx.launched,
            fresh: ctx.launched,
          });
        } catch (err) {
          if (isCancellation(err) || !patched(NO_ORPHAN_ON_ERROR)) throw err;
          // nothing is left to carry the failure: the log names the instance (the model's
          // sweep terminates it as a stray only under harvest modes `unknown` and `all`)
          log.error('machine removed; its launched instance could not be terminated', {
            model,
            machineId,
            instanceId: ctx.launched.join(','),
            error: failureMessage(err),
          });
        }
      }
      state.phase = 'removed';
      log.info('machine is gone', { model, machineId });
      return;
    }
    // forgotten and out of its zone: read again and provisioned as a retry is
    if (reprovisionOf !== undefined && (await reprovision(ctx, machine, reprovisionOf))) continue;
    // a live machine's snapshot leaves the model out; its region is then its plan's
    ctx.region = machine.region ?? ctx.region;
    ctx.snapshot = machine;
    // only as read, for the pass that starts now: a later pass plans and claims afresh
    ctx.prepared = machine.prepared;
    // this run's own first read planned and claimed (LEAN_LAUNCH): its launches record themselves
    if (machine.prepared) ctx.recordsLaunch = true;
    if (observed?.machine) {
      // published with the observation below: one search-attribute update for both
    } else if (lean && provisionable(machine, retryRequested)) {
      // the zone claim publishes `allocating` next: one search-attribute update for both
      ctx.deferred = { applications: machine.applications };
    } else {
      publish(ctx, { status: machine.status, applications: machine.applications });
    }
    if (machine.container && uses(ctx, CONTAINERS)) {
      const next = await containerStep(ctx, machine, retryRequested);
      if (next === 'removed') return;
      // a container waiting long for its host starts afresh before its history grows large
      if (next === 'wait' || workflowInfo().continueAsNewSuggested) await waitForSignal(ctx);
      continue;
    }
    if (machine.life === 'dead') {
      await tearDown(ctx, machine);
      return;
    }

    if (machine.manual || machine.container) {
      state.phase = 'idle';
    } else if (machine.instanceId) {
      state.phase = 'running';
      state.instanceId = machine.instanceId;
      state.instanceStatus = machine.instanceStatus;
      if (observed) {
        if (observed.applied) instanceRecorded(ctx, machine, seen!);
      } else if (seen) {
        await recordInstanceState(ctx, machine, seen);
      }
    } else if (machine.status === 'error' && !retryRequested) {
      state.phase = 'error';
      state.lastError ??= machine.message;
    } else {
      // routine, once per machine: debug (a thousand machines wrote a thousand lines each step)
      log.debug('provisioning', { model, machineId, pass: state.pass + 1 });
      // a retry begins a pass afresh; else a pass the previous run cut short goes on (launch.ts)
      if (retryRequested) ctx.resumeAttempt = undefined;
      ctx.retrying =
        retryRequested || (ctx.resumeAttempt !== undefined && input.carried?.retrying === true);
      const outcome = await provision(ctx);
      // Recorded running just now, by a write that saw the machine alive: nothing
      // to re-read until a signal (a destroy meanwhile was signalled, and wakes it).
      if (outcome === 'running' && lean) await waitForSignal(ctx);
      continue; // re-read: running, error, or Dead/removed meanwhile
    }
    // Nothing to do until a signal (a retry only counts in error; a destroy only once Dead).
    showDetails(ctx);
    await waitForSignal(ctx);
  }
}

/**
 * Reprovision, as told (REPROVISION_IN_WORKFLOW): the machine's lost instance
 * is forgotten and its zone given up, in a step that completes or is
 * repeated (a retried activity finishes what an earlier try began), only
 * while the machine is alive and still records that instance; then the
 * machine is provisioned again as a retry is. Whether the loop is to read
 * the machine again (false: nothing to do, the machine is taken as read).
 */
async function reprovision(
  ctx: MachineContext,
  machine: MachineSnapshot,
  instanceId: string,
): Promise<boolean> {
  if (machine.life !== 'alive' || machine.manual || machine.container) return false;
  if (machine.instanceId !== instanceId) return false;
  if (!patched(REPROVISION_IN_WORKFLOW)) return false;
  const { model, machineId, state } = ctx;
  const quick = ctx.local ? localRecords : records;
  const reset = await quick.resetForReprovision({ model, machineId, instanceId });
  if (reset) {
    log.info('reprovisioning: instance forgotten, machine provisioned again', {
      model,
      machineId,
      instanceId,
    });
    state.instanceId = undefined;
    state.instanceStatus = undefined;
    ctx.signals.retry = true;
  }
  return true;
}

/**
 * The first read of a `machine` run with nothing pending (LEAN_LAUNCH): the
 * machine, and for one about to be provisioned its plan and zone claim,
 * taken in the same local activity (records.ts loadMachine `prepare`). A
 * destroy that arrives meanwhile cancels it, as it cancels planning
 * (DESTROY_CANCELS_PLANNING; asked with LEAN_READ_CUT, so a run main's code
 * began, whose first read outlasted a workflow task and met a destroy,
 * replays as main ran it): 'interrupted', and the loop reads the
 * machine again; so too when the step runs out of retries (planning kept
 * failing), and the pass then plans on its own and records what failed.
 * Whether a run took this path is in its history (the
 * read's answer carries `prepared`), so replay follows it without a marker.
 * With `created` (the start input), the step plans and claims from what the
 * creating request wrote and reads nothing unless that no longer holds: the
 * same one local activity, so replay is unchanged (only its input grows).
 *
 * The step also launches (LAUNCH_IN_READ): it is told the pass and attempt
 * the launch is for (the first of each), and answers the launch with its
 * plan and claim (`prepared.launched`). A destroy meanwhile cancels the step
 * and waits for its answer (proxies.ts localPreparing): an answer with an
 * instance is kept (the pass records it, sees the machine Dead and the
 * teardown terminates it), any other is dropped as before ('interrupted').
 */
async function loadPrepared(
  ctx: MachineContext,
  created: CreatedMachine | undefined,
): Promise<MachineSnapshot | null | 'interrupted'> {
  const { model, machineId, signals, state } = ctx;
  // what a person querying the machine sees for the whole step: it plans and claims, and with
  // LAUNCH_IN_READ launches too, but the phase cannot move on within one local activity
  // (`starting` would need another activation); ProvisioningPhase says what `planning` covers
  state.phase = 'planning';
  const scope = new CancellationScope();
  // what its creating request wrote, when it said: the step then reads nothing unless that is stale
  const loading = scope.run(() =>
    localPreparing.loadMachine.executeWithOptions(
      { ...LOCAL_PREPARE_OPTIONS, summary: FIRST_READ_SUMMARY },
      [
        {
          model,
          machineId,
          prepare: true,
          ...(created ? { created } : {}),
          // the launch the pass makes first (launch.ts runPass): the pass it begins, attempt 1
          launch: { pass: state.pass + 1, attempt: 1 },
        },
      ],
    ),
  );
  let settled = false;
  loading.then(
    () => (settled = true),
    () => (settled = true),
  );
  await condition(() => settled || signals.destroy);
  // Runs whose history has no LEAN_READ_CUT marker here awaited the read, as main's code did
  // (its history then holds the read's answer, and the destroy is taken by the planning).
  if (!settled && patched(LEAN_READ_CUT)) {
    scope.cancel();
    // a launch that went out is never dropped: its answer goes on to the pass, which records it
    const answer = await loading.catch(() => undefined);
    if (answer?.prepared?.launched !== undefined) return answer;
    state.phase = 'loading';
    return 'interrupted';
  }
  try {
    return await loading;
  } catch (err) {
    // out of its retries (planning or the claim kept failing): the loop reads again and
    // takes the steps one by one, whose failures the pass records on the machine
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    log.warn(
      'first read failed (read, plan or claim out of retries); the pass plans, claims and launches on its own',
      {
        model,
        machineId,
        error: failureMessage(err),
      },
    );
    state.phase = 'loading';
    return 'interrupted';
  }
}

/** The first read's line in the run's history (the Temporal UI): it may launch (LAUNCH_IN_READ). */
export const FIRST_READ_SUMMARY = 'read the machine; plan, claim a zone and launch';

/** Whether the loop will provision this machine now (the last branch below). */
function provisionable(machine: MachineSnapshot, retryRequested: boolean): boolean {
  if (machine.life === 'dead' || machine.manual || machine.container || machine.instanceId) {
    return false;
  }
  return machine.status !== 'error' || retryRequested;
}

/**
 * Liveness: records what EC2 says of the machine's instance (the sweep or the
 * state-change handler sent it), if the machine still records that instance.
 */
async function recordInstanceState(
  ctx: MachineContext,
  machine: MachineSnapshot,
  seen: { instanceId: string; state: NonNullable<MachineSnapshot['instanceStatus']> },
): Promise<void> {
  if (seen.instanceId !== machine.instanceId || !uses(ctx, INSTANCE_LIVENESS)) return;
  const { model, machineId } = ctx;
  const quick = ctx.local ? localRecords : records;
  const applied = await quick.recordInstanceState({
    model,
    machineId,
    instanceId: seen.instanceId,
    state: seen.state,
  });
  if (!applied) return;
  const lost = isLost(seen.state) && machine.life === 'alive';
  const status = lost ? 'down' : machine.status === 'down' ? 'running' : machine.status;
  instanceRecorded(ctx, { ...machine, status }, seen);
}

/**
 * Liveness without a read (OBSERVE_WITHOUT_READ): a running machine whose
 * only news is its instance's state records it, and the write's answer is
 * the machine as it now is. Undefined when the run must read the machine
 * instead (nothing read yet in this run, another instance, not running, a
 * `machineWorkflow` run, or a run begun before the change); `machine` is absent when the write did not
 * apply or the machine is Dead.
 */
async function observeWithoutRead(
  ctx: MachineContext,
  seen: InstanceObservation,
): Promise<{ applied: boolean; machine?: MachineSnapshot } | undefined> {
  if (
    ctx.snapshot === undefined ||
    ctx.state.phase !== 'running' ||
    ctx.state.instanceId !== seen.instanceId ||
    // runs begun before the `machine` type keep asking their patches where they always did
    !ctx.lean ||
    !patched(OBSERVE_WITHOUT_READ)
  ) {
    return undefined;
  }
  const out = await (ctx.local ? localRecords : records).observeInstance({
    model: ctx.model,
    machineId: ctx.machineId,
    instanceId: seen.instanceId,
    state: seen.state,
  });
  return out.machine ? out : { applied: out.applied };
}

/** The machine's instance state is recorded: `machine` is the machine as the write left it. */
function instanceRecorded(
  ctx: MachineContext,
  machine: MachineSnapshot,
  seen: InstanceObservation,
): void {
  const { model, machineId, state } = ctx;
  state.instanceStatus = seen.state;
  const lost = isLost(seen.state) && machine.life === 'alive';
  // the attribute names what needs a look: routine news (a return to running) clears it
  const routine = isRoutine(seen.state) && patched(ROUTINE_CLEARS_INSTANCE_STATUS);
  publish(ctx, {
    status: machine.status,
    instanceStatus: routine ? null : seen.state,
    applications: machine.applications,
  });
  const fields = { model, machineId, instanceId: seen.instanceId, state: seen.state };
  if (lost) log.warn('instance lost: machine down', fields);
  else log.debug('instance state', fields);
}

/**
 * Events a run may hold when its machine settles (running, in error or idle,
 * waiting for a signal) before it starts afresh. A smooth provisioning takes
 * about 20, so it goes on as it is (a new run costs a start); one that failed
 * over zones, waited out attempts or kept hearing of its instance drops that
 * history instead of carrying it for the machine's whole life.
 */
export const SETTLED_HISTORY_EVENTS = 40;

async function waitForSignal(ctx: MachineContext): Promise<void> {
  const { signals } = ctx;
  if (
    workflowInfo().historyLength > SETTLED_HISTORY_EVENTS &&
    !signals.retry &&
    !signals.destroy &&
    signals.instance === undefined &&
    signals.reprovision === undefined &&
    patched(CONTINUE_WHEN_SETTLED)
  ) {
    await startAfresh(ctx, { retryRequested: false, destroyRequested: false });
  }
  await condition(
    () =>
      signals.retry ||
      signals.destroy ||
      signals.instance !== undefined ||
      signals.reprovision !== undefined ||
      workflowInfo().continueAsNewSuggested,
  );
  if (
    !signals.retry &&
    !signals.destroy &&
    signals.instance === undefined &&
    signals.reprovision === undefined
  ) {
    // Long-lived: start afresh before the history grows large, carrying what matters.
    await startAfresh(ctx, {
      retryRequested: signals.retry,
      destroyRequested: signals.destroy,
    });
  }
}
