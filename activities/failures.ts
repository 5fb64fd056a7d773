import { ApplicationFailure } from '@temporalio/common';
import { EntityNotFoundError } from '../state/errors';
import { MachineDeadError } from '../state/provisioning';
import { FAILURE, type FailureType } from '../workflows/failures';

/** A non-retryable failure of one of the types the workflows branch on. */
export function failure(type: FailureType, message: string, details?: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: true,
    ...(details === undefined ? {} : { details: [details] }),
  });
}

/** Maps "the machine is gone" (or Dead, where that stops the work) to MachineGone; rethrows the rest. */
export async function orMachineGone<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof EntityNotFoundError || err instanceof MachineDeadError) {
      throw failure(FAILURE.machineGone, err.message);
    }
    throw err;
  }
}
