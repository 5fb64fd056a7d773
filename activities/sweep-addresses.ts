import type { AddressChange } from '../ec2/addresses';
import type { ActivityDeps } from './deps';
import { activityLog } from './log';
import { errorText } from './sweep-signals';

/**
 * Address policy: the addresses EC2 lists for the model's instances, written
 * only where they changed (once per instance, mostly), after the workflows
 * are reconciled, at most ADDRESS_WRITES_PER_SWEEP per sweep (the next sweep
 * writes the rest), sent together (ProvisioningStore.recordAddressesAll:
 * one BatchExecuteStatement per 25, each write with its own condition and
 * outcome; an UpdateItem each before issue 26's `cpu` pass). Best effort: a
 * failed write is said and the next sweep writes it again; it never fails
 * the sweep. A write refused by its condition (the machine no longer records
 * that instance) is left, as before.
 */

/** At most this many address writes per sweep (the next sweep writes the rest). */
export const ADDRESS_WRITES_PER_SWEEP = 200;

export async function recordAddresses(
  deps: ActivityDeps,
  model: string,
  changes: readonly AddressChange[],
): Promise<void> {
  const writes = changes.slice(0, ADDRESS_WRITES_PER_SWEEP);
  if (writes.length === 0) return;
  const outcomes = await deps.store.recordAddressesAll(model, writes);
  outcomes.forEach((o, i) => {
    if (o.outcome !== 'failed') return;
    const c = writes[i]!;
    activityLog.warn('sweep: could not record the instance addresses; the next sweep tries again', {
      model,
      machineId: c.machineId,
      instanceId: c.instanceId,
      error: errorText(o.error),
    });
  });
}
