import {
  ApplicationFailure,
  condition,
  defineQuery,
  defineSignal,
  log,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { LaunchPlan } from '../activities/types';
import { SEARCH_ATTRIBUTES } from './search-attributes';

export interface MachineWorkflowInput {
  model: string;
  machineId: string;
}

/** What a person (or the API) can ask a machine's workflow. */
export interface ProvisioningState {
  phase: 'planning' | 'starting' | 'waiting' | 'running' | 'error';
  attempt: number;
  failedZones: string[];
  lastError?: string;
  instanceId?: string;
  zone?: string;
}

export const provisioningStateQuery = defineQuery<ProvisioningState>('provisioningState');
export const retrySignal = defineSignal('retry');

// Zone and start failures are decided here, not retried inside the activity.
const NON_RETRYABLE = [
  'ZoneUnavailable',
  'StartInstanceFailed',
  'LaunchPlanFailed',
  'NoSuitableZone',
];

const ec2 = proxyActivities<Activities>({
  // RunInstances answers in seconds; a minute covers a slow endpoint without hiding a hung one.
  startToCloseTimeout: '1 minute',
  retry: {
    // throttling and transport faults: back off, never give up on a machine for them
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});

function failureType(err: unknown): string | undefined {
  if (err instanceof ApplicationFailure) return err.type ?? undefined;
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

function failureMessage(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * One workflow per machine: plan the launch, try zones least to most
 * populous, fail over on zone-specific errors without spending an attempt,
 * record the outcome, and on final failure wait for a retry.
 */
export async function machineWorkflow(input: MachineWorkflowInput): Promise<void> {
  const { model, machineId } = input;
  const state: ProvisioningState = { phase: 'planning', attempt: 0, failedZones: [] };
  let retryRequested = false;
  setHandler(provisioningStateQuery, () => state);
  setHandler(retrySignal, () => {
    retryRequested = true;
  });
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.model, value: model },
    { key: SEARCH_ATTRIBUTES.machine, value: machineId },
    { key: SEARCH_ATTRIBUTES.status, value: 'pending' },
  ]);

  const tuning = await ec2.tuning();

  for (;;) {
    const outcome = await provision(input, state, tuning);
    if (outcome === 'running') {
      state.phase = 'running';
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: 'running' }]);
      return;
    }
    state.phase = 'error';
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: 'error' }]);
    retryRequested = false;
    await condition(() => retryRequested);
    state.failedZones = [];
    state.attempt = 0;
    log.info('retrying provisioning', { model, machineId, workflowId: workflowInfo().workflowId });
  }
}

async function provision(
  input: MachineWorkflowInput,
  state: ProvisioningState,
  tuning: { startAttempts: number; retryDelayMs: number },
): Promise<'running' | 'error'> {
  const { model, machineId } = input;
  let plan: LaunchPlan;
  try {
    plan = await ec2.planLaunch(input);
  } catch (err) {
    state.lastError = failureMessage(err);
    await ec2.recordStatus({ model, machineId, status: 'error', message: state.lastError });
    return 'error';
  }

  for (let attempt = 1; attempt <= tuning.startAttempts; attempt++) {
    state.attempt = attempt;
    state.failedZones = [];
    state.phase = 'starting';
    let zoneIndependentError: string | undefined;
    for (;;) {
      let zone: string;
      try {
        zone = await ec2.chooseZone({ model, machineId, plan, exclude: state.failedZones });
      } catch (err) {
        if (failureType(err) === 'NoSuitableZone' && state.failedZones.length > 0) break;
        zoneIndependentError = failureMessage(err);
        break;
      }
      state.zone = zone;
      upsertSearchAttributes([
        { key: SEARCH_ATTRIBUTES.zone, value: zone },
        { key: SEARCH_ATTRIBUTES.status, value: 'allocating' },
      ]);
      await ec2.recordStatus({
        model,
        machineId,
        status: 'allocating',
        message: `starting in zone "${zone}" (attempt ${attempt} of ${tuning.startAttempts})`,
      });
      try {
        const started = await ec2.startInstance({
          model,
          machineId,
          zone,
          plan,
          // hashed to EC2's 64-character limit by the activity; stable across worker restarts
          tokenSeed: `${workflowInfo().workflowId}/${workflowInfo().runId}/${attempt}/${zone}`,
        });
        await ec2.recordRunning({ model, machineId, plan, instanceId: started.instanceId, zone });
        state.instanceId = started.instanceId;
        state.lastError = undefined;
        return 'running';
      } catch (err) {
        state.lastError = failureMessage(err);
        if (failureType(err) === 'ZoneUnavailable') {
          state.failedZones.push(zone);
          log.warn('zone unavailable, trying the next', {
            model,
            machineId,
            zone,
            attempt,
            error: state.lastError,
          });
          continue;
        }
        zoneIndependentError = state.lastError;
        break;
      }
    }
    if (attempt === tuning.startAttempts) break;
    const delay = `${Math.round(tuning.retryDelayMs / 100) / 10}s`;
    const message = zoneIndependentError
      ? `failed to start machine ${machineId}, retrying in ${delay}: ${zoneIndependentError}`
      : `failed to start machine ${machineId} in zone "${state.zone ?? ''}", retrying in ${delay} with new availability zone: ${state.lastError ?? ''}`;
    state.phase = 'waiting';
    await ec2.recordStatus({ model, machineId, status: 'allocating', message });
    await sleep(tuning.retryDelayMs);
  }
  await ec2.recordStatus({
    model,
    machineId,
    status: 'error',
    message: state.lastError ?? 'provisioning failed',
  });
  return 'error';
}
