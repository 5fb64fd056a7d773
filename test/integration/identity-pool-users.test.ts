import {
  AdminCreateUserCommand,
  AdminDeleteUserCommand,
  AdminSetUserPasswordCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { AccessStore } from '../../state/access';
import { EntityConflictError } from '../../state/errors';
import { apiClient, uniqueName } from './api-client';
import { cognitoClientFor, logIn, PASSWORD } from './identity-support';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Users the provisioner did not make: created straight in the pool (as in the
 * console, or in an existing pool given by config). They log in with
 * `login`; the first grant naming them adopts them (AdminGetUser); a name
 * the pool does not have either stays `404`.
 */
const stack = loadTestStack();
const admin = apiClient(stack);
const cognito = cognitoClientFor(stack);

async function createInPool(name: string): Promise<void> {
  await cognito.send(
    new AdminCreateUserCommand({
      UserPoolId: stack.userPoolId,
      Username: name,
      MessageAction: 'SUPPRESS',
    }),
  );
  await cognito.send(
    new AdminSetUserPasswordCommand({
      UserPoolId: stack.userPoolId,
      Username: name,
      Password: PASSWORD,
      Permanent: true,
    }),
  );
}

describe('users made in the pool, not through the provisioner', () => {
  const model = uniqueName('adopt');
  const carol = uniqueName('carol');
  const dave = uniqueName('dave');
  const erin = uniqueName('erin');
  const other = uniqueName('adopt');
  const ddb = dynamoClientFor(stack);
  const access = new AccessStore(ddb, stack.tableName);

  beforeAll(async () => {
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    expect((await admin.post('/v1/models', { name: other })).status).toBe(201);
    await createInPool(carol);
    await createInPool(dave);
  }, 60_000);

  afterAll(async () => {
    await admin.delete(`/v1/models/${model}`);
    await admin.delete(`/v1/models/${other}`);
    // the local stack's pool outlives this run: leave none of these users in it
    for (const name of [carol, dave, erin]) {
      await cognito
        .send(new AdminDeleteUserCommand({ UserPoolId: stack.userPoolId, Username: name }))
        .catch(() => undefined);
    }
    cognito.destroy();
    ddb.destroy();
  });

  it('log in with login access before any grant, and are not listed yet', async () => {
    const carolApi = apiClient(stack, (await logIn(stack, carol, PASSWORD)).accessToken);
    expect(await carolApi.get('/v1/whoami')).toEqual({
      status: 200,
      body: { user: carol, access: 'login' },
    });
    expect(await carolApi.post('/v1/models', { name: uniqueName('no') })).toEqual({
      status: 403,
      body: { error: { code: 'forbidden', message: 'permission denied' } },
    });
    expect((await access.getUser(carol)).kind).toBe('unknown');
    const names = (await admin.get('/v1/users')).body.users.map((u: { name: string }) => u.name);
    expect(names).not.toContain(carol);
  });

  it('a controller grant adopts the user: recorded with the pool’s sub, then raised', async () => {
    expect(await admin.put(`/v1/access/${carol}`, { access: 'add-model' })).toEqual({
      status: 200,
      body: { user: carol, access: 'add-model' },
    });
    const state = await access.getUser(carol);
    expect(state).toMatchObject({ kind: 'user', user: { name: carol, access: 'add-model' } });
    const tokens = await logIn(stack, carol, PASSWORD);
    const sub = JSON.parse(Buffer.from(tokens.accessToken.split('.')[1]!, 'base64url').toString())
      .sub as string;
    expect(state.kind === 'user' && state.user.sub).toBe(sub);
    const carolApi = apiClient(stack, tokens.accessToken);
    expect((await carolApi.get('/v1/whoami')).body).toEqual({ user: carol, access: 'add-model' });
    expect((await admin.get('/v1/users')).body.users).toEqual(
      expect.arrayContaining([{ name: carol, access: 'add-model' }]),
    );
  });

  it('a model grant adopts the user with login, and the grant holds', async () => {
    expect(await admin.put(`/v1/models/${model}/access/${dave}`, { access: 'read' })).toEqual({
      status: 200,
      body: { user: dave, access: 'read' },
    });
    expect(await access.getUser(dave)).toMatchObject({
      kind: 'user',
      user: { name: dave, access: 'login' },
    });
    const daveApi = apiClient(stack, (await logIn(stack, dave, PASSWORD)).accessToken);
    expect((await daveApi.get(`/v1/models/${model}`)).status).toBe(200);
    expect((await daveApi.get('/v1/whoami')).body).toEqual({ user: dave, access: 'login' });
    expect((await admin.get(`/v1/models/${model}/access`)).body.users).toEqual(
      expect.arrayContaining([{ user: dave, access: 'read' }]),
    );
  });

  it('a name neither the provisioner nor the pool has is 404, and nothing is written', async () => {
    const ghost = uniqueName('ghost');
    const notFound = {
      status: 404,
      body: { error: { code: 'not-found', message: `user "${ghost}" not found` } },
    };
    expect(await admin.put(`/v1/access/${ghost}`, { access: 'add-model' })).toEqual(notFound);
    expect(await admin.put(`/v1/models/${model}/access/${ghost}`, { access: 'read' })).toEqual(
      notFound,
    );
    expect((await access.getUser(ghost)).kind).toBe('unknown');
    expect((await admin.get(`/v1/models/${model}/access`)).body.users).not.toEqual(
      expect.arrayContaining([expect.objectContaining({ user: ghost })]),
    );
  });

  it('a user removed by the provisioner is not adopted back while the pool still has them', async () => {
    // the old erin, adopted by a grant
    await createInPool(erin);
    expect(
      (await admin.put(`/v1/models/${model}/access/${erin}`, { access: 'write' })).status,
    ).toBe(200);
    // a removal cut off after its tombstone (the pool still has the user): the grant must not undo it
    await access.removeUser(erin, new Date(), { expires: false });
    expect(await admin.put(`/v1/models/${model}/access/${erin}`, { access: 'read' })).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: `user "${erin}" not found` } },
    });
    expect((await access.getUser(erin)).kind).toBe('removed');
    // repeating the removal finishes it; a user of that name made in the pool again is adopted afresh
    expect((await admin.delete(`/v1/users/${erin}`)).status).toBe(204);
    // a grant of the old erin the removal did not see (as on a model she made while it ran)
    await access.changeModelAccess(other, erin, 'admin');
    await createInPool(erin);
    expect(await admin.put(`/v1/models/${model}/access/${erin}`, { access: 'read' })).toEqual({
      status: 200,
      body: { user: erin, access: 'read' },
    });
    // the new erin has her own grant and none of the old erin's
    expect((await admin.get(`/v1/models/${model}/access`)).body.users).toEqual(
      expect.arrayContaining([{ user: erin, access: 'read' }]),
    );
    expect((await access.modelGrants(other)).users[erin]).toBeUndefined();
    await cognito.send(
      new AdminDeleteUserCommand({ UserPoolId: stack.userPoolId, Username: erin }),
    );
  });

  it('the store writes an adoption only over the state read: a tombstone written since wins', async () => {
    const frank = uniqueName('frank');
    const record = { name: frank, access: 'login' as const, createdAt: new Date().toISOString() };
    // read: no item; a removal's tombstone came meanwhile
    await access.removeUser(frank, new Date(), { expires: true });
    await expect(access.createUser(record, { replacing: 'nothing' })).rejects.toBeInstanceOf(
      EntityConflictError,
    );
    const first = await access.getUser(frank);
    if (first.kind !== 'removed') throw new Error(`expected a tombstone, not ${first.kind}`);
    // read: that tombstone; a newer one (cut off) came meanwhile
    await access.removeUser(frank, new Date(Date.parse(first.removedAt) + 1000), {
      expires: false,
    });
    await access.changeModelAccess(other, frank, 'read');
    expect(await access.dropGrantsOf(frank, [other], { whileRemovedAt: first.removedAt })).toBe(
      false,
    );
    expect((await access.modelGrants(other)).users[frank]).toBe('read');
    await expect(
      access.createUser(record, { replacing: { removedAt: first.removedAt } }),
    ).rejects.toBeInstanceOf(EntityConflictError);
    expect((await access.getUser(frank)).kind).toBe('removed');
    // the tombstone read, still current and finished: dropped and replaced
    await access.removeUser(frank, new Date(Date.parse(first.removedAt) + 2000), { expires: true });
    const current = await access.getUser(frank);
    if (current.kind !== 'removed') throw new Error(`expected a tombstone, not ${current.kind}`);
    expect(await access.dropGrantsOf(frank, [other], { whileRemovedAt: current.removedAt })).toBe(
      true,
    );
    expect((await access.modelGrants(other)).users[frank]).toBeUndefined();
    await access.createUser(record, { replacing: { removedAt: current.removedAt } });
    expect((await access.getUser(frank)).kind).toBe('user');
  });
});
