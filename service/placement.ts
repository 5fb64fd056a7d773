import {
  checkAddMachine,
  checkContainerOnHostBase,
  containerImage,
  parseRequestBase,
  baseToString,
  parsePlacement,
  PlacementError,
  placementToString,
  type Placement,
  type Constraints,
} from '../core';

/** Parses add-machine's placement with Juju's rules (`-n` with a directive refused; no existing machine id). */
export function parseMachinePlacement(
  text: string | undefined,
  count: number,
  constraints?: Constraints,
): Placement | undefined {
  const placement = text === undefined || text === '' ? undefined : parsePlacement(text);
  checkAddMachine({ count, placement, constraints });
  return placement;
}

/** Parses deploy/add-unit `to` directives; `ssh:` belongs to add-machine only. */
export function parseUnitPlacements(directives: readonly string[]): Placement[] {
  return directives.map((text) => {
    const placement = parsePlacement(text);
    if (placement === undefined) throw new PlacementError(`invalid placement "${text}"`);
    if (placement.kind === 'ssh') {
      throw new PlacementError(`placement "${text}" is only valid when adding a machine`);
    }
    return placement;
  });
}

export function placementText(p: Placement | undefined): string | undefined {
  return p === undefined ? undefined : placementToString(p);
}

/**
 * A request's base in canonical form (`ubuntu@22.04`): it parses, its OS is
 * known and its track holds no shell word (core's parseRequestBase); throws
 * InvalidBaseError (400 bad-request) naming the base otherwise.
 */
export function validateBase(text: string): string {
  return baseToString(parseRequestBase(text));
}

/**
 * A new container's base: one LXD has an image for (InvalidBaseError, 400)
 * and, on an existing host, of an OS that host can run
 * (BaseMismatchError, 400 base-mismatch).
 */
export function checkContainerBase(containerBase: string, hostBase?: string): void {
  containerImage(containerBase);
  if (hostBase !== undefined) checkContainerOnHostBase(containerBase, hostBase);
}
