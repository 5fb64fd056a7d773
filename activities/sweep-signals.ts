import { WorkflowNotFoundError } from '@temporalio/client';
import { machineWorkflowId } from '../temporal/search-attributes';
import type { ActivityDeps } from './deps';
import { activityLog } from './log';

/**
 * The sweep's signals to a machine's workflow. Answers whether the workflow
 * took it: false with no Temporal client or no workflow (reconcile starts
 * one, and the next sweep tells it); any other failure is thrown.
 */
export async function signalMachine(
  deps: ActivityDeps,
  model: string,
  machineId: string,
  name: string,
  args: unknown[],
): Promise<boolean> {
  if (!deps.temporal) return false;
  try {
    await deps.temporal.workflow
      .getHandle(machineWorkflowId(model, machineId))
      .signal(name, ...args);
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/**
 * A signal that failed for one machine (Temporal throttled, refused): said,
 * and the sweep goes on with the others; nothing was written, so the next
 * sweep sees the same difference and tells it again.
 */
export function signalFailed(model: string, machineId: string, name: string, err: unknown): void {
  activityLog.warn('sweep: could not signal the machine workflow; the next sweep tries again', {
    model,
    machineId,
    signal: name,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
  });
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
