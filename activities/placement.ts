import type { PlacementMachine } from '../state/provisioning';

/**
 * A machine's distribution group (DESIGN.md "Provisioning", step 2): the
 * other machines hosting a unit of any of its applications. A machine with
 * no applications (added on its own) is grouped with the model's other
 * machines that have none, so a batch of bare machines spreads too. Dead
 * machines are leaving and count nowhere.
 */
export function distributionGroup(
  machines: readonly PlacementMachine[],
  self: Pick<PlacementMachine, 'id' | 'applications'>,
): PlacementMachine[] {
  const mine = new Set(self.applications);
  return machines.filter((m) => {
    if (m.id === self.id || m.life === 'dead') return false;
    if (mine.size === 0) return m.applications.length === 0;
    return m.applications.some((a) => mine.has(a));
  });
}

/** How many machines of the group are in (or claimed for) each zone. */
export function groupPopulation(
  machines: readonly PlacementMachine[],
  self: Pick<PlacementMachine, 'id' | 'applications'>,
): Record<string, number> {
  const population: Record<string, number> = {};
  for (const m of distributionGroup(machines, self)) {
    const zone = m.zone ?? m.zoneClaim;
    if (zone) population[zone] = (population[zone] ?? 0) + 1;
  }
  return population;
}
