/* eslint-disable @typescript-eslint/require-await -- in-memory fakes keep the store's and the pool's async signatures */
import type { ModelAccess } from '../../../core/access';
import {
  setControllerAccess,
  setModelAccess,
  type IdentityContext,
  type UserPool,
} from '../../../service/identity';
import type { AccessStore, UserRecord, UserState } from '../../../state/access';
import { EntityConflictError, EntityNotFoundError } from '../../../state/errors';
import type { Repository } from '../../../state/repository';

/**
 * A grant that adopts a pool user (service/identity.ts requireKnownUser)
 * against what other requests write between its read and its writes. The
 * store is an in-memory stand-in that applies the same conditions as
 * state/access.ts writes to DynamoDB; the pool's lookup is where the other
 * request's writes are slipped in.
 */
type Item =
  { kind: 'user'; user: UserRecord } | { kind: 'removed'; removedAt: string; expiresAt?: number };

class FakeAccess {
  readonly users = new Map<string, Item>();
  readonly grants = new Map<string, Record<string, ModelAccess>>();

  async getUser(name: string): Promise<UserState> {
    const item = this.users.get(name);
    if (!item) return { kind: 'unknown' };
    if (item.kind === 'removed')
      return {
        kind: 'removed',
        removedAt: item.removedAt,
        finished: item.expiresAt !== undefined,
      };
    return { kind: 'user', user: { ...item.user } };
  }

  async createUser(
    user: UserRecord,
    options: { replacing?: 'nothing' | { removedAt: string } } = {},
  ): Promise<void> {
    const item = this.users.get(user.name);
    const { replacing } = options;
    const ok =
      replacing === undefined
        ? !item || item.kind === 'removed'
        : replacing === 'nothing'
          ? !item
          : item?.kind === 'removed' &&
            item.removedAt === replacing.removedAt &&
            item.expiresAt !== undefined;
    if (!ok) throw new EntityConflictError(`user "${user.name}" already exists`);
    this.users.set(user.name, { kind: 'user', user: { ...user } });
  }

  async setControllerAccess(name: string, access: UserRecord['access']): Promise<void> {
    const item = this.users.get(name);
    if (item?.kind !== 'user') throw new EntityNotFoundError(`user "${name}" not found`);
    item.user.access = access;
  }

  async changeModelAccess(
    model: string,
    user: string,
    level: ModelAccess | undefined,
    options: { userMustExist?: boolean } = {},
  ): Promise<void> {
    if (level !== undefined && options.userMustExist && this.users.get(user)?.kind !== 'user')
      throw new EntityNotFoundError(`user "${user}" not found`);
    const users = { ...(this.grants.get(model) ?? {}) };
    if (level === undefined) delete users[user];
    else users[user] = level;
    this.grants.set(model, users);
  }

  async dropGrantsOf(
    user: string,
    models: readonly string[],
    options: { whileRemovedAt?: string } = {},
  ): Promise<boolean> {
    for (const model of models) {
      const users = this.grants.get(model);
      if (users?.[user] === undefined) continue;
      if (options.whileRemovedAt !== undefined) {
        const item = this.users.get(user);
        if (item?.kind !== 'removed' || item.removedAt !== options.whileRemovedAt) return false;
      }
      delete users[user];
    }
    return true;
  }

  /** A removal's tombstone; `finished`: the pool has forgotten the user. */
  tombstone(name: string, removedAt: string, finished: boolean): void {
    this.users.set(name, {
      kind: 'removed',
      removedAt,
      ...(finished ? { expiresAt: Date.parse(removedAt) / 1000 + 172800 } : {}),
    });
  }
}

const MODELS = ['m1', 'm2', 'm3'];

function setup(pool: (name: string) => Promise<{ username?: string; sub?: string } | undefined>): {
  ctx: IdentityContext;
  access: FakeAccess;
} {
  const access = new FakeAccess();
  const repo = {
    listModels: async () => MODELS.map((name) => ({ name })),
    getModel: async (name: string) => {
      if (!MODELS.includes(name)) throw new EntityNotFoundError(`model "${name}" not found`);
      return { name };
    },
  };
  const userPool: UserPool = {
    createUser: async () => {
      throw new Error('not used');
    },
    findUser: pool,
    removeUser: async () => {
      throw new Error('not used');
    },
  };
  const ctx: IdentityContext = {
    settings: { adminTokenEnabled: true } as IdentityContext['settings'],
    access: access as unknown as AccessStore,
    repo: repo as unknown as Repository,
    pool: userPool,
    now: () => new Date('2026-11-25T21:00:00Z'),
  };
  return { ctx, access };
}

const notFound = (name: string) => new EntityNotFoundError(`user "${name}" not found`);

describe('adopting a pool user on a grant', () => {
  it('a removal written between the lookup and the adoption wins: 404, the tombstone stays, nothing granted', async () => {
    const made: ReturnType<typeof setup> = setup(async (name) => {
      // DELETE /v1/users/carol runs meanwhile: the pool forgets carol, her tombstone is written
      made.access.tombstone(name, '2026-11-25T20:59:59Z', true);
      return { username: name, sub: 'sub-carol' };
    });
    const { access } = made;
    await expect(setControllerAccess(made.ctx, 'carol', 'superuser')).rejects.toEqual(
      notFound('carol'),
    );
    expect(await access.getUser('carol')).toEqual({
      kind: 'removed',
      removedAt: '2026-11-25T20:59:59Z',
      finished: true,
    });
  });

  it('a finished tombstone replaced meanwhile by a newer removal is not overwritten: 404', async () => {
    const made: ReturnType<typeof setup> = setup(async (name) => {
      // a user of that name was made and removed again (cut off) since the grant's read
      made.access.tombstone(name, '2026-11-25T20:30:00Z', false);
      return { username: name, sub: 'sub-new' };
    });
    const { access } = made;
    access.tombstone('carol', '2026-11-24T10:00:00Z', true);
    await expect(setModelAccess(made.ctx, 'm1', 'carol', 'read')).rejects.toEqual(
      notFound('carol'),
    );
    expect(await access.getUser('carol')).toEqual({
      kind: 'removed',
      removedAt: '2026-11-25T20:30:00Z',
      finished: false,
    });
    expect(access.grants.get('m1')?.carol).toBeUndefined();
  });

  it('an adoption by a concurrent grant meanwhile is fine: the grant goes on', async () => {
    const made: ReturnType<typeof setup> = setup(async (name) => {
      await made.access.createUser({ name, access: 'login', sub: 'sub-dave', createdAt: 'x' });
      return { username: name, sub: 'sub-dave' };
    });
    const { access } = made;
    expect(await setControllerAccess(made.ctx, 'dave', 'add-model')).toEqual({
      user: 'dave',
      access: 'add-model',
    });
    expect(await access.getUser('dave')).toMatchObject({
      kind: 'user',
      user: { name: 'dave', access: 'add-model', sub: 'sub-dave' },
    });
  });

  it('two concurrent grants to a re-created name both hold; the old user’s grants go', async () => {
    let inner: Promise<unknown> | undefined;
    const made: ReturnType<typeof setup> = setup(async (name) => {
      // grant B has read the tombstone; grant A runs whole before B goes on
      if (!inner) {
        inner = setModelAccess(made.ctx, 'm1', name, 'write');
        await inner;
      }
      return { username: name, sub: 'sub-new-erin' };
    });
    const { access, ctx } = made;
    access.tombstone('erin', '2026-11-24T10:00:00Z', true);
    // left from the old erin (a model she made while her removal ran)
    access.grants.set('m3', { erin: 'admin', bob: 'admin' });
    // grant B
    expect(await setModelAccess(ctx, 'm2', 'erin', 'read')).toEqual({
      user: 'erin',
      access: 'read',
    });
    expect(access.grants.get('m1')).toEqual({ erin: 'write' });
    expect(access.grants.get('m2')).toEqual({ erin: 'read' });
    expect(access.grants.get('m3')).toEqual({ bob: 'admin' });
    expect(await access.getUser('erin')).toMatchObject({
      kind: 'user',
      user: { name: 'erin', access: 'login', sub: 'sub-new-erin' },
    });
  });

  it.each([
    ['another case', 'Bob'],
    ['an alias (preferred_username) of another user', 'robert'],
    ['no username in the answer', undefined],
  ])('a pool user found under %s is not adopted: 404, nothing written', async (_, username) => {
    const { ctx, access } = setup(async () => ({
      ...(username !== undefined ? { username } : {}),
      sub: 'sub-x',
    }));
    await expect(setModelAccess(ctx, 'm1', 'bob', 'read')).rejects.toEqual(notFound('bob'));
    await expect(setControllerAccess(ctx, 'bob', 'add-model')).rejects.toEqual(notFound('bob'));
    expect(await access.getUser('bob')).toEqual({ kind: 'unknown' });
    expect(access.grants.get('m1')).toBeUndefined();
  });

  it('a pool user named exactly so is adopted with the pool’s sub and login', async () => {
    const { ctx, access } = setup(async (name) => ({ username: name, sub: 'sub-bob' }));
    expect(await setModelAccess(ctx, 'm1', 'bob', 'read')).toEqual({ user: 'bob', access: 'read' });
    expect(await access.getUser('bob')).toMatchObject({
      kind: 'user',
      user: { name: 'bob', access: 'login', sub: 'sub-bob' },
    });
    expect(access.grants.get('m1')).toEqual({ bob: 'read' });
  });
});
