import { ConcurrentChangeError } from '../state/errors';
import { TRANSACTION_LIMIT } from '../state/repository';
import type { ApplicationRecord, ModelRecord } from '../state/types';
import { guardUnitWrite } from '../state/unit-writes';
import { createMachine, createUnit } from '../state/writes';
import { requestStep, type ServiceContext } from './context';
import { newMachine, newUnit } from './records';
import { relatedSubordinates } from './subordinates';
import { addUnitsOneByOne } from './units-one-by-one';
import type { PlacedUnitView } from './views';

/**
 * Units on new machines of their own, many to a transaction: each
 * transaction holds the model alive, the application alive at the version
 * read (a relation made meanwhile moves it), the related subordinate
 * applications alive, and for each unit its machine and subordinate units.
 * Transactions run one after another (they share the model and application
 * items, which concurrent transactions would conflict on). A transaction that
 * loses a race hands its units to the one-by-one path, which retries inside.
 * Each committed transaction is one request step, so a retried request with
 * the same Idempotency-Key does not write it again.
 */
export async function addUnitsInBulk(
  ctx: ServiceContext,
  args: {
    model: ModelRecord;
    app: ApplicationRecord;
    constraints: string;
    units: ReadonlyArray<{ number: number; hostId: string }>;
  },
): Promise<{ units: PlacedUnitView[]; namingUid: Set<string> }> {
  const { model, app } = args;
  const subordinates = await relatedSubordinates(ctx, model.name, app.name);
  const perUnit = 2 + subordinates.length;
  const fixed = 2 + subordinates.length;
  const chunkSize = Math.max(1, Math.floor((TRANSACTION_LIMIT - fixed) / perUnit));
  const subNumbers = await requestStep(ctx, 'subordinateNumbers', async () => {
    const out: Record<string, number[]> = {};
    for (const sub of subordinates) {
      out[sub.name] = await ctx.repo.allocateUnitNumbers(model.name, sub.name, args.units.length);
    }
    return out;
  });
  const now = ctx.now().toISOString();
  // the caller hands the new machines' workflows what is written here
  // (workflow-start.ts creationHint): they name the model's uid
  const uid = model.uid ? model.uid : undefined;
  const placed: PlacedUnitView[] = [];
  // the machines written here, naming the model's uid (not those of the fallback below)
  const namingUid = new Set<string>();
  for (let start = 0; start < args.units.length; start += chunkSize) {
    const chunk = args.units.slice(start, start + chunkSize);
    const committed = await requestStep(ctx, `units-${start}`, async () => {
      const tx = ctx.repo.transaction();
      guardUnitWrite(tx, model.name, app, subordinates, uid);
      chunk.forEach((u, i) => {
        const unitName = `${app.name}/${u.number}`;
        createMachine(
          tx,
          newMachine({
            model: model.name,
            id: u.hostId,
            base: app.base,
            constraints: args.constraints,
            principals: [unitName],
            applications: [app.name],
            ...(uid ? { modelUid: uid } : {}),
            requestedBy: ctx.user,
            now,
          }),
        );
        const subUnits = subordinates.map((sub) =>
          newUnit({
            model: model.name,
            application: sub.name,
            number: subNumbers[sub.name]![start + i]!,
            machine: u.hostId,
            constraints: '',
            principal: unitName,
            now,
          }),
        );
        createUnit(
          tx,
          newUnit({
            model: model.name,
            application: app.name,
            number: u.number,
            machine: u.hostId,
            constraints: args.constraints,
            subordinates: subUnits.map((x) => x.name),
            now,
          }),
        );
        for (const sub of subUnits) createUnit(tx, sub);
      });
      try {
        await ctx.repo.commit(tx);
        return true;
      } catch (err) {
        if (err instanceof ConcurrentChangeError) return false;
        throw err;
      }
    });
    if (committed) {
      placed.push(...chunk.map((u) => ({ name: `${app.name}/${u.number}`, machine: u.hostId })));
      if (uid) for (const u of chunk) namingUid.add(u.hostId);
      continue;
    }
    // lost a race (a relation, another writer): these units go one by one, re-reading as they go
    placed.push(
      ...(await addUnitsOneByOne(ctx, {
        model,
        app,
        constraints: args.constraints,
        numbers: chunk.map((u) => u.number),
        placements: chunk.map(() => undefined),
        machineIds: chunk.map((u) => u.hostId),
        startWorkflowsToo: false,
      })),
    );
  }
  return { units: placed, namingUid };
}
