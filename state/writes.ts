import { EntityConflictError } from './errors';
import { appItem, appKey, machineItem, machineKey, modelKey, unitItem } from './items';
import type { Transaction } from './table';
import type { ApplicationRecord, MachineRecord, UnitRecord } from './types';
import type { Regroup } from './zone-counts';

/**
 * Named items of the services' transactions (a unit placed, a machine
 * created, "the model is alive"): the services compose them into one
 * Transaction, and the condition each item is written under lives here, not
 * in service/. A failed condition raises the item's error, or (a version
 * check, no error of its own) ConcurrentChangeError: re-read and retry.
 */

/**
 * The model is alive when the transaction commits (else "model … is being
 * destroyed"). With `uid`: the very model of that uid, for items that name it
 * (MachineRecord.modelUid): a model destroyed and re-created by name since it
 * was read is another model, and the one read is gone.
 */
export function requireModelAlive(tx: Transaction, model: string, uid?: string): void {
  tx.check(
    modelKey(model),
    uid !== undefined ? 'life = :alive AND uid = :uid' : 'life = :alive',
    uid !== undefined ? { ':alive': 'alive', ':uid': uid } : { ':alive': 'alive' },
    new EntityConflictError(`model "${model}" is being destroyed`),
  );
}

/**
 * The application is alive when the transaction commits: with `named`, a
 * failure says so ("application … is being destroyed"); without, it is a
 * change meanwhile (retried). With `version`, it is also unchanged since read.
 */
export function requireApplicationAlive(
  tx: Transaction,
  model: string,
  app: string,
  options: { version?: number; named?: boolean } = {},
): void {
  const versioned = options.version !== undefined;
  tx.check(
    appKey(model, app),
    versioned ? 'life = :alive AND version = :v' : 'life = :alive',
    versioned ? { ':alive': 'alive', ':v': options.version } : { ':alive': 'alive' },
    options.named ? new EntityConflictError(`application "${app}" is being destroyed`) : undefined,
  );
}

/** The model alive, and each of `apps` alive with a failure that names it. */
export function guardModelAndApp(
  tx: Transaction,
  model: string,
  apps: readonly string[],
  uid?: string,
): void {
  requireModelAlive(tx, model, uid);
  for (const app of apps) requireApplicationAlive(tx, model, app, { named: true });
}

/**
 * A new application's item, written only where none of its name is
 * (else "application … already exists"); `nextUnit` when its first units
 * are written with it.
 */
export function createApplication(
  tx: Transaction,
  app: ApplicationRecord,
  options: { nextUnit?: number } = {},
): void {
  tx.put(
    options.nextUnit === undefined ? appItem(app) : { ...appItem(app), nextUnit: options.nextUnit },
    'attribute_not_exists(pk)',
    undefined,
    new EntityConflictError(`application "${app.name}" already exists`),
  );
}

/** A new machine's item, written only where none is (its id was allocated for it). */
export function createMachine(tx: Transaction, machine: MachineRecord): void {
  tx.put(machineItem(machine), 'attribute_not_exists(pk)');
}

/** A new unit's item, written only where none is (its number was allocated for it). */
export function createUnit(tx: Transaction, unit: UnitRecord): void {
  tx.put(unitItem(unit), 'attribute_not_exists(pk)');
}

/**
 * Sets a machine's lists under its version, so two racing writers never
 * lose each other's change. With `regroup` (the machine's applications
 * change), its zone counts change in the same write (Repository.regroupMachine).
 */
export function updateMachineMembership(
  tx: Transaction,
  m: MachineRecord,
  next: Pick<MachineRecord, 'principals' | 'applications' | 'containers'> & {
    life?: MachineRecord['life'];
  },
  regroup?: Regroup,
): void {
  const counted = regroup?.machine;
  tx.update(
    machineKey(m.model, m.id),
    'SET principals = :p, applications = :a, containers = :c, life = :life, version = :next' +
      (counted?.set ? `, ${counted.set}` : ''),
    {
      condition: 'version = :v' + (counted ? ` AND ${counted.condition}` : ''),
      values: {
        ':p': next.principals,
        ':a': next.applications,
        ':c': next.containers,
        ':life': next.life ?? m.life,
        ':v': m.version ?? 0,
        ':next': (m.version ?? 0) + 1,
        ...counted?.values,
      },
      ...(counted ? { names: counted.names } : {}),
    },
  );
  for (const item of regroup?.counters ?? []) tx.add(item);
}
