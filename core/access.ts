/**
 * Juju's access levels (API.md, "Identity, access and audit"): on the
 * controller `login` < `add-model` < `superuser`; on a model `read` <
 * `write` < `admin`. Each level includes those below it; a superuser has
 * `admin` on every model. Plain data and comparisons, no I/O.
 */
export const CONTROLLER_LEVELS = ['login', 'add-model', 'superuser'] as const;
export type ControllerAccess = (typeof CONTROLLER_LEVELS)[number];

export const MODEL_LEVELS = ['read', 'write', 'admin'] as const;
export type ModelAccess = (typeof MODEL_LEVELS)[number];

/**
 * What a route needs: `none` (no token at all), a controller level, or a
 * level on the route's `{model}`.
 */
export type RouteAccess =
  | { kind: 'none' }
  | { kind: 'controller'; level: ControllerAccess }
  | { kind: 'model'; level: ModelAccess };

export function isControllerAccess(value: unknown): value is ControllerAccess {
  return (CONTROLLER_LEVELS as readonly unknown[]).includes(value);
}

export function isModelAccess(value: unknown): value is ModelAccess {
  return (MODEL_LEVELS as readonly unknown[]).includes(value);
}

export function controllerAtLeast(have: ControllerAccess, need: ControllerAccess): boolean {
  return CONTROLLER_LEVELS.indexOf(have) >= CONTROLLER_LEVELS.indexOf(need);
}

/** `have` undefined means no access to the model at all. */
export function modelAtLeast(have: ModelAccess | undefined, need: ModelAccess): boolean {
  return have !== undefined && MODEL_LEVELS.indexOf(have) >= MODEL_LEVELS.indexOf(need);
}

/** The user the admin token acts as (API.md): a superuser, never a pool user. */
export const ADMIN_USER = 'admin';

/** Juju's text for access too low (apiserver/common: ErrPerm). */
export const PERMISSION_DENIED = 'permission denied';
