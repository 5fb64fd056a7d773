import { EntityConflictError } from './errors';
import { appKey, relationItem } from './items';
import type { Transaction } from './table';
import type { ApplicationRecord, RelationRecord } from './types';

/**
 * Named items of the application and relation transactions (set-constraints,
 * relate, remove-application): each item's condition lives here, not in service/.
 */

/**
 * An application's constraints, set only while it is alive and a principal
 * (else "application … is being destroyed").
 */
export function setApplicationConstraints(
  tx: Transaction,
  model: string,
  app: string,
  constraints: string,
): void {
  tx.update(appKey(model, app), 'SET #c = :c', {
    condition: 'life = :alive AND subordinate = :false',
    names: { '#c': 'constraints' },
    values: { ':c': constraints, ':alive': 'alive', ':false': false },
    onFail: new EntityConflictError(`application "${app}" is being destroyed`),
  });
}

/**
 * An application's version bumped while it is alive and unchanged since read:
 * a unit being added to it concurrently retries (ConcurrentChangeError on a lost race).
 */
export function bumpApplicationVersion(
  tx: Transaction,
  app: Pick<ApplicationRecord, 'model' | 'name' | 'version'>,
): void {
  tx.update(appKey(app.model, app.name), 'SET version = :next', {
    condition: 'life = :alive AND version = :v',
    values: { ':alive': 'alive', ':v': app.version ?? 0, ':next': (app.version ?? 0) + 1 },
  });
}

/** A new relation's item, written only where none is; `exists` is raised when one is. */
export function createRelation(tx: Transaction, relation: RelationRecord, exists: Error): void {
  tx.put(relationItem(relation), 'attribute_not_exists(pk)', undefined, exists);
}

/** A relation's item goes (no condition: one gone meanwhile is gone). */
export function deleteRelation(tx: Transaction, relation: RelationRecord): void {
  const item = relationItem(relation);
  tx.delete({ pk: String(item.pk), sk: String(item.sk) });
}

/** An application's item goes (no condition). */
export function deleteApplication(tx: Transaction, model: string, app: string): void {
  tx.delete(appKey(model, app));
}

/** An application goes Dying where it still exists (ConcurrentChangeError when it is gone). */
export function markApplicationDying(tx: Transaction, model: string, app: string): void {
  tx.update(appKey(model, app), 'SET life = :dying', {
    condition: 'attribute_exists(pk)',
    values: { ':dying': 'dying' },
  });
}
