import { needsNewHost } from '../core';
import { ContendedError } from '../state/errors';
import { requestStep, type ServiceContext } from './context';
import { isRefusal } from './errors';
import { decideAddUnits } from './unit-decision';
import { undoUnits, type RecordedUnit } from './unit-undo';
import { addUnitsInBulk } from './units-bulk';
import { addUnitsOneByOne } from './units-one-by-one';
import type { PlacedUnitView } from './views';
import { startWorkflows, withPrincipals } from './workflow-start';
import { creationHint } from '../temporal/created-machine';

/**
 * add-unit's writes. The policies it composes live one to a file: the checks
 * of a directive (core/unit-placement.ts) and against the model's machines
 * (unit-placement.ts), the decision before any write (unit-decision.ts), its
 * dry run (unit-plan.ts), the two write strategies (units-bulk.ts,
 * units-one-by-one.ts, their items in state/unit-writes.ts), the workflow
 * start (workflow-start.ts) and the undo of a refused request (unit-undo.ts).
 */

/** A unit as add-unit and deploy answer it (its schema: functions/schemas.ts). */
export type PlacedUnit = PlacedUnitView;

/**
 * deploy and add-unit: `count` principal units of `app`, one placement
 * directive each (the rest get new machines; extra directives are ignored, as
 * Juju's CLI does), each unit written in its own transaction together with
 * its machine (new, or updated under its version) and one subordinate unit
 * per related subordinate application. Unit and machine numbers come from
 * atomic counters; a write that loses a race is retried inside.
 */
export async function addUnits(
  ctx: ServiceContext,
  modelName: string,
  appName: string,
  count: number,
  directives: readonly string[] = [],
): Promise<PlacedUnit[]> {
  const decided = await decideAddUnits(ctx, modelName, appName, count, directives);
  if (decided === undefined) return [];
  const { model, app, placements, constraints } = decided;
  const numbers = await requestStep(ctx, 'unitNumbers', () =>
    ctx.repo.allocateUnitNumbers(modelName, appName, count),
  );
  const hosts = Array.from({ length: count }, (_, i) => placements[i]).filter(needsNewHost).length;
  // a copy: it is cut below, and the step's memo must keep every id for a retry
  const machineIds = [
    ...(await requestStep(ctx, 'machineIds', () => ctx.repo.allocateMachineIds(modelName, hosts))),
  ];

  // Units with no placement directive (the bulk of a large request) are written together,
  // after the directed ones: those are the units a race can refuse (their machine being
  // destroyed meanwhile), and a refusal then finds nothing of the bulk written. What the
  // directed units wrote before a refusal is taken back: all or nothing.
  const direct = placements.length === 0 ? count : Math.max(0, count - placements.length);
  const bulkStart = count - direct;
  const recorded: RecordedUnit[] = [];
  try {
    if (direct > 1) {
      const bulkHosts = machineIds.slice(machineIds.length - direct);
      machineIds.length -= direct;
      const directed = await addUnitsOneByOne(ctx, {
        model,
        app,
        constraints,
        numbers: numbers.slice(0, bulkStart),
        placements: placements.slice(0, bulkStart),
        machineIds,
        recorded,
      });
      const { units: written, namingUid } = await addUnitsInBulk(ctx, {
        model,
        app,
        constraints,
        units: numbers.slice(bulkStart).map((n, i) => ({ number: n, hostId: bulkHosts[i]! })),
      });
      // handed what was written: the machines a lost race sent one by one do not name the
      // model's uid, and a claim made from a hint that says so would only be refused
      const hinted = written.filter((u) => namingUid.has(u.machine));
      const others = written.filter((u) => !namingUid.has(u.machine));
      await startWorkflows(
        ctx,
        modelName,
        hinted.map((u) => u.machine),
        withPrincipals(
          creationHint(model, { base: app.base, constraints, applications: [app.name] }),
          hinted,
        ),
      );
      await startWorkflows(
        ctx,
        modelName,
        others.map((u) => u.machine),
      );
      return [...directed, ...written];
    }
    return await addUnitsOneByOne(ctx, {
      model,
      app,
      constraints,
      numbers,
      placements: Array.from({ length: count }, (_, i) => placements[i]),
      machineIds,
      recorded,
    });
  } catch (err) {
    // Ours (a 5xx) with an Idempotency-Key: the retry completes the request from its steps.
    // Bulk units a refusal left are the concurrent destroy's (only a dying model or
    // application refuses them), which removes them.
    // A ContendedError (code 'conflict') is ours too: contention, not a refusal, and
    // undoing the directed units would leave the committed bulk chunks behind.
    const refused = isRefusal(err) && !(err instanceof ContendedError);
    if (refused || !ctx.step) await undoUnits(ctx, modelName, recorded);
    throw err;
  }
}
