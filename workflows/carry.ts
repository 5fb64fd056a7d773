import { continueAsNew, patched, workflowInfo } from '@temporalio/workflow';
import type { MachineContext } from './context';
import type { MachineWorkflowInput } from './definitions';
import { CARRIED_LABEL } from './patches';

/**
 * What a continued run's input says its carried state is (the Temporal UI
 * shows the input on the run's page): not the machine's state now. Set in
 * every continued run without a patch: a field of the continue-as-new input
 * is not a command, so replay cannot tell it apart. Runs continued with the
 * withdrawn CARRIED_LABEL patch (patches.ts) hold its marker, which sdk-core
 * refuses unless the code asks for it: replaying, startAfresh still asks
 * (matched where the marker is, false and nothing recorded where it is not);
 * live, it never does, so no new run records it.
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
  if (workflowInfo().unsafe.isReplaying) patched(CARRIED_LABEL);
  return continueAsNew<(i: MachineWorkflowInput) => Promise<void>>({
    model: ctx.model,
    machineId: ctx.machineId,
    carried: {
      about: CARRIED_ABOUT,
      ...pending,
      state: ctx.state,
      ...(ctx.launched.length > 0 ? { launched: [...ctx.launched] } : {}),
      ...(ctx.launched.length > 0 && ctx.region ? { region: ctx.region } : {}),
      ...(ctx.blockedNote !== undefined ? { blockedNote: ctx.blockedNote } : {}),
      ...(ctx.blockedNotes?.length ? { blockedNotes: [...ctx.blockedNotes] } : {}),
      ...(ctx.patientPolls ? { patientPolls: true } : {}),
      ...(ctx.signals.reprovision !== undefined ? { reprovision: ctx.signals.reprovision } : {}),
      ...(ctx.requestedBy ? { requestedBy: ctx.requestedBy } : {}),
      ...(resume ? { resumeAttempt: resume.attempt } : {}),
      ...(resume && ctx.retrying ? { retrying: true } : {}),
    },
  });
}
