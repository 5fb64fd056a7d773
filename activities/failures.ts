import { ApplicationFailure } from '@temporalio/common';
import { EntityNotFoundError } from '../state/errors';
import { MachineDeadError } from '../state/provisioning';
import { FAILURE, type FailureType } from '../temporal/failures';
import { refusedOr } from '../ec2/errors';

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

/**
 * Wraps each activity so an EC2 error no retry can fix leaves it as a
 * non-retryable `Ec2Refused` failure (ec2-errors.ts decides which): the one
 * place the machine workflow's activities are classified, so none of them
 * retries a refusal until its bound runs out.
 */
export function refusingPermanent<T extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: T,
): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        throw refusedOr(err);
      }
    };
  }
  return wrapped as T;
}
