import {
  ApplicationFailure,
  workflowInfo,
  condition,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  sleep,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CommandOutcome, ContainerHost } from '../activities/ssm';
import type { MachineSnapshot } from '../activities/types';
// the two modules, not the `core` barrel: each workflow run evaluates the modules its workflow
// code imports, and the barrel's thirteen were 40 % of that per machine (issue 26)
import { outputTail } from '../core/containers';
import { parentMachineId } from '../core/placement';
import { publish, type MachineContext } from './context';
import { destroySignal } from './definitions';
import { FAILURE, NON_RETRYABLE_FAILURES } from '../temporal/failures';
import { goDuration } from '../temporal/messages';
import { failureMessage, failureType } from './proxies';
import { machineWorkflowId } from '../temporal/search-attributes';

/**
 * SSM and DynamoDB calls of a container's workflow: seconds each; bounded, so
 * an SSM that keeps failing ends in the container's `error`, not in retries
 * forever.
 */
const hosts = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
  },
});

/** Tries at deleting a container before its machine is removed anyway (and the leftover logged). */
const DELETE_TRIES = 3;

type Tuning = Awaited<ReturnType<Activities['containerTuning']>>;

/** What the machine workflow does next after a container step. */
export type ContainerNext = 'removed' | 'wait' | 'again';

/**
 * A container machine (`N/lxd/M`, issue 15): created on its host through SSM
 * Run Command once the host runs and SSM reports it online, deleted from it
 * the same way when it goes Dead. Like Juju's container provisioner, without
 * an agent: the host's SSM agent runs the commands (core/containers.ts).
 *
 * - Dead: delete it on its host, remove the machine ('removed');
 * - running, down, or in error with no retry asked: nothing to do ('wait');
 * - otherwise: wait for the host, create the container, record `running`
 *   in the host's zone or `error` with the command's output ('again': the
 *   machine is read again).
 */
export async function containerStep(
  ctx: MachineContext,
  machine: MachineSnapshot,
  retryRequested: boolean,
): Promise<ContainerNext> {
  const { state } = ctx;
  if (machine.life === 'dead') {
    await removeContainer(ctx, machine);
    return 'removed';
  }
  if (machine.status === 'running' || machine.status === 'down') {
    state.phase = 'running';
    return 'wait';
  }
  if (machine.status === 'error' && !retryRequested) {
    state.phase = 'error';
    state.lastError ??= machine.message;
    return 'wait';
  }
  state.pass += 1;
  state.lastError = undefined;
  await createContainer(ctx, machine, await hosts.containerTuning());
  return 'again';
}

async function setStatus(
  ctx: MachineContext,
  status: 'pending' | 'allocating',
  message: string,
  last: { message?: string },
): Promise<void> {
  if (last.message === message) return;
  last.message = message;
  await hosts.recordContainerStatus({
    model: ctx.model,
    machineId: ctx.machineId,
    status,
    message,
  });
  publish(ctx, { status });
}

async function recordError(ctx: MachineContext, message: string): Promise<void> {
  const { model, machineId, state } = ctx;
  state.phase = 'error';
  state.lastError = message;
  await hosts.recordContainerError({ model, machineId, message });
  publish(ctx, { status: 'error', zone: null });
  log.warn('container failed', { model, machineId, message });
}

/** The longest wait between two looks at a host that does not change. */
const HOST_POLL_MAX_MS = 60_000;

/** Waits `ms`, or less when the machine is destroyed meanwhile (true). */
async function pause(ctx: MachineContext, ms: number): Promise<boolean> {
  return condition(() => ctx.signals.destroy, ms);
}

/** The host, once it runs and SSM reports it online; undefined when the container went in error or was destroyed. */
async function awaitHost(
  ctx: MachineContext,
  machine: MachineSnapshot,
  tuning: Tuning,
): Promise<ContainerHost | undefined> {
  const { model, machineId, state } = ctx;
  const hostId = parentMachineId(machineId) ?? '';
  const last: { message?: string } = {};
  let onlineSince: number | undefined;
  // A host that stays pending, in error or down would otherwise be polled at
  // the same pace for ever: the wait doubles while nothing changes.
  let interval = tuning.pollMs;
  let seen: string | undefined;
  state.phase = 'waiting';
  for (;;) {
    const host = await hosts.containerHost({ model, machineId, hostId });
    const now = `${host.status ?? ''}/${host.instanceId ?? ''}`;
    if (now !== seen) {
      seen = now;
      interval = tuning.pollMs;
    }
    if (host.gone) {
      await recordError(ctx, `machine ${hostId} is being destroyed or gone: container not created`);
      return undefined;
    }
    if (host.manual) {
      await recordError(
        ctx,
        `machine ${hostId} is manually provisioned: the provisioner cannot create containers on it`,
      );
      return undefined;
    }
    let waiting: string;
    if (host.status === 'running' && host.instanceId) {
      if (await hosts.instanceOnline({ region: regionOf(machine), instanceId: host.instanceId })) {
        return host;
      }
      onlineSince ??= Date.now();
      const waited = Date.now() - onlineSince;
      if (waited >= tuning.onlineTimeoutMs) {
        await recordError(
          ctx,
          `machine ${hostId} (${host.instanceId}) did not come online in Systems Manager within ` +
            `${goDuration(tuning.onlineTimeoutMs)}: its instance profile must let the SSM agent register`,
        );
        return undefined;
      }
      waiting = `waiting for machine ${hostId} (${host.instanceId}) to come online in Systems Manager`;
    } else {
      onlineSince = undefined;
      waiting = `waiting for machine ${hostId} to be running (${host.status ?? 'pending'})`;
    }
    await setStatus(ctx, 'pending', waiting, last);
    // a long wait starts afresh (the machine loop continues as new), carrying nothing it needs
    if (workflowInfo().continueAsNewSuggested) return undefined;
    if (await pause(ctx, interval)) return undefined;
    interval = Math.min(interval * 2, Math.max(HOST_POLL_MAX_MS, tuning.pollMs));
  }
}

/** Polls a command until it ends (undefined: destroyed meanwhile, or it outlived its bound). */
async function awaitCommand(
  ctx: MachineContext,
  region: string,
  sent: { commandId: string; instanceId: string },
  tuning: Tuning,
): Promise<CommandOutcome | 'destroyed' | 'timed-out'> {
  const started = Date.now();
  for (;;) {
    const outcome = await hosts.commandOutcome({ region, ...sent });
    if (outcome.final) return outcome;
    if (Date.now() - started >= tuning.commandTimeoutMs) return 'timed-out';
    if (await pause(ctx, tuning.pollMs)) return 'destroyed';
  }
}

function outcomeMessage(what: string, outcome: CommandOutcome): string {
  const tail = outputTail(outcome.stderr) || outputTail(outcome.stdout);
  const code = outcome.exitCode >= 0 ? ` (exit ${outcome.exitCode})` : '';
  return `${what} failed: ${outcome.status}${code}${tail ? `: ${tail}` : ''}`;
}

async function createContainer(
  ctx: MachineContext,
  machine: MachineSnapshot,
  tuning: Tuning,
): Promise<void> {
  const { model, machineId, state } = ctx;
  const host = await awaitHost(ctx, machine, tuning);
  if (!host?.instanceId) return;
  state.phase = 'starting';
  const instanceId = host.instanceId;
  let sent;
  try {
    sent = await hosts.sendContainerCommand({
      model,
      machineId,
      region: regionOf(machine),
      instanceId,
      action: 'create',
      base: host.base,
      ...(machine.modelUid ? { modelUid: machine.modelUid } : {}),
    });
  } catch (err) {
    if (failureType(err) === FAILURE.machineGone) return;
    await recordError(ctx, `creating container on machine ${host.hostId}: ${failureMessage(err)}`);
    return;
  }
  const what = `creating container ${sent.name} on machine ${host.hostId} (${instanceId})`;
  await setStatus(ctx, 'allocating', what, {});
  log.info('container command', { model, machineId, instanceId, commandId: sent.commandId });
  const outcome = await awaitCommand(
    ctx,
    regionOf(machine),
    { commandId: sent.commandId, instanceId },
    tuning,
  );
  if (outcome === 'destroyed') return;
  if (outcome === 'timed-out') {
    await recordError(ctx, `${what} did not finish within ${goDuration(tuning.commandTimeoutMs)}`);
    return;
  }
  if (outcome.status !== 'Success') {
    await recordError(ctx, outcomeMessage(what, outcome));
    return;
  }
  await hosts.recordContainerRunning({
    model,
    machineId,
    ...(host.zone ? { zone: host.zone } : {}),
  });
  state.phase = 'running';
  publish(ctx, { status: 'running', ...(host.zone ? { zone: host.zone } : {}) });
  log.info('container running', { model, machineId, instanceId, zone: host.zone });
}

/**
 * A Dead container: deleted on its host (`lxc delete --force`) when the host
 * still runs and SSM can reach it, then removed; the host stays (Juju), and
 * goes Dead itself if it was only waiting for its containers to go.
 */
async function removeContainer(ctx: MachineContext, machine: MachineSnapshot): Promise<void> {
  const { model, machineId, state } = ctx;
  state.phase = 'stopping';
  publish(ctx, { status: 'stopping' });
  const hostId = parentMachineId(machineId) ?? '';
  const tuning = await hosts.containerTuning();
  for (let attempt = 1; attempt <= DELETE_TRIES; attempt++) {
    const host = await hosts.containerHost({ model, machineId, hostId }).catch((err: unknown) => {
      if (failureType(err) === FAILURE.machineGone) return undefined;
      throw err;
    });
    if (!host?.instanceId || host.status !== 'running') break; // nothing reachable to delete it on
    const instanceId = host.instanceId;
    if (!(await hosts.instanceOnline({ region: regionOf(machine), instanceId }))) {
      if (attempt < DELETE_TRIES) {
        await sleep(tuning.pollMs);
        continue;
      }
      log.warn('container host not online in SSM: container left on it', {
        model,
        machineId,
        instanceId,
      });
      break;
    }
    const sent = await hosts.sendContainerCommand({
      model,
      machineId,
      region: regionOf(machine),
      instanceId,
      action: 'delete',
      base: host.base,
      ...(machine.modelUid ? { modelUid: machine.modelUid } : {}),
    });
    if (!sent.commandId) break; // never created there
    await hosts
      .recordContainerStatus({
        model,
        machineId,
        status: 'stopping',
        message: `deleting container ${sent.name} on machine ${hostId} (${instanceId})`,
      })
      .catch(() => undefined);
    const outcome = await awaitCommand(
      { ...ctx, signals: { ...ctx.signals, destroy: false } },
      regionOf(machine),
      { commandId: sent.commandId, instanceId },
      tuning,
    );
    if (typeof outcome !== 'string' && outcome.status === 'Success') break;
    const why =
      typeof outcome === 'string'
        ? outcome
        : outcomeMessage(`deleting container ${sent.name}`, outcome);
    log.warn('container delete failed', { model, machineId, instanceId, attempt, why });
    if (attempt < DELETE_TRIES) await sleep(tuning.pollMs);
  }
  const { hostDead } = await hosts.removeContainer({ model, machineId });
  state.phase = 'removed';
  log.info('container removed', { model, machineId });
  if (hostDead) {
    // its host waited for its last container: tell the host's workflow (the sweep would, later)
    await getExternalWorkflowHandle(machineWorkflowId(model, hostDead))
      .signal(destroySignal)
      .catch((err: unknown) =>
        log.warn('could not signal host', { model, hostDead, err: String(err) }),
      );
  }
}

/**
 * The container's model region: a container's snapshot always carries it
 * (records.ts reads the model for containers, as for Dead machines).
 */
function regionOf(machine: MachineSnapshot): string {
  if (machine.region === undefined) {
    throw ApplicationFailure.nonRetryable(
      'a container snapshot without its model region',
      'MissingRegion',
    );
  }
  return machine.region;
}
