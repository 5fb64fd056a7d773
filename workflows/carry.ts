import { continueAsNew } from '@temporalio/workflow';
import type { MachineContext } from './context';
import type { MachineWorkflowInput } from './definitions';

/**
 * Continues the machine's workflow as new, carrying what the next run cannot
 * read back from DynamoDB: its provisioning state, the signals not yet
 * consumed, and the instances it launched and has not recorded (with their
 * region), which would otherwise be left running with no one to terminate them.
 */
export async function startAfresh(
  ctx: MachineContext,
  pending: { retryRequested: boolean; destroyRequested: boolean },
): Promise<never> {
  return continueAsNew<(i: MachineWorkflowInput) => Promise<void>>({
    model: ctx.model,
    machineId: ctx.machineId,
    carried: {
      ...pending,
      state: ctx.state,
      ...(ctx.launched.length > 0 ? { launched: [...ctx.launched] } : {}),
      ...(ctx.launched.length > 0 && ctx.region ? { region: ctx.region } : {}),
      ...(ctx.blockedNote !== undefined ? { blockedNote: ctx.blockedNote } : {}),
      ...(ctx.patientPolls ? { patientPolls: true } : {}),
      ...(ctx.requestedBy ? { requestedBy: ctx.requestedBy } : {}),
    },
  });
}
