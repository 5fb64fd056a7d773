import { CoreError } from './errors';
import { matchingInstanceTypes, type InstanceTypeInfo } from './instance-types';
import type { Constraints } from './constraints';

/**
 * The instance type a machine is launched as, the same for the worker's
 * launch (activities/plan.ts) and the API's plan (service/plans.ts). Pure:
 * the offerings are asked through the function the caller passes.
 */

/** The machine cannot be launched as it stands (constraints, type, image): it goes to error at once. */
export class LaunchPlanError extends Error {
  override readonly name = 'LaunchPlanError';
}

/** The catalogue with each type's price as its cost (core orders by it, then by waste). */
export function priced<T extends InstanceTypeInfo>(
  catalogue: readonly T[],
  prices: ReadonlyMap<string, number> | undefined,
): T[] {
  return catalogue.map((t) => {
    const price = prices?.get(t.name);
    return price === undefined ? t : { ...t, cost: price };
  });
}

/** What the instance-type choice needs: the same for a launch and for a plan (service/plans.ts). */
export interface TypeChoiceInputs {
  region: string;
  /** The machine's constraints, parsed. */
  constraints: Constraints;
  /** The machine's constraints as text (for the error). */
  constraintsText: string;
  /** The zone a `zone=` placement (or a `subnet=` placement's subnet) allows, if any. */
  placementZone?: string;
  catalogue: readonly InstanceTypeInfo[];
  prices?: ReadonlyMap<string, number>;
  /** The region's zone names. */
  zones: readonly string[];
  zonesOffering(instanceType: string, zones: readonly string[]): Promise<string[]>;
}

/**
 * The instance type a machine is launched as: the cheapest, least wasteful
 * type that satisfies its constraints (core's matching, by price then waste)
 * and is offered in at least one zone the machine may use (its `zones`
 * constraint and placement). Throws LaunchPlanError with the message the
 * machine's status shows.
 */
export async function chooseInstanceType(
  inputs: TypeChoiceInputs,
): Promise<{ chosen: InstanceTypeInfo; zonesConstraint: string[] }> {
  const { region, constraints, placementZone } = inputs;
  let candidates: InstanceTypeInfo[];
  try {
    candidates = matchingInstanceTypes(
      region,
      priced(inputs.catalogue, inputs.prices),
      constraints,
    );
  } catch (err) {
    if (err instanceof CoreError) throw new LaunchPlanError(err.message);
    throw err;
  }
  const zonesConstraint = [...(constraints.zones ?? [])];
  const allowed = inputs.zones.filter(
    (z) =>
      (zonesConstraint.length === 0 || zonesConstraint.includes(z)) &&
      (placementZone === undefined || z === placementZone),
  );
  if (allowed.length === 0) {
    // the zones asked for (placement, `zones` constraint) are none the region has: name them
    const asked = [...(placementZone === undefined ? [] : [placementZone]), ...zonesConstraint];
    const unknown = asked.filter((z) => !inputs.zones.includes(z));
    const named = (unknown.length > 0 ? unknown : asked).map((z) => `"${z}"`).join(', ');
    throw new LaunchPlanError(
      `availability zone ${named} not valid: region ${region} has ${inputs.zones.join(', ') || 'no zones'}`,
    );
  }
  for (const candidate of candidates) {
    if ((await inputs.zonesOffering(candidate.name, allowed)).length > 0) {
      return { chosen: candidate, zonesConstraint };
    }
  }
  throw new LaunchPlanError(
    `no instance type matching constraints "${inputs.constraintsText}" is offered in ${allowed.join(', ')} (region ${region})`,
  );
}
