import type { AddressChange } from '../ec2/addresses';
import type { ActivityDeps } from './deps';
import { activityLog } from './log';
import { errorText } from './sweep-signals';

/**
 * Address policy: the addresses EC2 lists for the model's instances, written
 * only where they changed (once per instance, mostly), after the workflows
 * are reconciled, ADDRESS_WRITE_CONCURRENCY at a time and at most
 * ADDRESS_WRITES_PER_SWEEP per sweep (the next sweep writes the rest). Best
 * effort: a failed write is said and the next sweep writes it again; it never
 * fails the sweep.
 */

/** Address writes one model's sweep makes at once, and at most per sweep (the next sweep writes the rest). */
export const ADDRESS_WRITE_CONCURRENCY = 4;
export const ADDRESS_WRITES_PER_SWEEP = 200;

export async function recordAddresses(
  deps: ActivityDeps,
  model: string,
  changes: readonly AddressChange[],
): Promise<void> {
  const queue = changes.slice(0, ADDRESS_WRITES_PER_SWEEP);
  const writer = async (): Promise<void> => {
    for (let c = queue.shift(); c !== undefined; c = queue.shift()) await recordOne(deps, model, c);
  };
  await Promise.all(
    Array.from({ length: Math.min(ADDRESS_WRITE_CONCURRENCY, queue.length) }, writer),
  );
}

async function recordOne(deps: ActivityDeps, model: string, c: AddressChange): Promise<void> {
  try {
    await deps.store.recordAddresses(model, c.machineId, c.instanceId, c);
  } catch (err) {
    activityLog.warn('sweep: could not record the instance addresses; the next sweep tries again', {
      model,
      machineId: c.machineId,
      instanceId: c.instanceId,
      error: errorText(err),
    });
  }
}
