import { CreateUserPoolClientCommand } from '@aws-sdk/client-cognito-identity-provider';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  createHash,
  type JsonWebKeyInput,
  createHmac,
  createPublicKey,
  createSign,
  generateKeyPairSync,
} from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { toolVenv } from '../../local/toolchain';
import { apiClient, uniqueName } from './api-client';
import { addUserAndLogIn, cognitoClientFor, logIn, PASSWORD } from './identity-support';
import { AccessStore } from '../../state/access';
import { AuditStore } from '../../state/audit';
import { documentClient } from '../../state/table';
import { dynamoClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const admin = apiClient(stack);
const anonymous = apiClient(stack, null);
const hidden = (model: string) => ({
  status: 404,
  body: { error: { code: 'not-found', message: `model "${model}" not found` } },
});
const denied = {
  status: 403,
  body: { error: { code: 'forbidden', message: 'permission denied' } },
};
const unauthorized = (res: { status: number; body: any }) => {
  expect(res.status).toBe(401);
  expect(res.body.error.code).toBe('unauthorized');
};

/** Every token and password this file handled, to look for in the audit and the stack's logs. */
const secrets = new Set<string>();
const remember = <T extends { accessToken: string; idToken: string; refreshToken: string }>(
  t: T,
) => {
  secrets.add(t.accessToken);
  secrets.add(t.idToken);
  secrets.add(t.refreshToken);
  return t;
};

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('identity, access and audit', () => {
  const alice = uniqueName('alice');
  const bob = uniqueName('bob');
  const model = uniqueName('team');
  let aliceSession: Awaited<ReturnType<typeof addUserAndLogIn>>;
  let bobSession: Awaited<ReturnType<typeof addUserAndLogIn>>;

  beforeAll(async () => {
    secrets.add(PASSWORD);
    secrets.add(stack.token);
    aliceSession = remember(await addUserAndLogIn(stack, alice));
    bobSession = remember(await addUserAndLogIn(stack, bob));
  }, 120_000);

  it('tells how to log in without a token', async () => {
    expect(await anonymous.get('/v1/auth')).toEqual({
      status: 200,
      body: {
        region: stack.region,
        userPoolId: stack.userPoolId,
        clientId: stack.userPoolClientId,
        endpoint: stack.cognitoEndpoint,
      },
    });
    unauthorized(await anonymous.get('/v1/whoami'));
  });

  it('knows who is calling: the admin token and a pool user', async () => {
    expect((await admin.get('/v1/whoami')).body).toEqual({ user: 'admin', access: 'superuser' });
    expect(await aliceSession.api.get('/v1/whoami')).toEqual({
      status: 200,
      body: { user: alice, access: 'login' },
    });
    const users = await admin.get('/v1/users');
    expect(users.body.users).toEqual(
      expect.arrayContaining([
        { name: 'admin', access: 'superuser' },
        { name: alice, access: 'login' },
        { name: bob, access: 'login' },
      ]),
    );
  });

  it('refuses a password the pool refuses with its reason, a taken name, a bad name', async () => {
    const weak = await admin.post('/v1/users', { name: uniqueName('weak'), password: 'shortpass' });
    expect(weak.status).toBe(400);
    expect(weak.body.error.code).toBe('bad-request');
    // the pool's own reason (moto's words for its policy), never the password
    expect(weak.body.error.message).toBe(
      'password refused by the user pool: The provided password does not confirm to the configured password policy',
    );
    // what the pool's field format refuses (Cognito's InvalidParameterException) is a 400 too
    for (const [password, why] of [
      ['', 'must be at least 6 characters'],
      ['abc', 'must be at least 6 characters'],
      [' Correct-Horse-9', 'must not begin or end with whitespace'],
      ['Correct-Horse-9\t', 'must not begin or end with whitespace'],
    ] as const) {
      const name = uniqueName('format');
      const refused = await admin.post('/v1/users', { name, password });
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('bad-request');
      expect(refused.body.error.message).toContain('password');
      expect(refused.body.error.message).toContain(why);
      if (password.trim() !== '') expect(refused.body.error.message).not.toContain(password.trim());
      expect((await admin.get('/v1/users')).body.users.map((u: any) => u.name)).not.toContain(name);
    }
    expect(await admin.post('/v1/users', { name: alice, password: PASSWORD })).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: `user "${alice}" already exists` } },
    });
    expect(await admin.post('/v1/users', { name: 'Alice!', password: PASSWORD })).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'invalid user name "Alice!"' } },
    });
    expect(
      (await admin.post('/v1/users', { name: 'x', password: PASSWORD, admin: true })).body,
    ).toEqual({
      error: { code: 'bad-request', message: 'unknown field "admin"' },
    });
    expect(await aliceSession.api.post('/v1/users', { name: 'x', password: PASSWORD })).toEqual(
      denied,
    );
  });

  it('refuses ID tokens, other clients’, tampered, forged and expired tokens', async () => {
    unauthorized(await apiClient(stack, aliceSession.idToken).get('/v1/whoami'));
    const other = await cognitoClientFor(stack).send(
      new CreateUserPoolClientCommand({
        UserPoolId: stack.userPoolId,
        ClientName: 'someone-else',
        ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
      }),
    );
    const otherTokens = remember(
      await logIn(stack, alice, PASSWORD, other.UserPoolClient?.ClientId ?? ''),
    );
    unauthorized(await apiClient(stack, otherTokens.accessToken).get('/v1/whoami'));

    const [header, payload, signature] = aliceSession.accessToken.split('.') as [
      string,
      string,
      string,
    ];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    // alice's signed token, made to say it is bob's: the signature no longer holds
    const tampered = `${header}.${b64url({ ...claims, username: bob })}.${signature}`;
    unauthorized(await apiClient(stack, tampered).get('/v1/whoami'));

    // signed by a key of our own, under the pool's key id
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const sign = (body: unknown, key: Parameters<ReturnType<typeof createSign>['sign']>[0]) => {
      const head = b64url({ kid: 'dummy', alg: 'RS256' });
      const data = `${head}.${b64url(body)}`;
      return `${data}.${createSign('RSA-SHA256').update(data).sign(key).toString('base64url')}`;
    };
    unauthorized(
      await apiClient(stack, sign({ ...claims, username: 'admin' }, privateKey)).get('/v1/whoami'),
    );

    // moto's own signing key (fixed, shipped with moto): a genuine signature on an expired token
    const motoKey = motoPrivateJwk();
    expect(motoKey).toBeDefined();
    const now = Math.floor(Date.now() / 1000);
    const signWithMoto = (body: unknown) => {
      const data = `${b64url({ kid: 'dummy', alg: 'RS256' })}.${b64url(body)}`;
      return `${data}.${rs256(data, motoKey!)}`;
    };
    const fresh = signWithMoto({ ...claims, iat: now, exp: now + 3600 });
    expect((await apiClient(stack, fresh).get('/v1/whoami')).status).toBe(200);
    unauthorized(
      await apiClient(stack, signWithMoto({ ...claims, iat: now - 7200, exp: now - 3600 })).get(
        '/v1/whoami',
      ),
    );
  });

  it('refuses forged tokens: alg none, HS256 keyed with the pool’s public key, an unknown kid', async () => {
    const [, payload] = aliceSession.accessToken.split('.') as [string, string, string];
    const now = Math.floor(Date.now() / 1000);
    // alice's own claims, fresh: only the forgery can be why a token is refused
    const claims = {
      ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')),
      iat: now,
      exp: now + 3600,
    };
    const jwksAnswer = await fetch(
      `${stack.cognitoEndpoint}/${stack.userPoolId}/.well-known/jwks.json`,
    );
    expect(jwksAnswer.status).toBe(200);
    const jwks = (await jwksAnswer.json()) as {
      keys: Array<JsonWebKeyInput['key'] & { kid: string; n?: string }>;
    };
    const poolKey = jwks.keys[0]!;
    expect(poolKey.kid).toMatch(/\S/);
    // moto's own signing key: the forgeries signed with it and the positive control need it
    const motoKey = motoPrivateJwk()!;
    expect(motoKey).toBeDefined();
    const whoami = async (token: string) => apiClient(stack, token).get('/v1/whoami');

    // alg none: no signature, or any bytes where it would be
    const noneHead = b64url({ kid: poolKey.kid, alg: 'none', typ: 'JWT' });
    for (const signature of ['', 'c2lnbmF0dXJl']) {
      unauthorized(await whoami(`${noneHead}.${b64url(claims)}.${signature}`));
      unauthorized(await whoami(`${b64url({ alg: 'none' })}.${b64url(claims)}.${signature}`));
    }

    // HS256 keyed with the pool's public key (the RS256/HS256 confusion), in each form a verifier might hand its HMAC
    const publicKey = createPublicKey({ key: poolKey, format: 'jwk' });
    const hmacKeys = [
      publicKey.export({ type: 'spki', format: 'pem' }),
      publicKey.export({ type: 'pkcs1', format: 'pem' }),
      publicKey.export({ type: 'spki', format: 'der' }),
      JSON.stringify(poolKey),
      Buffer.from(poolKey.n ?? '', 'base64url'),
    ];
    for (const hmacKey of hmacKeys) {
      const data = `${b64url({ kid: poolKey.kid, alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}`;
      const mac = createHmac('sha256', hmacKey).update(data).digest('base64url');
      unauthorized(await whoami(`${data}.${mac}`));
    }

    // RS256 under a key id the pool does not have: with a key of our own (and its own
    // JWKS nowhere), and with the pool's own signing key, which only the kid betrays
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    for (const kid of ['not-the-pool-key', `${poolKey.kid}-2`]) {
      const data = `${b64url({ kid, alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}`;
      const signature = createSign('RSA-SHA256')
        .update(data)
        .sign(privateKey)
        .toString('base64url');
      unauthorized(await whoami(`${data}.${signature}`));
      unauthorized(await whoami(`${data}.${rs256(data, motoKey)}`));
    }
    // the same claims under the pool's kid and key are accepted: the refusals above are the forgeries'
    const data = `${b64url({ kid: poolKey.kid, alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}`;
    expect((await whoami(`${data}.${rs256(data, motoKey)}`)).body).toEqual({
      user: alice,
      access: 'login',
    });
  });

  it('a user with add-model creates a model and is its admin; others see nothing until granted', async () => {
    expect(await aliceSession.api.post('/v1/models', { name: model })).toEqual(denied);
    expect(await admin.put(`/v1/access/${alice}`, { access: 'add-model' })).toEqual({
      status: 200,
      body: { user: alice, access: 'add-model' },
    });
    expect((await aliceSession.api.get('/v1/whoami')).body.access).toBe('add-model');
    expect((await aliceSession.api.post('/v1/models', { name: model })).status).toBe(201);
    expect(await aliceSession.api.get(`/v1/models/${model}/access`)).toEqual({
      status: 200,
      body: { users: [{ user: alice, access: 'admin' }] },
    });

    // bob: no access is exactly a model that does not exist
    const missing = uniqueName('nothing');
    expect(await admin.get(`/v1/models/${missing}`)).toEqual(hidden(missing));
    expect(await bobSession.api.get(`/v1/models/${missing}`)).toEqual(hidden(missing));
    expect(await bobSession.api.get(`/v1/models/${model}`)).toEqual(hidden(model));
    expect(await bobSession.api.get(`/v1/models/${model}/status`)).toEqual(hidden(model));
    expect(await bobSession.api.post(`/v1/models/${model}/machines`, {})).toEqual(hidden(model));
    const listed = (await bobSession.api.get('/v1/models')).body.models.map((m: any) => m.name);
    expect(listed).not.toContain(model);

    expect(
      await aliceSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'read' }),
    ).toEqual({
      status: 200,
      body: { user: bob, access: 'read' },
    });
    expect((await bobSession.api.get(`/v1/models/${model}`)).status).toBe(200);
    expect((await bobSession.api.get('/v1/models')).body.models.map((m: any) => m.name)).toEqual([
      model,
    ]);
    expect(await bobSession.api.post(`/v1/models/${model}/machines`, {})).toEqual(denied);
    expect(
      await bobSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'admin' }),
    ).toEqual(denied);
    expect(
      await aliceSession.api.put(`/v1/models/${model}/access/${uniqueName('ghost')}`, {
        access: 'read',
      }),
    ).toMatchObject({
      status: 404,
      body: { error: { code: 'not-found' } },
    });
    // a level or a user name the contract does not have: the usual 400, naming what was wrong
    expect(
      await aliceSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'owner' }),
    ).toEqual({
      status: 400,
      body: {
        error: { code: 'bad-request', message: expect.stringMatching(/^field "access": /) },
      },
    });
    expect(
      await aliceSession.api.put(`/v1/models/${model}/access/Bob!`, { access: 'read' }),
    ).toEqual({
      status: 400,
      body: { error: { code: 'bad-request', message: 'invalid user name "Bob!"' } },
    });
    expect(await admin.put(`/v1/access/${bob}`, { access: 'root' })).toEqual({
      status: 400,
      body: {
        error: { code: 'bad-request', message: expect.stringMatching(/^field "access": /) },
      },
    });
    expect((await admin.get('/v1/whoami')).status).toBe(200);
    expect((await bobSession.api.get('/v1/whoami')).body).toEqual({ user: bob, access: 'login' });
  });

  it('refuses to remove the last admin, and concurrent grants and revokes end consistent', async () => {
    expect(await aliceSession.api.delete(`/v1/models/${model}/access/${alice}`)).toEqual({
      status: 409,
      body: {
        error: { code: 'conflict', message: `cannot remove the last admin of model "${model}"` },
      },
    });
    const others = await Promise.all(
      [1, 2, 3, 4].map(async (i) => {
        const name = uniqueName(`c${i}`);
        expect((await admin.post('/v1/users', { name, password: PASSWORD })).status).toBe(201);
        return name;
      }),
    );
    const answers = await Promise.all([
      ...others.map((u) =>
        aliceSession.api.put(`/v1/models/${model}/access/${u}`, { access: 'write' }),
      ),
      aliceSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'write' }),
      aliceSession.api.put(`/v1/models/${model}/access/${bob}`, { access: 'read' }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const revokes = await Promise.all(
      others.slice(0, 2).map((u) => aliceSession.api.delete(`/v1/models/${model}/access/${u}`)),
    );
    expect(revokes.map((r) => r.status)).toEqual([204, 204]);
    const list = (await admin.get(`/v1/models/${model}/access`)).body.users;
    expect(list).toEqual(
      [
        { user: alice, access: 'admin' },
        { user: bob, access: expect.stringMatching(/^(read|write)$/) },
        ...others.slice(2).map((u) => ({ user: u, access: 'write' })),
      ].sort((a, b) => a.user.localeCompare(b.user)),
    );
  });

  it('grants and revokes of many users at once on one model all succeed, and the list is exactly their sum', async () => {
    const crowd = uniqueName('crowd');
    expect((await admin.post('/v1/models', { name: crowd })).status).toBe(201);
    const names = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const name = uniqueName(`m${i}`);
        expect((await admin.post('/v1/users', { name, password: PASSWORD })).status).toBe(201);
        return name;
      }),
    );
    const [leaving, arriving] = [names.slice(0, 6), names.slice(6)];
    for (const name of leaving) {
      expect(
        (await admin.put(`/v1/models/${crowd}/access/${name}`, { access: 'read' })).status,
      ).toBe(200);
    }
    // every change touches the model's one grants item: each loser of a race reads again and retries
    const answers = await Promise.all([
      ...leaving.map((u) => admin.delete(`/v1/models/${crowd}/access/${u}`)),
      ...arriving.map((u, i) =>
        admin.put(`/v1/models/${crowd}/access/${u}`, { access: i % 2 ? 'write' : 'admin' }),
      ),
    ]);
    expect(answers.map((a) => a.status)).toEqual([
      ...leaving.map(() => 204),
      ...arriving.map(() => 200),
    ]);
    expect((await admin.get(`/v1/models/${crowd}/access`)).body.users).toEqual(
      [
        { user: 'admin', access: 'admin' },
        ...arriving.map((u, i) => ({ user: u, access: i % 2 ? 'write' : 'admin' })),
      ].sort((a, b) => a.user.localeCompare(b.user)),
    );
    expect((await admin.delete(`/v1/models/${crowd}`)).status).toBe(202);
  }, 120_000);

  it('audits changes and refusals, newest first, paged, without bodies, passwords or tokens', async () => {
    const key = `key-${uniqueName('k')}`;
    const withKey = await aliceSession.api.call(
      'PUT',
      `/v1/models/${model}/constraints`,
      { constraints: 'mem=2G' },
      undefined,
      { 'idempotency-key': key },
    );
    expect(withKey.status).toBe(200);
    // the same request retried with its key: the first answer again, and recorded again with its key
    const replayed = await aliceSession.api.call(
      'PUT',
      `/v1/models/${model}/constraints`,
      { constraints: 'mem=2G' },
      undefined,
      { 'idempotency-key': key },
    );
    expect(replayed).toEqual(withKey);
    const page = await aliceSession.api.get(`/v1/models/${model}/audit?limit=500`);
    expect(page.status).toBe(200);
    const entries: any[] = page.body.entries;
    // exactly API.md's fields: nothing more (no body, token or password can hide in another key)
    const keyed = {
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      user: alice,
      method: 'PUT',
      path: `/v1/models/${model}/constraints`,
      model,
      status: 200,
      requestId: expect.stringMatching(/\S/),
      idempotencyKey: key,
    };
    expect(entries.slice(0, 2)).toEqual([keyed, keyed]);
    expect(entries[0].requestId).not.toBe(entries[1].requestId);
    const FIELDS = ['time', 'user', 'method', 'path', 'model', 'status', 'requestId'];
    for (const e of entries) {
      expect(Object.keys(e).filter((k) => ![...FIELDS, 'idempotencyKey'].includes(k))).toEqual([]);
      expect(FIELDS.filter((k) => !(k in e))).toEqual([]);
    }
    const times = entries.map((e) => e.time);
    expect([...times].sort().reverse()).toEqual(times);
    // bob's refusals are there, with their 403
    expect(entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          user: bob,
          method: 'POST',
          path: `/v1/models/${model}/machines`,
          status: 403,
        }),
        expect.objectContaining({
          user: alice,
          method: 'POST',
          path: '/v1/models',
          model,
          status: 201,
        }),
      ]),
    );
    // no GET is audited
    expect(entries.some((e) => e.method === 'GET')).toBe(false);

    // paging: two at a time reaches the same entries in the same order
    const paged: any[] = [];
    let cursor: string | undefined;
    do {
      const res = await aliceSession.api.get(
        `/v1/models/${model}/audit?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.entries.length).toBeLessThanOrEqual(2);
      paged.push(...res.body.entries);
      cursor = res.body.cursor;
    } while (cursor);
    expect(paged.map((e) => e.requestId)).toEqual(entries.map((e) => e.requestId));

    // a cursor of another partition is refused, not followed
    const foreign = Buffer.from(JSON.stringify({ pk: 'AUDIT#MODEL#other', sk: 'x' })).toString(
      'base64url',
    );
    expect(
      (await aliceSession.api.get(`/v1/models/${model}/audit?cursor=${foreign}`)).body,
    ).toEqual({
      error: { code: 'bad-request', message: 'invalid cursor' },
    });
    expect((await aliceSession.api.get(`/v1/models/${model}/audit?limit=501`)).status).toBe(400);
    expect(await bobSession.api.get(`/v1/models/${model}/audit`)).toEqual(denied);
    expect(await aliceSession.api.get('/v1/audit')).toEqual(denied);
    // a refused read is audited too (every 403): in the model's audit, or the controller's
    const latest = (await aliceSession.api.get(`/v1/models/${model}/audit?limit=1`)).body.entries;
    expect(latest).toEqual([
      {
        time: expect.any(String),
        user: bob,
        method: 'GET',
        path: `/v1/models/${model}/audit`,
        model,
        status: 403,
        requestId: expect.stringMatching(/\S/),
      },
    ]);
    expect((await admin.get(`/v1/audit?user=${alice}&limit=1`)).body.entries).toEqual([
      {
        time: expect.any(String),
        user: alice,
        method: 'GET',
        path: '/v1/audit',
        status: 403,
        requestId: expect.stringMatching(/\S/),
      },
    ]);

    const all = await admin.get(`/v1/audit?user=${alice}&limit=500`);
    expect(all.status).toBe(200);
    expect(all.body.entries.length).toBeGreaterThan(3);
    expect(all.body.entries.every((e: any) => e.user === alice)).toBe(true);
    const adds = (await admin.get(`/v1/audit?user=admin&limit=500`)).body.entries;
    expect(adds).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ method: 'POST', path: '/v1/users', status: 201 }),
      ]),
    );

    const text = JSON.stringify([entries, all.body, adds]);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it('a removed user’s token stops working at once, and their grants go', async () => {
    expect((await bobSession.api.get('/v1/whoami')).status).toBe(200);
    expect(await admin.delete(`/v1/users/${bob}`)).toEqual({ status: 204, body: undefined });
    unauthorized(await bobSession.api.get('/v1/whoami'));
    unauthorized(await bobSession.api.get(`/v1/models/${model}`));
    const list = (await admin.get(`/v1/models/${model}/access`)).body.users.map((u: any) => u.user);
    expect(list).not.toContain(bob);
    await expect(logIn(stack, bob, PASSWORD)).rejects.toThrow();
    expect(await admin.delete(`/v1/users/${bob}`)).toMatchObject({ status: 404 });
    expect(await admin.delete('/v1/users/admin')).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: 'cannot remove user "admin"' } },
    });
  });

  it('prints how long a 1,000-entry audit and 200 users take to read', async () => {
    const ddb = dynamoClientFor(stack);
    const audit = new AuditStore(ddb, stack.tableName, 90);
    const access = new AccessStore(ddb, stack.tableName);
    const busy = uniqueName('busy');
    const start = Date.now() - 1_000_000;
    // AuditStore.record gives a write up to 2 s (a request's answer never waits longer); a busy
    // machine can take longer than that, and the seeding repeats such a write (same key: one item)
    const record = async (entry: Parameters<AuditStore['record']>[0]) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await audit.record(entry);
        } catch (err) {
          if ((err as Error).name !== 'AbortError' || attempt === 10) throw err;
        }
      }
    };
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          record({
            time: new Date(start + (i + j) * 1000).toISOString(),
            user: 'bench',
            method: 'POST',
            path: `/v1/models/${busy}/machines`,
            model: busy,
            status: 201,
            requestId: `bench-${i + j}`,
          }),
        ),
      );
    }
    for (let i = 0; i < 200; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          access.createUser({
            name: `${busy}-u${i + j}`.slice(0, 63),
            access: 'login',
            createdAt: new Date().toISOString(),
          }),
        ),
      );
    }
    let t = Date.now();
    const first = await admin.get(`/v1/models/${busy}/audit?limit=500`);
    const second = await admin.get(
      `/v1/models/${busy}/audit?limit=500&cursor=${encodeURIComponent(first.body.cursor)}`,
    );
    const auditMs = Date.now() - t;
    expect(first.body.entries).toHaveLength(500);
    expect(second.body.entries).toHaveLength(500);
    expect(second.body.entries[499].requestId).toBe('bench-0');
    // without `limit`, a page is 100 entries, newest first, with a cursor to the rest
    const defaultPage = await admin.get(`/v1/models/${busy}/audit`);
    expect(defaultPage.body.entries).toHaveLength(100);
    expect(defaultPage.body.entries[0].requestId).toBe('bench-999');
    expect(typeof defaultPage.body.cursor).toBe('string');
    t = Date.now();
    const users = await admin.get('/v1/users');
    const usersMs = Date.now() - t;
    expect(users.body.users.length).toBeGreaterThanOrEqual(201);
    console.log(
      `[timing] 1,000 audit entries of one model in two 500-entry pages: ${auditMs} ms; GET /v1/users with ${users.body.users.length} users: ${usersMs} ms`,
    );
    ddb.destroy();
  });

  it('no password or token reaches the stack’s table', async () => {
    const ddb = dynamoClientFor(stack);
    const doc = documentClient(ddb);
    const partitions = new Set<string>();
    let start: Record<string, unknown> | undefined;
    const found: string[] = [];
    do {
      const out = await doc.send(
        new ScanCommand({ TableName: stack.tableName, ExclusiveStartKey: start }),
      );
      for (const item of out.Items ?? []) {
        const text = JSON.stringify(item);
        for (const secret of secrets) {
          if (text.includes(secret)) found.push(`${String(item.pk)} ${String(item.sk)}`);
        }
      }
      for (const item of out.Items ?? []) partitions.add(String(item.pk));
      start = out.LastEvaluatedKey;
    } while (start);
    ddb.destroy();
    // what this file wrote was read: its users, its model's grants and its audit
    expect(
      [
        `USER#${alice}`,
        `USER#${bob}`,
        `MODEL#${model}`,
        `AUDIT#MODEL#${model}`,
        'AUDIT#CONTROLLER',
      ].filter((pk) => !partitions.has(pk)),
    ).toEqual([]);
    expect(found).toEqual([]);
  });

  it('no password or token reaches the stack’s logs', () => {
    const logs = join(dirname(process.env.PROVISIONER_TEST_STACK_FILE ?? ''), 'data', 'logs');
    const files = readdirSync(logs)
      .map((f) => join(logs, f))
      .filter((f) => statSync(f).isFile());
    expect(files.length).toBeGreaterThan(3);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const secret of secrets) {
        if (secret === stack.token) continue; // the admin token is the stack's own setting
        expect({ file, found: text.includes(secret) }).toEqual({ file, found: false });
      }
    }
  });
});

/**
 * RS256 with a bare private key (`n`, `d`: moto's JWK has no CRT parameters,
 * which Node's key import needs): EMSA-PKCS1-v1_5 over SHA-256, then m^d mod n.
 */
function rs256(data: string, jwk: Record<string, string>): string {
  const big = (b64: string) => BigInt(`0x${Buffer.from(b64, 'base64url').toString('hex')}`);
  const n = big(jwk.n ?? '');
  const d = big(jwk.d ?? '');
  const k = Buffer.from(jwk.n ?? '', 'base64url').length;
  const digestInfo = Buffer.concat([
    Buffer.from('3031300d060960864801650304020105000420', 'hex'),
    createHash('sha256').update(data).digest(),
  ]);
  const em = Buffer.concat([
    Buffer.from([0, 1]),
    Buffer.alloc(k - digestInfo.length - 3, 0xff),
    Buffer.from([0]),
    digestInfo,
  ]);
  let result = 1n;
  let base = BigInt(`0x${em.toString('hex')}`) % n;
  for (let e = d; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * base) % n;
    base = (base * base) % n;
  }
  return Buffer.from(result.toString(16).padStart(k * 2, '0'), 'hex').toString('base64url');
}

/** moto's fixed signing key, from the pinned moto in the toolchain cache (absent: that check is left out). */
function motoPrivateJwk(): Record<string, string> | undefined {
  const venv = join(toolVenv(), 'lib');
  try {
    for (const py of readdirSync(venv)) {
      const file = join(
        venv,
        py,
        'site-packages',
        'moto',
        'cognitoidp',
        'resources',
        'jwks-private.json.gz',
      );
      try {
        return JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as Record<
          string,
          string
        >;
      } catch {
        // not this Python's
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}
