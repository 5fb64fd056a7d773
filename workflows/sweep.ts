import { log } from '@temporalio/workflow';
import type { SweepReport } from '../activities/types';
import type { ModelSweepInput } from './definitions';
import { sweeping } from './proxies';

/**
 * One sweep of one model, started by the model's Temporal Schedule every
 * PROVISIONER_SWEEP_INTERVAL: terminates stray instances when the harvest
 * mode allows, and restarts missing machine workflows.
 */
export async function modelSweepWorkflow(input: ModelSweepInput): Promise<SweepReport> {
  const report = await sweeping.sweepModel(input);
  if (
    report.terminated.length > 0 ||
    report.restarted.length > 0 ||
    report.strays.length > 0 ||
    report.instanceChanges.length > 0 ||
    report.reprovisioned.length > 0
  ) {
    log.info('model swept', { ...report });
  }
  return report;
}
