import { apiClient, uniqueName } from './api-client';
import { addUserAndLogIn, logIn, PASSWORD } from './identity-support';
import { AccessStore } from '../../state/access';
import { Repository } from '../../state/repository';
import { DependencyUnavailableError } from '../../service/errors';
import { CognitoUserPool, removeUser, setModelAccess, type UserPool } from '../../service/identity';
import { dynamoClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const admin = apiClient(stack);

/** The identity service on the stack's own table and pool, its pool failing when told to. */
function identityContext(failPoolRemoval: () => boolean) {
  const ddb = dynamoClientFor(stack);
  const real = new CognitoUserPool(stack.userPoolId, stack.region, stack.cognitoEndpoint);
  const pool: UserPool = {
    createUser: (name, password) => real.createUser(name, password),
    findUser: (name) => real.findUser(name),
    removeUser: async (name) => {
      if (failPoolRemoval())
        throw new DependencyUnavailableError('the user pool could not be asked: TimeoutError');
      return real.removeUser(name);
    },
  };
  return {
    settings: {
      region: stack.region,
      pool: { userPoolId: stack.userPoolId, clientId: stack.userPoolClientId },
      adminTokenEnabled: true,
      auditRetentionDays: 90,
    },
    access: new AccessStore(ddb, stack.tableName),
    repo: new Repository(ddb, stack.tableName),
    pool,
    now: () => new Date(),
  };
}

describe('removing a user: cut off, repeated, and the name used again', () => {
  it('a removal the pool cut off locks the user out with no grants; repeating it finishes it; a new user of that name starts with none', async () => {
    const owner = uniqueName('owner');
    const bob = uniqueName('bob');
    const model = uniqueName('removal');
    const ownerSession = await addUserAndLogIn(stack, owner);
    expect((await admin.put(`/v1/access/${owner}`, { access: 'add-model' })).status).toBe(200);
    expect((await ownerSession.api.post('/v1/models', { name: model })).status).toBe(201);
    const bobSession = await addUserAndLogIn(stack, bob);
    expect(
      (await ownerSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'write' })).status,
    ).toBe(200);

    // the pool fails after the tombstone: the removal answers 503-worthy and stops there
    await expect(
      removeUser(
        identityContext(() => true),
        bob,
      ),
    ).rejects.toThrow(DependencyUnavailableError);
    // bob is still in the pool and logs in again: his new token is refused too
    const again = await logIn(stack, bob, PASSWORD);
    const bobAgain = apiClient(stack, again.accessToken);
    expect((await bobAgain.get('/v1/whoami')).status).toBe(401);
    expect((await bobSession.api.get(`/v1/models/${model}`)).status).toBe(401);
    // his grants went before the pool was asked
    expect((await admin.get(`/v1/models/${model}/access`)).body.users).toEqual([
      { user: owner, access: 'admin' },
    ]);
    // a grant to the half-removed user is refused: he is not a user any more
    expect(
      await ownerSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'read' }),
    ).toMatchObject({ status: 404, body: { error: { code: 'not-found' } } });

    // the retry finishes it; a third time the user is gone
    expect(await admin.delete(`/v1/users/${bob}`)).toEqual({ status: 204, body: undefined });
    await expect(logIn(stack, bob, PASSWORD)).rejects.toThrow();
    expect(await admin.delete(`/v1/users/${bob}`)).toMatchObject({
      status: 404,
      body: { error: { code: 'not-found', message: `user "${bob}" not found` } },
    });

    // a new bob sees nothing of the old one's model
    const newBob = await addUserAndLogIn(stack, bob);
    expect((await newBob.api.get(`/v1/models/${model}`)).status).toBe(404);
    expect((await newBob.api.get('/v1/whoami')).body).toEqual({ user: bob, access: 'login' });
  }, 120_000);

  it('grants left behind by a removal cut off after the pool forgot the user are dropped by re-adding the name', async () => {
    const owner = uniqueName('owner');
    const carol = uniqueName('carol');
    const model = uniqueName('leftover');
    const ownerSession = await addUserAndLogIn(stack, owner);
    expect((await admin.put(`/v1/access/${owner}`, { access: 'add-model' })).status).toBe(200);
    expect((await ownerSession.api.post('/v1/models', { name: model })).status).toBe(201);
    await addUserAndLogIn(stack, carol);
    // what the old code could leave: carol removed from the pool and the
    // table, and a grant written by a grant that raced the removal
    const ctx = identityContext(() => false);
    await removeUser(ctx, carol);
    await ctx.access.changeModelAccess(model, carol, 'admin');
    expect((await admin.get(`/v1/models/${model}/access`)).body.users).toContainEqual({
      user: carol,
      access: 'admin',
    });
    const newCarol = await addUserAndLogIn(stack, carol);
    expect((await newCarol.api.get(`/v1/models/${model}`)).status).toBe(404);
    await expect(setModelAccess(ctx, model, carol, 'read')).resolves.toEqual({
      user: carol,
      access: 'read',
    });
  }, 120_000);
});
