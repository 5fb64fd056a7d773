import { UsageError } from './errors';

/**
 * Juju's access levels and what `grant` and `revoke` make of them. The API
 * only sets a level (PUT) or removes a user's model access (DELETE); the
 * arithmetic of Juju's verbs lives here: grant only raises, revoke of a level
 * leaves the level below it.
 */
export const MODEL_LEVELS = ['read', 'write', 'admin'] as const;
export const CONTROLLER_LEVELS = ['login', 'add-model', 'superuser'] as const;

export type ModelLevel = (typeof MODEL_LEVELS)[number];
export type ControllerLevel = (typeof CONTROLLER_LEVELS)[number];
export type Level = ModelLevel | ControllerLevel;

export function isModelLevel(value: string): value is ModelLevel {
  return (MODEL_LEVELS as readonly string[]).includes(value);
}

export function isControllerLevel(value: string): value is ControllerLevel {
  return (CONTROLLER_LEVELS as readonly string[]).includes(value);
}

/**
 * The level a `grant`/`revoke` names, checked against whether a model was
 * named, in Juju's words: a controller level with a model, or a model level
 * without one, says which was meant.
 */
export function parseLevel(
  verb: 'grant' | 'revoke',
  level: string,
  model: string | undefined,
): Level {
  if (model !== undefined) {
    if (isControllerLevel(level))
      throw new UsageError(
        `You have specified a controller access permission "${level}". If you intended to change controller access, do not specify a model name. See "provisioner ${verb} --help".`,
      );
    if (!isModelLevel(level))
      throw new UsageError(
        `model access permission "${level}" not valid (one of ${MODEL_LEVELS.join(', ')})`,
      );
    return level;
  }
  if (isModelLevel(level))
    throw new UsageError(
      `You have specified a model access permission "${level}". If you intended to change model access, you need to specify a model name. See "provisioner ${verb} --help".`,
    );
  if (!isControllerLevel(level))
    throw new UsageError(
      `controller access permission "${level}" not valid (one of ${CONTROLLER_LEVELS.join(', ')})`,
    );
  return level;
}

function ladder(level: Level): readonly Level[] {
  return isModelLevel(level) ? MODEL_LEVELS : CONTROLLER_LEVELS;
}

function rank(level: Level): number {
  return ladder(level).indexOf(level);
}

/** What a change does: set a level, remove the user's access to the model, or refuse. */
export type Change =
  { kind: 'set'; access: Level } | { kind: 'remove' } | { kind: 'refuse'; message: string };

/**
 * `grant USER LEVEL`: raises the user to `wanted`; a user who already has it
 * or more is refused with Juju's text. `current` is the user's level on the
 * same object (model or controller); undefined when they have none.
 */
export function grantChange(current: Level | undefined, wanted: Level): Change {
  if (current !== undefined && rank(current) >= rank(wanted))
    return { kind: 'refuse', message: `user already has "${wanted}" access or greater` };
  return { kind: 'set', access: wanted };
}

/**
 * `revoke USER LEVEL`: takes `revoked` away and leaves the level below it
 * (revoke admin leaves write, write leaves read, read leaves nothing; on the
 * controller superuser leaves add-model, add-model leaves login). A user who
 * does not hold `revoked` keeps what they have and the revoke is refused,
 * rather than raising them as a plain "set the level below" would. `login`
 * cannot be revoked: every user of the pool has it; removing the user is
 * `remove-user`.
 */
export function revokeChange(user: string, current: Level | undefined, revoked: Level): Change {
  if (revoked === 'login')
    return {
      kind: 'refuse',
      message: `cannot revoke "login" access: every user has it (use "provisioner remove-user ${user}")`,
    };
  if (current === undefined || rank(current) < rank(revoked))
    return {
      kind: 'refuse',
      message:
        current === undefined
          ? `user "${user}" has no access to revoke`
          : `user "${user}" does not have "${revoked}" access (has "${current}")`,
    };
  const below = ladder(revoked)[rank(revoked) - 1];
  return below === undefined ? { kind: 'remove' } : { kind: 'set', access: below };
}
