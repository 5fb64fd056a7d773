import { requireApplicationAlive, requireModelAlive } from './writes';
import { unitItem, unitKey } from './items';
import type { Transaction } from './table';
import type { UnitRecord } from './types';

/**
 * Named items of the unit transactions (add-unit, relate's fan-out, remove-unit,
 * add-unit's undo): each item's condition lives here, not in service/. A version
 * condition that fails raises ConcurrentChangeError: the caller re-reads and retries.
 */

/**
 * What every unit write holds at commit: the model alive, the unit's application
 * alive at the version read (a relation made meanwhile moves it, so the unit is
 * written with its subordinates or not at all), and each related subordinate
 * application alive (no error of its own: one going away meanwhile is re-read on
 * the retry).
 */
export function guardUnitWrite(
  tx: Transaction,
  model: string,
  app: { name: string; version?: number },
  subordinates: ReadonlyArray<{ name: string }>,
  uid?: string,
): void {
  requireModelAlive(tx, model, uid);
  requireApplicationAlive(tx, model, app.name, { version: app.version ?? 0 });
  for (const sub of subordinates) requireApplicationAlive(tx, model, sub.name);
}

/**
 * A unit goes with its subordinates, under its version: a subordinate added
 * meanwhile makes the write retry and go too.
 */
export function deleteUnitWithSubordinates(tx: Transaction, unit: UnitRecord): void {
  tx.delete(unitKey(unit.model, unit.name), 'version = :v', { ':v': unit.version ?? 0 });
  for (const sub of unit.subordinates) tx.delete(unitKey(unit.model, sub));
}

/** A subordinate unit's item goes (its principal's list is written beside it). */
export function deleteSubordinateUnit(tx: Transaction, model: string, unit: string): void {
  tx.delete(unitKey(model, unit));
}

/** A principal unit's list of subordinates, set under its version (a racing writer retries). */
export function setUnitSubordinates(
  tx: Transaction,
  principal: Pick<UnitRecord, 'model' | 'name' | 'version'>,
  subordinates: readonly string[],
): void {
  tx.update(unitKey(principal.model, principal.name), 'SET subordinates = :s, version = :next', {
    condition: 'version = :v',
    values: {
      ':s': subordinates,
      ':v': principal.version ?? 0,
      ':next': (principal.version ?? 0) + 1,
    },
  });
}

/** A subordinate unit written beside its principal: its item, and its name on the principal's list. */
export function attachSubordinateUnit(
  tx: Transaction,
  principal: Pick<UnitRecord, 'model' | 'name' | 'version' | 'subordinates'>,
  sub: UnitRecord,
): void {
  tx.put(unitItem(sub), 'attribute_not_exists(pk)');
  setUnitSubordinates(tx, principal, [...principal.subordinates, sub.name]);
}
