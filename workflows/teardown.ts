import { log, sleep } from '@temporalio/workflow';
import type { DeadMachineSnapshot } from '../activities/types';
import { publish, type MachineContext } from './context';
import { FAILURE } from './failures';
import { BATCHED_LAUNCHES, uses } from './patches';
import { describing, ec2, failureType, records } from './proxies';
import { duration } from './summaries';

/** Harvest modes under which a Dead machine's instance is terminated (Juju's `destroyed` and `all`). */
export function harvestsDestroyed(mode: string): boolean {
  return mode === 'destroyed' || mode === 'all';
}

/**
 * A Dead machine (DESIGN.md "Provisioning", step 5): status `stopping`;
 * terminate its instance — the recorded one, any launched in this run and
 * not yet recorded, and any other tagged for it — when the harvest mode
 * allows; wait until EC2 reports them terminated; remove the machine (and
 * its model, if dying and now empty).
 */
export async function tearDown(ctx: MachineContext, machine: DeadMachineSnapshot): Promise<void> {
  const { model, machineId, state } = ctx;
  state.phase = 'stopping';
  publish(ctx, { status: 'stopping' });
  // leaving: it no longer counts in its zone (removal would do it too, later); a new step, so patched
  if (uses(ctx, BATCHED_LAUNCHES)) {
    await records.releaseZone({ model, machineId }).catch((err: unknown) => {
      if (failureType(err) !== FAILURE.machineGone) throw err;
    });
  }
  const launchable = !machine.manual && !machine.container;
  const terminate = launchable && harvestsDestroyed(machine.harvestMode);
  let instanceIds = [
    ...new Set([...(machine.instanceId ? [machine.instanceId] : []), ...ctx.launched]),
  ];
  if (terminate) {
    const tagged = await describing.instancesTaggedFor({
      model,
      machineId,
      region: machine.region,
      ...(machine.modelUid ? { modelUid: machine.modelUid } : {}),
    });
    instanceIds = [...new Set([...instanceIds, ...tagged])];
  }
  const message =
    instanceIds.length === 0
      ? ''
      : terminate
        ? `terminating instance ${instanceIds.join(', ')}`
        : `keeping instance ${instanceIds.join(', ')} (harvest mode "${machine.harvestMode}")`;
  try {
    await records.recordStatus({ model, machineId, status: 'stopping', message });
  } catch (err) {
    if (failureType(err) !== FAILURE.machineGone) throw err;
  }
  if (terminate && instanceIds.length > 0) {
    log.info('terminating', { model, machineId, instanceId: instanceIds.join(',') });
    // summaries (UI metadata on the same commands) read as sentences in the history
    await ec2.terminateInstances.executeWithOptions(
      { summary: `terminating ${instanceIds.join(', ')}` },
      [{ region: machine.region, instanceIds, fresh: ctx.launched }],
    );
    for (let poll = 0; ; poll++) {
      const remaining = await describing.instancesNotTerminated({
        region: machine.region,
        instanceIds,
      });
      if (remaining.length === 0) break;
      const waitMs = Math.min(1000 * 2 ** poll, 5000);
      await sleep(waitMs, {
        summary: `waiting ${duration(waitMs)} for ${remaining.join(', ')} to terminate`,
      });
    }
  }
  ctx.launched = [];
  const { modelRemoved } = await records.removeMachine({ model, machineId });
  state.phase = 'removed';
  state.instanceId = undefined;
  log.info('machine removed', { model, machineId, modelRemoved });
}
