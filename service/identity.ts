import {
  AdminCreateUserCommand,
  AdminDeleteUserCommand,
  AdminGetUserCommand,
  AdminSetUserPasswordCommand,
  AdminUserGlobalSignOutCommand,
  CognitoIdentityProviderClient,
  InvalidParameterException,
  InvalidPasswordException,
  UsernameExistsException,
  UserNotFoundException,
} from '@aws-sdk/client-cognito-identity-provider';
import { ADMIN_USER, type ControllerAccess, type ModelAccess } from '../core/access';
import { localCredentialsFor } from '../config/clients';
import type { IdentitySettings } from '../config/identity';
import type { AccessStore } from '../state/access';
import { EntityConflictError, EntityNotFoundError } from '../state/errors';
import type { Repository } from '../state/repository';
import { DependencyUnavailableError, InvalidRequestError } from './errors';
import { NAME_PATTERN } from './names';

/**
 * The user pool's admin API, as the provisioner uses it: exactly
 * AdminCreateUser, AdminSetUserPassword, AdminGetUser, AdminDeleteUser and
 * AdminUserGlobalSignOut (the CDK grants these and no other).
 */
export interface UserPool {
  /** Creates the user with a permanent password; resolves to the user's `sub`. */
  createUser(name: string, password: string): Promise<string | undefined>;
  /**
   * A user the pool has (made elsewhere, e.g. in the console): their
   * `username` as the pool spells it and their `sub`; undefined: no such
   * user. The pool may find a user by an alias (`preferred_username`, email,
   * `sub`) or by the name in another case; only `username` says who it is.
   */
  findUser(name: string): Promise<{ username?: string; sub?: string } | undefined>;
  /** Revokes the user's refresh tokens, then deletes the user; a user not in the pool is `false`. */
  removeUser(name: string): Promise<boolean>;
}

export class CognitoUserPool implements UserPool {
  private readonly client: CognitoIdentityProviderClient;

  constructor(
    private readonly userPoolId: string,
    region: string,
    endpoint?: string,
  ) {
    const credentials = localCredentialsFor(endpoint);
    this.client = new CognitoIdentityProviderClient({
      region,
      ...(endpoint ? { endpoint } : {}),
      ...(credentials ? { credentials } : {}),
    });
  }

  async createUser(name: string, password: string): Promise<string | undefined> {
    let sub: string | undefined;
    try {
      const out = await this.client.send(
        new AdminCreateUserCommand({
          UserPoolId: this.userPoolId,
          Username: name,
          MessageAction: 'SUPPRESS',
        }),
      );
      sub = out.User?.Attributes?.find((a) => a.Name === 'sub')?.Value;
    } catch (err) {
      if (err instanceof UsernameExistsException)
        throw new EntityConflictError(`user "${name}" already exists`);
      throw unavailable(err);
    }
    try {
      await this.client.send(
        new AdminSetUserPasswordCommand({
          UserPoolId: this.userPoolId,
          Username: name,
          Password: password,
          Permanent: true,
        }),
      );
    } catch (err) {
      // no user is left behind with a password nobody knows
      await this.client
        .send(new AdminDeleteUserCommand({ UserPoolId: this.userPoolId, Username: name }))
        .catch(() => undefined);
      if (err instanceof InvalidPasswordException || err instanceof InvalidParameterException) {
        // the pool's reason, never the password (even should the pool quote it)
        const reason = (err.message || 'it does not meet the password policy')
          .split(password || '\u0000')
          .join('***');
        throw new InvalidRequestError(`password refused by the user pool: ${reason}`);
      }
      throw unavailable(err);
    }
    return sub;
  }

  async findUser(name: string): Promise<{ username?: string; sub?: string } | undefined> {
    try {
      const out = await this.client.send(
        new AdminGetUserCommand({ UserPoolId: this.userPoolId, Username: name }),
      );
      const sub = out.UserAttributes?.find((a) => a.Name === 'sub')?.Value;
      return {
        ...(out.Username !== undefined ? { username: out.Username } : {}),
        ...(sub ? { sub } : {}),
      };
    } catch (err) {
      if (err instanceof UserNotFoundException) return undefined;
      throw unavailable(err);
    }
  }

  async removeUser(name: string): Promise<boolean> {
    try {
      await this.client.send(
        new AdminUserGlobalSignOutCommand({ UserPoolId: this.userPoolId, Username: name }),
      );
      await this.client.send(
        new AdminDeleteUserCommand({ UserPoolId: this.userPoolId, Username: name }),
      );
      return true;
    } catch (err) {
      if (err instanceof UserNotFoundException) return false;
      throw unavailable(err);
    }
  }
}

function unavailable(err: unknown): Error {
  return new DependencyUnavailableError(
    `the user pool could not be asked: ${err instanceof Error ? err.name : 'error'}`,
  );
}

export interface IdentityContext {
  settings: IdentitySettings;
  access: AccessStore;
  repo: Repository;
  /** Absent when the deployment has no pool: only the admin token works then. */
  pool?: UserPool;
  now(): Date;
}

function checkUserName(name: string): void {
  if (!NAME_PATTERN.test(name))
    throw new InvalidRequestError(`invalid user name "${name.slice(0, 100)}"`);
}

function requirePool(ctx: IdentityContext): UserPool {
  if (!ctx.pool) throw new EntityNotFoundError('this deployment has no user pool');
  return ctx.pool;
}

/** Juju's add-user: the user is created in the pool with that permanent password, and has `login`. */
export async function addUser(
  ctx: IdentityContext,
  name: string,
  password: string,
): Promise<{ name: string; access: ControllerAccess }> {
  checkUserName(name);
  if (name === ADMIN_USER) throw new EntityConflictError(`user "${name}" already exists`);
  const pool = requirePool(ctx);
  const state = await ctx.access.getUser(name);
  if (state.kind === 'user') throw new EntityConflictError(`user "${name}" already exists`);
  // grants are by name: a new user of a removed one's name starts with none
  if (state.kind === 'removed') {
    const models = (await ctx.repo.listModels()).map((m) => m.name);
    await ctx.access.dropGrantsOf(name, models);
  }
  const sub = await pool.createUser(name, password);
  await ctx.access.createUser({
    name,
    access: 'login',
    ...(sub ? { sub } : {}),
    createdAt: ctx.now().toISOString(),
  });
  return { name, access: 'login' };
}

export async function listUsers(
  ctx: IdentityContext,
): Promise<Array<{ name: string; access: ControllerAccess }>> {
  const users = (await ctx.access.listUsers())
    .map((u) => ({ name: u.name, access: u.access }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return ctx.settings.adminTokenEnabled
    ? [{ name: ADMIN_USER, access: 'superuser' }, ...users]
    : users;
}

/**
 * remove-user, safe to repeat at any step: from the tombstone on, every token
 * of the user is refused (functions/access.ts reads it on every request, and
 * refuses while it exists); then their grants go, then the pool forgets the
 * user and their refresh tokens. The tombstone has no expiry until the pool
 * has forgotten the user: a removal cut off after the tombstone leaves the
 * user locked out, never back with their grants; repeating it finishes it.
 */
export async function removeUser(ctx: IdentityContext, name: string): Promise<void> {
  checkUserName(name);
  if (name === ADMIN_USER) throw new EntityConflictError(`cannot remove user "${ADMIN_USER}"`);
  const pool = requirePool(ctx);
  const state = await ctx.access.getUser(name);
  if (state.kind === 'removed' && state.finished)
    throw new EntityNotFoundError(`user "${name}" not found`);
  if (state.kind === 'unknown') {
    // not ours: the pool decides whether the user exists
    if (!(await pool.removeUser(name))) throw new EntityNotFoundError(`user "${name}" not found`);
  }
  await ctx.access.removeUser(name, ctx.now(), { expires: false });
  const models = (await ctx.repo.listModels()).map((m) => m.name);
  await ctx.access.dropGrantsOf(name, models);
  // a user already gone from the pool (a cut-off removal repeated) is fine
  if (state.kind !== 'unknown') await pool.removeUser(name);
  await ctx.access.removeUser(name, ctx.now(), { expires: true });
}

/**
 * A user a grant may name: one the provisioner has a record of, or one the
 * pool has that it has not met yet (made in the console, or in an existing
 * pool given by config), who is adopted here: recorded with `login`, the
 * access every pool user has (API.md), and the pool's `sub`. The pool's
 * user must be named exactly `name` (the pool also finds users by an alias
 * or in another case, whose tokens carry another name). A user neither
 * knows is `404`. A removal cut off half way (its tombstone not finished) is
 * not undone by a grant: that user stays unknown until the removal is
 * repeated.
 *
 * The writes hold only while the state read first still holds: the old
 * grants of a removed name are dropped only while its tombstone is the one
 * read, and the record replaces only that (no item, or that tombstone). A
 * removal or another user of the name that came meanwhile wins: the state is
 * read again, and the grant goes on only if it is now a live user.
 */
async function requireKnownUser(ctx: IdentityContext, name: string): Promise<void> {
  checkUserName(name);
  if (name === ADMIN_USER && ctx.settings.adminTokenEnabled) return;
  const state = await ctx.access.getUser(name);
  if (state.kind === 'user') return;
  const notFound = new EntityNotFoundError(`user "${name}" not found`);
  if (name === ADMIN_USER || !ctx.pool) throw notFound;
  if (state.kind === 'removed' && !state.finished) throw notFound;
  const found = await ctx.pool.findUser(name);
  if (!found || found.username !== name) throw notFound;
  const settled = async (): Promise<void> => {
    if ((await ctx.access.getUser(name)).kind !== 'user') throw notFound;
  };
  // a user of a removed one's name starts with none of their grants (as addUser)
  if (state.kind === 'removed') {
    const models = (await ctx.repo.listModels()).map((m) => m.name);
    const dropped = await ctx.access.dropGrantsOf(name, models, {
      whileRemovedAt: state.removedAt,
    });
    if (!dropped) return settled();
  }
  try {
    await ctx.access.createUser(
      {
        name,
        access: 'login',
        ...(found.sub ? { sub: found.sub } : {}),
        createdAt: ctx.now().toISOString(),
      },
      { replacing: state.kind === 'unknown' ? 'nothing' : { removedAt: state.removedAt } },
    );
  } catch (err) {
    // something was written meanwhile: an adoption by a concurrent grant is fine, a removal is not
    if (!(err instanceof EntityConflictError)) throw err;
    await settled();
  }
}

export async function setControllerAccess(
  ctx: IdentityContext,
  name: string,
  access: ControllerAccess,
): Promise<{ user: string; access: ControllerAccess }> {
  checkUserName(name);
  if (name === ADMIN_USER)
    throw new EntityConflictError(`user "${ADMIN_USER}" is always a superuser`);
  await requireKnownUser(ctx, name);
  await ctx.access.setControllerAccess(name, access, ctx.now());
  return { user: name, access };
}

export async function setModelAccess(
  ctx: IdentityContext,
  model: string,
  name: string,
  access: ModelAccess,
): Promise<{ user: string; access: ModelAccess }> {
  await ctx.repo.getModel(model);
  await requireKnownUser(ctx, name);
  const adminToken = name === ADMIN_USER && ctx.settings.adminTokenEnabled;
  await ctx.access.changeModelAccess(model, name, access, { userMustExist: !adminToken });
  return { user: name, access };
}

export async function revokeModelAccess(
  ctx: IdentityContext,
  model: string,
  name: string,
): Promise<void> {
  checkUserName(name);
  await ctx.repo.getModel(model);
  await ctx.access.changeModelAccess(model, name, undefined);
}

export async function modelAccessList(
  ctx: IdentityContext,
  model: string,
): Promise<Array<{ user: string; access: ModelAccess }>> {
  await ctx.repo.getModel(model);
  const grants = await ctx.access.modelGrants(model);
  return Object.entries(grants.users)
    .map(([user, access]) => ({ user, access }))
    .sort((a, b) => a.user.localeCompare(b.user));
}
