import { machineSk, modelPk } from '../../state/keys';
import type { MachineRecord } from '../../state/types';

/** A recorded machine not yet provisioned (`pending`, no instance), as the API records it. */
export function pendingMachine(
  model: string,
  id: string,
  fields: Partial<MachineRecord> = {},
): MachineRecord {
  const now = new Date().toISOString();
  return {
    model,
    id,
    base: 'ubuntu@24.04',
    constraints: '',
    applications: [],
    principals: [],
    containers: [],
    life: 'alive',
    status: 'pending',
    message: '',
    createdAt: now,
    updatedAt: now,
    ...fields,
  };
}

/**
 * Machine `0` of model `m` (model uid `uid-1`) as the table holds its item (keys
 * and type beside the record), pending, with `fields` over it: the zone
 * claim, its claimant and the launch marker are fields of the item too.
 */
export function machineItem(
  fields: Partial<MachineRecord> & {
    zoneClaim?: string;
    claimedBy?: string;
    launchBatch?: unknown;
  } = {},
): Record<string, unknown> {
  const at = '2026-11-27T00:00:00.000Z';
  return {
    pk: modelPk('m'),
    sk: machineSk('0'),
    type: 'machine',
    ...pendingMachine('m', '0', { modelUid: 'uid-1', createdAt: at, updatedAt: at }),
    ...fields,
  };
}
