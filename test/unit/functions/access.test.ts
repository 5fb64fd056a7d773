import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createGate,
  EndpointJwksFetcher,
  poolTokenVerifier,
  type PoolTokenVerifier,
} from '../../../functions/access';
import { UnauthorizedError } from '../../../functions/errors';
import type { AccessStore, UserState } from '../../../state/access';

/**
 * Who is calling (API.md, "Who is calling"): pool tokens checked by
 * aws-jwt-verify against a JWKS served on loopback as moto serves it
 * (`<endpoint>/<pool>/.well-known/jwks.json`), the JWKS cached and a rotated
 * key fetched once; and the gate's decisions on the admin token and the
 * user's record.
 */
const POOL = 'us-east-1_TestPool1';
const CLIENT = 'testclient1234567890';
const ISSUER = `https://cognito-idp.us-east-1.amazonaws.com/${POOL}`;

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
}

function signingKey(kid: string): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    kid,
    privateKey,
    jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
  };
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function token(key: SigningKey, claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const data = `${b64url({ kid: key.kid, alg: 'RS256' })}.${b64url({
    sub: 'sub-alice',
    iss: ISSUER,
    client_id: CLIENT,
    token_use: 'access',
    username: 'alice',
    scope: 'aws.cognito.signin.user.admin',
    auth_time: now,
    iat: now,
    exp: now + 3600,
    jti: randomUUID(),
    ...claims,
  })}`;
  return `${data}.${createSign('RSA-SHA256').update(data).sign(key.privateKey).toString('base64url')}`;
}

describe('pool access tokens, verified against the pool’s JWKS', () => {
  const first = signingKey('key-1');
  const rotated = signingKey('key-2');
  let served: SigningKey[] = [first];
  const fetched: string[] = [];
  let server: http.Server;
  let verify: PoolTokenVerifier;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      fetched.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    verify = poolTokenVerifier({
      userPoolId: POOL,
      clientId: CLIENT,
      endpoint: `http://127.0.0.1:${port}`,
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads the JWKS once from the endpoint’s path for the pool, then from its cache', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(verify(token(first))).resolves.toEqual({
        user: 'alice',
        sub: 'sub-alice',
        issuedAt: expect.any(Number),
      });
    }
    expect(fetched).toEqual([`/${POOL}/.well-known/jwks.json`]);
  });

  it('a rotated key (a kid not in the cache) is fetched once, then served from the cache', async () => {
    served = [first, rotated];
    await expect(verify(token(rotated, { username: 'bob' }))).resolves.toMatchObject({
      user: 'bob',
    });
    await expect(verify(token(rotated, { username: 'bob' }))).resolves.toMatchObject({
      user: 'bob',
    });
    await expect(verify(token(first))).resolves.toMatchObject({ user: 'alice' });
    expect(fetched).toHaveLength(2);
  });

  it('a kid the pool does not have is refused; asking again does not fetch again at once', async () => {
    const stranger = signingKey('key-unknown');
    await expect(verify(token(stranger))).rejects.toThrow(/not found in the JWKS/);
    expect(fetched).toHaveLength(3);
    await expect(verify(token(stranger))).rejects.toThrow(/Not allowed to fetch JWKS yet/);
    expect(fetched).toHaveLength(3);
  });

  it.each([
    ['an ID token', { token_use: 'id', aud: CLIENT }, /Token use not allowed: id/],
    [
      'a token of another app client',
      { client_id: 'someotherclient' },
      /Client ID not allowed: someotherclient/,
    ],
    ['an expired token', { iat: 1_000_000, auth_time: 1_000_000, exp: 1_003_600 }, /expired/],
    [
      'a token of another pool',
      { iss: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other' },
      /issuer not configured/,
    ],
  ] as const)('refuses %s', async (_what, claims, why) => {
    await expect(verify(token(first, claims))).rejects.toThrow(why);
  });

  it('refuses a token signed by another key under the pool’s kid', async () => {
    const impostor = { ...signingKey('key-1'), kid: 'key-1' };
    await expect(verify(token(impostor))).rejects.toThrow(/signature/i);
  });

  it('reads a JWKS over plain HTTP only on loopback', () => {
    expect(() => new EndpointJwksFetcher('http://cognito.example.org:9229')).toThrow(
      'cognito endpoint http://cognito.example.org:9229: plain HTTP is allowed on loopback only',
    );
    expect(() => new EndpointJwksFetcher('https://cognito.example.org')).not.toThrow();
  });
});

describe('the gate: who is calling', () => {
  const ADMIN_TOKEN = 'the-admin-token-0123456789';
  const claims = { user: 'alice', sub: 'sub-alice', issuedAt: 1 };
  const verifier =
    (who: typeof claims = claims): PoolTokenVerifier =>
    () =>
      Promise.resolve(who);
  const store = (state: UserState) =>
    ({ getUser: () => Promise.resolve(state) }) as unknown as AccessStore;
  const jwt = 'aaa.bbb.ccc';

  it('the admin token is the superuser admin while it is on', async () => {
    const gate = createGate({ adminToken: () => Promise.resolve(ADMIN_TOKEN) });
    await expect(gate.authenticate(`Bearer ${ADMIN_TOKEN}`)).resolves.toEqual({
      user: 'admin',
      access: 'superuser',
    });
  });

  it('switched off (no admin token part), the admin token is refused like any other', async () => {
    const gate = createGate({
      verifyPoolToken: () => Promise.reject(new Error('not a pool token')),
    });
    await expect(gate.authenticate(`Bearer ${ADMIN_TOKEN}`)).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
  });

  it('a pool user named admin is refused: admin is the admin token’s', async () => {
    const gate = createGate({
      verifyPoolToken: verifier({ user: 'admin', sub: 'x', issuedAt: 1 }),
      access: store({ kind: 'unknown' }),
    });
    await expect(gate.authenticate(`Bearer ${jwt}`)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('a user the table has removed is refused, however fresh the token', async () => {
    const gate = createGate({
      verifyPoolToken: verifier(),
      access: store({ kind: 'removed', removedAt: '2026-01-01T00:00:00.000Z', finished: false }),
    });
    await expect(gate.authenticate(`Bearer ${jwt}`)).rejects.toThrow(
      'the user of this token has been removed',
    );
  });

  it('a token of an earlier user of the same name (another sub) is refused', async () => {
    const gate = createGate({
      verifyPoolToken: verifier(),
      access: store({
        kind: 'user',
        user: { name: 'alice', access: 'superuser', sub: 'sub-new-alice', createdAt: '' },
      }),
    });
    await expect(gate.authenticate(`Bearer ${jwt}`)).rejects.toThrow(
      'the user of this token has been removed',
    );
  });

  it('a recorded user has their controller access; a pool user not met yet has login', async () => {
    const recorded = createGate({
      verifyPoolToken: verifier(),
      access: store({
        kind: 'user',
        user: { name: 'alice', access: 'add-model', sub: 'sub-alice', createdAt: '' },
      }),
    });
    await expect(recorded.authenticate(`Bearer ${jwt}`)).resolves.toEqual({
      user: 'alice',
      access: 'add-model',
    });
    const unknown = createGate({ verifyPoolToken: verifier(), access: store({ kind: 'unknown' }) });
    await expect(unknown.authenticate(`Bearer ${jwt}`)).resolves.toEqual({
      user: 'alice',
      access: 'login',
    });
  });

  it('what the verifier refuses, and what is no JWT at all, is 401 without saying why', async () => {
    let asked = 0;
    const gate = createGate({
      verifyPoolToken: () => {
        asked++;
        return Promise.reject(new Error('JWT expired at 2026-01-01'));
      },
    });
    const refusal = await gate.authenticate(`Bearer ${jwt}`).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(UnauthorizedError);
    expect((refusal as Error).message).not.toContain('expired');
    await expect(gate.authenticate('Bearer not-a-jwt')).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(gate.authenticate(undefined)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(asked).toBe(1);
  });
});
