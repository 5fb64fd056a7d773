import { log } from '@temporalio/workflow';
import type { CreatedMachine } from './definitions';
import { starting } from './proxies';

export interface StartMachinesInput {
  model: string;
  machineIds: string[];
  /**
   * The user whose request recorded the machines, named in each machine's
   * workflow (API.md, "Audit"). Optional: runs started before it was passed
   * have none, and replay as they ran (only the activity's input grows).
   */
  requestedBy?: string;
  /** What the request wrote of every machine (MachineWorkflowInput.created); absent before issue 26. */
  created?: CreatedMachine;
}

/** Machines per activity: each activity's starts are one heartbeat-covered unit of retry. */
const CHUNK = 250;

/**
 * Starts the workflows of the machines one bulk API request recorded, so the
 * request answers at once instead of waiting for a thousand workflow starts.
 * Should this ever fail for good, the model's sweep starts any machine
 * workflow that is missing.
 */
export async function startMachinesWorkflow(input: StartMachinesInput): Promise<number> {
  let started = 0;
  for (let i = 0; i < input.machineIds.length; i += CHUNK) {
    started += await starting.startMachineWorkflows({
      model: input.model,
      machineIds: input.machineIds.slice(i, i + CHUNK),
      ...(input.requestedBy ? { requestedBy: input.requestedBy } : {}),
      ...(input.created ? { created: input.created } : {}),
    });
  }
  log.info('machine workflows started', { model: input.model, count: started });
  return started;
}
