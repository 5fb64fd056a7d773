import { EntityConflictError } from './errors';
import { machineKey } from './items';
import type { Transaction } from './table';
import type { Life, MachineRecord } from './types';

/**
 * Named items of the machine transactions the services compose (retry-provisioning,
 * remove-machine of a manual machine, add-unit's undo): each item's condition lives
 * here, not in service/. createMachine and updateMachineMembership are in writes.ts.
 */

/**
 * A machine's constraints replaced while it is in `error` (retry-provisioning with
 * new constraints); "machine … changed meanwhile" when it left `error` since read.
 */
export function setErrorMachineConstraints(
  tx: Transaction,
  model: string,
  id: string,
  constraints: string,
): void {
  tx.update(machineKey(model, id), 'SET #c = :c, version = if_not_exists(version, :zero) + :one', {
    condition: '#s = :error',
    names: { '#c': 'constraints', '#s': 'status' },
    values: { ':c': constraints, ':error': 'error', ':zero': 0, ':one': 1 },
    onFail: new EntityConflictError(`machine ${id} changed meanwhile`),
  });
}

/** A machine's item goes under its version (a manual machine removed: nothing to tear down). */
export function deleteMachine(tx: Transaction, machine: MachineRecord): void {
  tx.delete(machineKey(machine.model, machine.id), 'version = :v', {
    ':v': machine.version ?? 0,
  });
}

/**
 * A machine's principals (its applications follow from them) and life, set under
 * its version; its containers are left as they are.
 */
export function setMachinePrincipals(
  tx: Transaction,
  machine: Pick<MachineRecord, 'model' | 'id' | 'version'>,
  principals: readonly string[],
  life: Life,
): void {
  tx.update(
    machineKey(machine.model, machine.id),
    'SET principals = :p, applications = :a, life = :life, version = :next',
    {
      condition: 'version = :v',
      values: {
        ':p': principals,
        ':a': [...new Set(principals.map((p) => p.slice(0, p.lastIndexOf('/'))))].sort(),
        ':life': life,
        ':v': machine.version ?? 0,
        ':next': (machine.version ?? 0) + 1,
      },
    },
  );
}
