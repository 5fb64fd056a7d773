import { EntityNotFoundError, retryOnConcurrentChange } from '../state/errors';
import { attachSubordinateUnit } from '../state/unit-writes';
import { guardModelAndApp } from '../state/writes';
import type { ApplicationRecord, UnitRecord } from '../state/types';
import type { ServiceContext } from './context';
import { newUnit } from './records';

/** Principal units whose subordinate units one transaction adds: 3 checks + 2 items each, under 100. */
const UNITS_PER_TRANSACTION = 40;

const missingSubordinate = (unit: UnitRecord, subordinate: string) =>
  unit.principal === undefined &&
  unit.life === 'alive' &&
  !unit.subordinates.some((s) => s.startsWith(`${subordinate}/`));

/**
 * relate: a subordinate application gets one unit on each principal unit's
 * machine (bases must match), and on each principal unit added later.
 *
 * The units go in transactions of up to 40, one after another: every one
 * holds the model and both applications, so transactions run side by side
 * would conflict with each other on DynamoDB (TransactionConflict) and spend
 * their retries doing so. Only units still without a subordinate of this
 * application are written, so running it again completes a fan-out that
 * was cut off (a re-relate does, see service/applications.ts).
 */
export async function addSubordinateUnits(
  ctx: ServiceContext,
  model: string,
  principal: ApplicationRecord,
  subordinate: ApplicationRecord,
): Promise<void> {
  const units = (await ctx.repo.listUnits(model, principal.name)).filter((u) =>
    missingSubordinate(u, subordinate.name),
  );
  for (let start = 0; start < units.length; start += UNITS_PER_TRANSACTION) {
    const chunk = units.slice(start, start + UNITS_PER_TRANSACTION);
    const numbers = await ctx.repo.allocateUnitNumbers(model, subordinate.name, chunk.length);
    const now = ctx.now().toISOString();
    await retryOnConcurrentChange(async () => {
      const current = (
        await Promise.all(
          chunk.map((u) =>
            ctx.repo.getUnit(model, u.name).catch((err: unknown) => {
              if (err instanceof EntityNotFoundError) return undefined; // removed meanwhile
              throw err;
            }),
          ),
        )
      ).map((u, i) => ({ unit: u, number: numbers[i]! }));
      const todo = current.filter(
        (c): c is { unit: UnitRecord; number: number } =>
          c.unit !== undefined && missingSubordinate(c.unit, subordinate.name),
      );
      if (todo.length === 0) return;
      const tx = ctx.repo.transaction();
      guardModelAndApp(tx, model, [principal.name, subordinate.name]);
      for (const { unit, number } of todo) {
        const sub = newUnit({
          model,
          application: subordinate.name,
          number,
          machine: unit.machine,
          constraints: '',
          principal: unit.name,
          now,
        });
        attachSubordinateUnit(tx, unit, sub);
      }
      await ctx.repo.commit(tx);
    });
  }
}

/** True when some alive principal unit still lacks its unit of `subordinate` (a fan-out cut off). */
export async function fanOutIncomplete(
  ctx: ServiceContext,
  model: string,
  principal: string,
  subordinate: string,
): Promise<boolean> {
  return (await ctx.repo.listUnits(model, principal)).some((u) =>
    missingSubordinate(u, subordinate),
  );
}

/** The subordinate applications related to `app`. */
export async function relatedSubordinates(
  ctx: ServiceContext,
  model: string,
  app: string,
): Promise<ApplicationRecord[]> {
  const relations = await ctx.repo.listRelations(model);
  const others = relations
    .filter((r) => r.endpoints.includes(app))
    .map((r) => (r.endpoints[0] === app ? r.endpoints[1] : r.endpoints[0]));
  const apps = await Promise.all(others.map((name) => ctx.repo.getApplication(model, name)));
  return apps.filter((a) => a.subordinate && a.life === 'alive');
}
