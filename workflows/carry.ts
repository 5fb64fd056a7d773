import { continueAsNew, patched } from '@temporalio/workflow';
import type { MachineContext } from './context';
import type { MachineWorkflowInput } from './definitions';
import { CARRIED_LABEL } from './patches';

/**
 * What a continued run's input says its carried state is (the Temporal UI
 * shows the input on the run's page): not the machine's state now.
 */
export const CARRIED_ABOUT =
  "the previous run's state when it continued as new, not the machine's state now " +
  '(see the current details or the provisioningState query)';

/**
 * Continues the machine's workflow as new, carrying what the next run cannot
 * read back from DynamoDB: its provisioning state, the signals not yet
 * consumed, and the instances it launched and has not recorded (with their
 * region), which would otherwise be left running with no one to terminate them.
 * `resume`: a provisioning pass cut short between attempts (launch.ts), the
 * attempt the next run goes on with.
 */
export async function startAfresh(
  ctx: MachineContext,
  pending: { retryRequested: boolean; destroyRequested: boolean },
  resume?: { attempt: number },
): Promise<never> {
  return continueAsNew<(i: MachineWorkflowInput) => Promise<void>>({
    model: ctx.model,
    machineId: ctx.machineId,
    carried: {
      ...(patched(CARRIED_LABEL) ? { about: CARRIED_ABOUT } : {}),
      ...pending,
      state: ctx.state,
      ...(ctx.launched.length > 0 ? { launched: [...ctx.launched] } : {}),
      ...(ctx.launched.length > 0 && ctx.region ? { region: ctx.region } : {}),
      ...(ctx.blockedNote !== undefined ? { blockedNote: ctx.blockedNote } : {}),
      ...(ctx.patientPolls ? { patientPolls: true } : {}),
      ...(ctx.signals.reprovision !== undefined ? { reprovision: ctx.signals.reprovision } : {}),
      ...(ctx.requestedBy ? { requestedBy: ctx.requestedBy } : {}),
      ...(resume ? { resumeAttempt: resume.attempt } : {}),
      ...(resume && ctx.retrying ? { retrying: true } : {}),
    },
  });
}
