/**
 * Harvest policy (Juju's model config `provisioner-harvest-mode`): which
 * instances the provisioner may terminate on its own. The sweep asks
 * `harvestsStrays`; a Dead machine's teardown asks `harvestsDestroyed`.
 */

/** Harvest modes under which the sweep terminates unknown instances (Juju's `unknown` and `all`). */
export function harvestsStrays(mode: string): boolean {
  return mode === 'unknown' || mode === 'all';
}

/** Harvest modes under which a Dead machine's instance is terminated (Juju's `destroyed` and `all`). */
export function harvestsDestroyed(mode: string): boolean {
  return mode === 'destroyed' || mode === 'all';
}
