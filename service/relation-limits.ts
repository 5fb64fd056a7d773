import { EntityConflictError } from '../state/errors';
import type { ApplicationRecord } from '../state/types';
import type { ServiceContext } from './context';

/**
 * The most subordinate applications one principal may be related to. A
 * principal unit is written in one DynamoDB transaction (100 items at most)
 * with its machine and one unit per related subordinate, each subordinate
 * application checked alive: 5 + 2 × S items at worst (a container on a new
 * host), so S ≤ 47. Juju has no such limit; DynamoDB's transactions make one.
 */
export const MAX_SUBORDINATES_PER_PRINCIPAL = 47;

/**
 * Refuses (409) a relation that would give `principal` more related
 * subordinate applications than its units' writes can hold, before anything
 * is recorded: otherwise its next unit could never be written.
 */
export async function checkSubordinateRoom(
  ctx: ServiceContext,
  model: string,
  principal: ApplicationRecord,
  subordinate: string,
): Promise<void> {
  const others = (await ctx.repo.listRelations(model))
    .filter((r) => r.endpoints.includes(principal.name))
    .map((r) => (r.endpoints[0] === principal.name ? r.endpoints[1] : r.endpoints[0]))
    .filter((name) => name !== subordinate); // relating again completes, never adds
  if (others.length < MAX_SUBORDINATES_PER_PRINCIPAL) return;
  const apps = await Promise.all(
    others.map((name) => ctx.repo.getApplication(model, name).catch(() => undefined)),
  );
  const subordinates = apps.filter((a) => a?.subordinate).length;
  if (subordinates >= MAX_SUBORDINATES_PER_PRINCIPAL) {
    throw new EntityConflictError(
      `application "${principal.name}" already has ${subordinates} subordinate applications related, ` +
        `the most one principal may have (each of its units is written with all of its subordinate units in one transaction)`,
    );
  }
}
