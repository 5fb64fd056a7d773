import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  classifyPoolError,
  cognitoProvider,
  PoolError,
  UserTokens,
  type IdentityProvider,
  type PoolTokens,
} from '../../../cli/auth';
import { createClient } from '../../../cli/client';
import {
  credentialsFile,
  resolveEndpoint,
  saveLogin,
  saveUserLogin,
  type UserLogin,
} from '../../../cli/config';

const pool = { region: 'us-east-1', userPoolId: 'us-east-1_abc', clientId: 'client-1' };

function login(overrides: Partial<UserLogin> = {}): UserLogin {
  return {
    apiUrl: 'http://api.test',
    user: 'alice',
    pool,
    refreshToken: 'refresh-1',
    accessToken: 'access-1',
    expiresAt: '2026-11-22T11:00:00.000Z',
    ...overrides,
  };
}

/** A pool that hands out access-2, access-3, … on each refresh, or refuses. */
function fakePool(refuse?: PoolError | Error) {
  const calls: string[] = [];
  let n = 1;
  const idp: IdentityProvider = {
    passwordAuth: () => Promise.reject(new Error('not used')),
    revoke: () => Promise.reject(new Error('not used')),
    refresh: (_pool, refreshToken): Promise<PoolTokens> => {
      calls.push(refreshToken);
      if (refuse) return Promise.reject(refuse);
      n += 1;
      return new Promise((r) =>
        setTimeout(() => r({ accessToken: `access-${n}`, expiresIn: 3600 }), 5),
      );
    },
  };
  return { idp, calls };
}

function configEnv() {
  return { PROVISIONER_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), 'cli-auth-')), 'config') };
}

describe('a user login renews its own access token', () => {
  it('uses the stored access token while it has more than a minute left', async () => {
    const { idp, calls } = fakePool();
    const t = new UserTokens(login(), idp, configEnv(), () => new Date('2026-11-22T10:58:59Z'));
    expect(await t.token()).toBe('access-1');
    expect(calls).toEqual([]);
  });

  it('within a minute of expiry, or after it, refreshes with the refresh token and stores the new one 0600', async () => {
    const env = configEnv();
    saveUserLogin(login(), env);
    const now = new Date('2026-11-22T10:59:30Z');
    const { idp, calls } = fakePool();
    const t = new UserTokens(login(), idp, env, () => now);
    expect(await t.token()).toBe('access-2');
    expect(calls).toEqual(['refresh-1']);
    const file = credentialsFile(env);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      ...login(),
      accessToken: 'access-2',
      expiresAt: '2026-11-22T11:59:30.000Z',
    });
    // the renewed token is fresh: no second refresh
    expect(await t.token()).toBe('access-2');
    expect(calls).toHaveLength(1);
    // the next command reads it back from the file
    expect(resolveEndpoint('/', env)).toMatchObject({
      source: 'user',
      token: 'access-2',
      user: { user: 'alice' },
    });
  });

  it('requests racing on an expired token share one refresh', async () => {
    const { idp, calls } = fakePool();
    const t = new UserTokens(login(), idp, configEnv(), () => new Date('2026-11-22T12:00:00Z'));
    const tokens = await Promise.all([t.token(), t.token(), t.renew()]);
    expect(tokens).toEqual(['access-2', 'access-2', 'access-2']);
    expect(calls).toHaveLength(1);
  });

  it('a refresh token the pool refuses (expired, revoked, user removed) is one line: log in again', async () => {
    for (const reason of ['revoked', 'credentials'] as const) {
      const { idp } = fakePool(new PoolError(reason, 'NotAuthorizedException'));
      const t = new UserTokens(login(), idp, configEnv(), () => new Date('2026-11-22T12:00:00Z'));
      await expect(t.token()).rejects.toThrow(
        'the login of "alice" to http://api.test has expired or was revoked: log in again with "provisioner login --user alice"',
      );
    }
  });

  it('a pool that cannot be reached says so, not "expired"', async () => {
    const err = classifyPoolError(
      { ...pool, endpoint: 'http://127.0.0.1:1' },
      Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
      'refresh',
    );
    expect(err.message).toBe(
      'cannot reach the user pool at http://127.0.0.1:1: connection refused',
    );
    const { idp } = fakePool(err);
    const t = new UserTokens(login(), idp, configEnv(), () => new Date('2026-11-22T12:00:00Z'));
    await expect(t.token()).rejects.toThrow(err.message);
  });

  it("the pool's refusals: wrong password at login, revoked on refresh", () => {
    const notAuthorized = Object.assign(new Error('Incorrect username or password.'), {
      name: 'NotAuthorizedException',
    });
    const noUser = Object.assign(new Error('User does not exist.'), {
      name: 'UserNotFoundException',
    });
    expect(classifyPoolError(pool, notAuthorized, 'password')).toMatchObject({
      reason: 'credentials',
    });
    expect(classifyPoolError(pool, noUser, 'password')).toMatchObject({ reason: 'credentials' });
    expect(classifyPoolError(pool, notAuthorized, 'refresh')).toMatchObject({ reason: 'revoked' });
  });
});

describe('where a user login sits among the ways to reach the API', () => {
  it('a user login comes before the stack file and the environment, until logout; a token login stays last', () => {
    const env = {
      ...configEnv(),
      PROVISIONER_API_URL: 'https://api.example.com',
      PROVISIONER_API_TOKEN: 'tok-env',
    };
    saveLogin('https://login.example.com', 'tok-login', env);
    expect(resolveEndpoint('/', env)).toMatchObject({ source: 'env' });
    const checkout = mkdtempSync(join(tmpdir(), 'cli-auth-checkout-'));
    mkdirSync(join(checkout, '.provisioner'));
    writeFileSync(
      join(checkout, '.provisioner', 'stack.json'),
      JSON.stringify({ apiUrl: 'http://127.0.0.1:3000', token: 'tok-stack' }),
    );
    expect(resolveEndpoint(checkout, env)).toMatchObject({ source: 'stack', token: 'tok-stack' });
    saveUserLogin(login({ apiUrl: 'http://127.0.0.1:3000/' }), env);
    expect(resolveEndpoint(checkout, env)).toMatchObject({
      apiUrl: 'http://127.0.0.1:3000',
      source: 'user',
      token: 'access-1',
    });
    // logout (the file gone) returns to the stack's admin token
    rmSync(credentialsFile(env));
    expect(resolveEndpoint(checkout, env)).toMatchObject({ source: 'stack', token: 'tok-stack' });
  });
});

describe('the client with a user login', () => {
  let server: Server;
  let apiUrl: string;
  const seen: { auth?: string; key?: string; url: string }[] = [];
  let accept: (auth: string | undefined) => boolean = () => true;

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      req.resume();
      req.on('end', () => {
        const idem = req.headers['idempotency-key'];
        seen.push({
          url: req.url!,
          ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
          ...(typeof idem === 'string' ? { key: idem } : {}),
        });
        if (accept(req.headers.authorization))
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        else
          res
            .writeHead(401, { 'content-type': 'application/json' })
            .end('{"error":{"code":"unauthorized","message":"unauthorized"}}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
  });

  it('a 401 on a token it thought fresh: renews once and sends the same request, same key', async () => {
    accept = (auth) => auth === 'Bearer access-2';
    const { idp, calls } = fakePool();
    const auth = new UserTokens(
      login({ apiUrl }),
      idp,
      configEnv(),
      () => new Date('2026-11-22T10:00:00Z'),
    );
    const client = createClient({ apiUrl, token: 'access-1', auth, user: auth.current });
    expect(await client.request('POST', '/v1/models', { name: 'a' })).toEqual({ ok: true });
    expect(calls).toHaveLength(1);
    expect(seen.map((s) => s.auth)).toEqual(['Bearer access-1', 'Bearer access-2']);
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.key).toBe(seen[0]!.key);
  });

  it('a renewed token refused too (a removed user): one line, no loop', async () => {
    accept = () => false;
    const { idp, calls } = fakePool();
    const auth = new UserTokens(
      login({ apiUrl }),
      idp,
      configEnv(),
      () => new Date('2026-11-22T10:00:00Z'),
    );
    const client = createClient({ apiUrl, token: 'access-1', auth, user: auth.current });
    await expect(client.get('/v1/models')).rejects.toThrow(
      `the API at ${apiUrl} refused the login of "alice" (removed, or signed out): log in again with "provisioner login --user alice"`,
    );
    expect(calls).toHaveLength(1);
    expect(seen).toHaveLength(2);
  });

  it('a token login is never renewed: its 401 is the API message as before', async () => {
    accept = () => false;
    await expect(createClient({ apiUrl, token: 'tok' }).get('/v1/models')).rejects.toThrow(
      'unauthorized',
    );
    expect(seen).toHaveLength(1);
  });

  it('an empty token sends no Authorization header (GET /v1/auth needs none)', async () => {
    accept = () => true;
    await createClient({ apiUrl, token: '' }).get('/v1/auth');
    expect(seen[0]!.auth).toBeUndefined();
  });
});

describe('logout revokes the refresh token at the pool (Cognito RevokeToken)', () => {
  let server: Server;
  let endpoint: string;
  const seen: Array<{ target?: string; auth?: string; body: unknown }> = [];
  let answer: { status: number; type: string; body: string } = {
    status: 200,
    type: 'application/x-amz-json-1.1',
    body: '{}',
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({
          ...(typeof req.headers['x-amz-target'] === 'string'
            ? { target: req.headers['x-amz-target'] }
            : {}),
          ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
          body: JSON.parse(body || 'null'),
        });
        res.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
  });

  const cognitoError = (type: string, message = 'no') => ({
    status: 400,
    type: 'application/x-amz-json-1.1',
    body: JSON.stringify({ __type: type, message }),
  });

  it('sends the refresh token with the app client id, unsigned; resolves when the pool revoked it', async () => {
    answer = { status: 200, type: 'application/x-amz-json-1.1', body: '{}' };
    await expect(
      cognitoProvider().revoke({ ...pool, endpoint }, 'refresh-1'),
    ).resolves.toBeUndefined();
    expect(seen).toEqual([
      {
        target: 'AWSCognitoIdentityProviderService.RevokeToken',
        body: { Token: 'refresh-1', ClientId: 'client-1' },
      },
    ]);
  });

  it.each(['Refresh Token has been revoked', 'Invalid Refresh Token', 'Invalid token'])(
    'a token the pool says is no longer valid counts as revoked (NotAuthorizedException: %s)',
    async (message) => {
      answer = cognitoError('NotAuthorizedException', message);
      await expect(
        cognitoProvider().revoke({ ...pool, endpoint }, 'refresh-1'),
      ).resolves.toBeUndefined();
    },
  );

  it('a NotAuthorizedException about anything but the token is not counted as revoked', async () => {
    answer = cognitoError(
      'NotAuthorizedException',
      'Client client-1 is configured for secret but secret was not received',
    );
    await expect(cognitoProvider().revoke({ ...pool, endpoint }, 'refresh-1')).rejects.toThrow(
      `the user pool at ${endpoint} refused (NotAuthorizedException: Client client-1 is configured for secret but secret was not received)`,
    );
    // a message quoting something token-like never reaches the line
    const tokenish = 'eyJ'.padEnd(60, 'a');
    answer = cognitoError('NotAuthorizedException', `Unable to verify secret hash ${tokenish}`);
    const refused = cognitoProvider().revoke({ ...pool, endpoint }, 'refresh-1');
    await expect(refused).rejects.toThrow(
      `the user pool at ${endpoint} refused (NotAuthorizedException: Unable to verify secret hash ***)`,
    );
  });

  it('says why not: revocation off for the client, an answer that is not Cognito’s (moto has no RevokeToken), no pool there', async () => {
    answer = cognitoError('UnsupportedOperationException');
    await expect(cognitoProvider().revoke({ ...pool, endpoint }, 'refresh-1')).rejects.toThrow(
      'the app client "client-1" does not allow token revocation',
    );
    // moto 5.2.5: NotImplementedError, answered as an HTML 500
    answer = { status: 500, type: 'text/html', body: '<!doctype html><title>500</title>' };
    await expect(cognitoProvider().revoke({ ...pool, endpoint }, 'refresh-1')).rejects.toThrow(
      `the user pool at ${endpoint} answered with an error (HTTP 500)`,
    );
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(
      cognitoProvider().revoke({ ...pool, endpoint: gone }, 'refresh-1'),
    ).rejects.toThrow(`cannot reach the user pool at ${gone}: ECONNREFUSED`);
  });
});
