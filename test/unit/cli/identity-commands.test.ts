import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IdentityProvider } from '../../../cli/auth';
import { credentialsFile, saveLogin, saveUserLogin, type PoolInfo } from '../../../cli/config';
import { ApiError, CliError } from '../../../cli/errors';
import { runCli, type Recorded } from './harness';

const modelAccess = {
  users: [
    { user: 'admin', access: 'admin' },
    { user: 'bob', access: 'write' },
    { user: 'carol', access: 'read' },
  ],
};
const poolUsers = {
  users: [
    { name: 'bob', access: 'login' },
    { name: 'alice', access: 'add-model' },
  ],
};

function api(req: Recorded): unknown {
  if (req.method === 'GET' && req.path === '/v1/models/demo/access') return modelAccess;
  if (req.method === 'GET' && req.path === '/v1/users') return poolUsers;
  if (req.method === 'GET' && req.path === '/v1/models/demo')
    return { name: 'demo', region: 'us-east-1', constraints: 'mem=2048M' };
  if (req.method === 'GET' && req.path === '/v1/whoami')
    return { user: 'admin', access: 'superuser' };
  return undefined;
}

const writes = (reqs: Recorded[]) => reqs.filter((r) => r.method !== 'GET');

describe('grant and revoke against the API', () => {
  it('grant on a model reads the access list, then PUTs the raised level; Juju is silent on success', async () => {
    const h = await runCli(['grant', 'carol', 'admin', 'demo'], api);
    expect(h).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(h.requests).toEqual([
      { method: 'GET', path: '/v1/models/demo/access' },
      { method: 'PUT', path: '/v1/models/demo/access/carol', body: { access: 'admin' } },
    ]);
  });

  it('grant of a level already held or exceeded changes nothing and says so', async () => {
    const h = await runCli(['grant', 'bob', 'read', 'demo'], api);
    expect(h.code).toBe(1);
    expect(h.stderr).toBe('ERROR user already has "read" access or greater\n');
    expect(writes(h.requests)).toEqual([]);
  });

  it('grant to a user with no access yet: PUT; an unknown user is the API 404 message', async () => {
    const h = await runCli(['grant', 'dave', 'read', 'demo'], (req) =>
      req.method === 'PUT'
        ? Promise.reject(new ApiError(404, 'not-found', 'user "dave" not found'))
        : api(req),
    );
    expect(writes(h.requests)).toEqual([
      { method: 'PUT', path: '/v1/models/demo/access/dave', body: { access: 'read' } },
    ]);
    expect(h).toMatchObject({ code: 1, stderr: 'ERROR user "dave" not found\n' });
  });

  it('revoke write leaves read; revoke read DELETEs the access', async () => {
    const w = await runCli(['revoke', 'bob', 'write', 'demo'], api);
    expect(w.code).toBe(0);
    expect(writes(w.requests)).toEqual([
      { method: 'PUT', path: '/v1/models/demo/access/bob', body: { access: 'read' } },
    ]);
    const r = await runCli(['revoke', 'carol', 'read', 'demo'], api);
    expect(r.code).toBe(0);
    expect(writes(r.requests)).toEqual([
      { method: 'DELETE', path: '/v1/models/demo/access/carol' },
    ]);
  });

  it('revoke of the last admin is the API 409 message', async () => {
    const h = await runCli(['revoke', 'admin', 'read', 'demo'], (req) =>
      req.method === 'DELETE'
        ? Promise.reject(
            new ApiError(409, 'conflict', 'cannot remove the last admin of model "demo"'),
          )
        : api(req),
    );
    expect(h).toMatchObject({
      code: 1,
      stderr: 'ERROR cannot remove the last admin of model "demo"\n',
    });
  });

  it('revoke of a level not held is refused without a write', async () => {
    const h = await runCli(['revoke', 'carol', 'admin', 'demo'], api);
    expect(h).toMatchObject({
      code: 1,
      stderr: 'ERROR user "carol" does not have "admin" access (has "read")\n',
    });
    expect(writes(h.requests)).toEqual([]);
  });

  it('controller levels without a model: read from the users list, PUT /v1/access/{user}', async () => {
    const g = await runCli(['grant', 'bob', 'add-model'], api);
    expect(g.code).toBe(0);
    expect(g.requests).toEqual([
      { method: 'GET', path: '/v1/users' },
      { method: 'PUT', path: '/v1/access/bob', body: { access: 'add-model' } },
    ]);
    const r = await runCli(['revoke', 'alice', 'add-model'], api);
    expect(writes(r.requests)).toEqual([
      { method: 'PUT', path: '/v1/access/alice', body: { access: 'login' } },
    ]);
    const again = await runCli(['grant', 'alice', 'login'], api);
    expect(again.stderr).toBe('ERROR user already has "login" access or greater\n');
    const unknown = await runCli(['grant', 'zed', 'superuser'], api);
    expect(unknown).toMatchObject({ code: 1, stderr: 'ERROR user "zed" not found\n' });
    expect(writes(unknown.requests)).toEqual([]);
  });

  it('usage errors exit 2 before any request: a level that does not fit, a bad user name', async () => {
    const a = await runCli(['grant', 'bob', 'superuser', 'demo'], api);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(
      /^ERROR You have specified a controller access permission "superuser"/,
    );
    const b = await runCli(['grant', 'bob', 'write'], api);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/^ERROR You have specified a model access permission "write"/);
    const c = await runCli(['grant', 'Bob', 'read', 'demo'], api);
    expect(c).toMatchObject({
      code: 2,
      stderr:
        'ERROR invalid user name "Bob": use lowercase letters, digits and hyphens, starting with a letter\n',
    });
    expect([...a.requests, ...b.requests, ...c.requests]).toEqual([]);
  });

  it('permission denied from the API is one line, exit 1', async () => {
    const h = await runCli(['grant', 'bob', 'admin', 'demo'], (req) =>
      req.method === 'PUT'
        ? Promise.reject(new ApiError(403, 'forbidden', 'permission denied'))
        : { users: [] },
    );
    expect(h).toMatchObject({ code: 1, stdout: '', stderr: 'ERROR permission denied\n' });
  });
});

describe('users, access, show-model, whoami', () => {
  it("users: Name and Access, sorted; a model argument lists the model's users", async () => {
    const h = await runCli(['users'], api);
    expect(h.stdout).toBe('Name   Access\nalice  add-model\nbob    login\n');
    const m = await runCli(['users', 'demo'], api);
    expect(m.stdout).toBe('Name   Access\nadmin  admin\nbob    write\ncarol  read\n');
    const json = await runCli(['access', '--format', 'json'], api);
    expect(JSON.parse(json.stdout)).toEqual({ model: 'demo', ...modelAccess });
  });

  it('show-model: the model and its users as YAML', async () => {
    const h = await runCli(['show-model'], api);
    expect(h.stdout).toBe(
      [
        'demo:',
        '  name: demo',
        '  cloud: aws',
        '  region: us-east-1',
        '  constraints: mem=2048M',
        '  users:',
        '    admin:',
        '      access: admin',
        '    bob:',
        '      access: write',
        '    carol:',
        '      access: read',
        '',
      ].join('\n'),
    );
  });

  it('whoami: API, model, user and access', async () => {
    const h = await runCli(['whoami'], api);
    expect(h.stdout).toBe(
      'API:     http://api.test\nModel:   demo\nUser:    admin\nAccess:  superuser\n',
    );
    const y = await runCli(['whoami', '--format', 'json'], api);
    expect(JSON.parse(y.stdout)).toEqual({
      api: 'http://api.test',
      model: 'demo',
      user: 'admin',
      access: 'superuser',
    });
  });

  it('add-user without a terminal needs --password-stdin; remove-user needs --yes', async () => {
    const a = await runCli(['add-user', 'bob'], api);
    expect(a).toMatchObject({
      code: 2,
      stderr: 'ERROR cannot ask for a password without a terminal: use --password-stdin\n',
    });
    const r = await runCli(['remove-user', 'bob'], api);
    expect(r).toMatchObject({
      code: 2,
      stderr:
        'ERROR cannot ask for confirmation without a terminal: use --yes (or -y) to remove the user\n',
    });
    const y = await runCli(['remove-user', 'bob', '-y'], api);
    expect(y).toMatchObject({ code: 0, stderr: 'User "bob" removed\n' });
    expect(y.requests).toEqual([{ method: 'DELETE', path: '/v1/users/bob' }]);
    expect([...a.requests, ...r.requests]).toEqual([]);
  });
});

describe('audit', () => {
  const entry = (i: number, model?: string) => ({
    time: `2026-11-22T10:${String(59 - i).padStart(2, '0')}:00.123Z`,
    user: i % 2 ? 'bob' : 'alice',
    method: 'POST',
    path: `/v1/models/${model ?? 'demo'}/machines`,
    ...(model === undefined ? {} : { model }),
    status: 201,
    requestId: `req-${i}`,
  });

  it('every model: a table with the model column, --since as a time back from now', async () => {
    const h = await runCli(['audit', '--since', '1h'], () => ({
      entries: [entry(0, 'demo'), entry(1, 'other')],
    }));
    expect(h.requests).toEqual([
      {
        method: 'GET',
        path: '/v1/audit?since=2026-11-22T09%3A20%3A30.000Z&limit=100',
      },
    ]);
    expect(h.stdout).toBe(
      [
        'Time                  User   Model  Status  Request',
        '2026-11-22 10:59:00Z  alice  demo   201     POST /v1/models/demo/machines',
        '2026-11-22 10:58:00Z  bob    other  201     POST /v1/models/other/machines',
        '',
      ].join('\n'),
    );
  });

  it('one model with -m: its route, no model column; json keeps every field', async () => {
    const h = await runCli(['audit', '-m', 'demo', '--format', 'json'], () => ({
      entries: [entry(0)],
    }));
    expect(h.requests[0]!.path).toBe('/v1/models/demo/audit?limit=100');
    expect(JSON.parse(h.stdout)).toEqual({ entries: [entry(0)] });
    const t = await runCli(['audit', '-m', 'demo'], () => ({ entries: [entry(0)] }));
    expect(t.stdout.split('\n')[0]).toBe('Time                  User   Status  Request');
  });

  it('follows the cursor up to --limit, in pages of at most 500, and says when there is more', async () => {
    let page = 0;
    const h = await runCli(['audit', '--limit', '700', '--format', 'json'], () => {
      page += 1;
      const size = page === 1 ? 500 : 200;
      return {
        entries: Array.from({ length: size }, (_, i) => entry(i % 60)),
        cursor: `c${page}`,
      };
    });
    expect(h.requests.map((r) => r.path)).toEqual([
      '/v1/audit?limit=500',
      '/v1/audit?limit=200&cursor=c1',
    ]);
    expect(JSON.parse(h.stdout).entries).toHaveLength(700);
    expect(h.stderr).toBe(
      '(showing the newest 700: there are more; raise --limit or narrow --since)\n',
    );
  });

  it('bad --since or --limit, or --user with -m: exit 2, no request', async () => {
    const a = await runCli(['audit', '--since', 'yesterday'], api);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/^ERROR invalid value "yesterday" for option --since/);
    const b = await runCli(['audit', '--limit', '0'], api);
    expect(b.code).toBe(2);
    const c = await runCli(['audit', '-m', 'demo', '--user', 'bob'], api);
    expect(c).toMatchObject({
      code: 2,
      stderr: 'ERROR --user filters the audit of every model: leave out -m\n',
    });
    expect([...a.requests, ...b.requests, ...c.requests]).toEqual([]);
  });

  it('nothing recorded: a line saying so', async () => {
    const h = await runCli(['audit'], () => ({ entries: [] }));
    expect(h.stdout).toBe('No audit entries to display.\n');
  });
});

describe('logout', () => {
  const pool = { region: 'us-east-1', userPoolId: 'us-east-1_abc', clientId: 'client-1' };

  /** A config dir holding alice's login, and a pool that records what it was asked to revoke. */
  function loggedIn(refuse?: Error) {
    const env = { PROVISIONER_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), 'cli-logout-')), 'c') };
    saveUserLogin(
      {
        apiUrl: 'http://api.test',
        user: 'alice',
        pool,
        refreshToken: 'refresh-1',
        accessToken: 'access-1',
        expiresAt: '2026-11-22T11:00:00.000Z',
      },
      env,
    );
    const revoked: Array<[PoolInfo, string]> = [];
    const identity: IdentityProvider = {
      passwordAuth: () => Promise.reject(new Error('not used')),
      refresh: () => Promise.reject(new Error('not used')),
      revoke: (p, token) => {
        revoked.push([p, token]);
        return refuse ? Promise.reject(refuse) : Promise.resolve();
      },
    };
    return { env, identity, revoked };
  }

  it('revokes the stored refresh token at the pool, then forgets the login', async () => {
    const { env, identity, revoked } = loggedIn();
    const h = await runCli(['logout'], api, { env, identity });
    expect(h).toMatchObject({ code: 0, stdout: '', stderr: 'Logged out "alice".\n' });
    expect(revoked).toEqual([[pool, 'refresh-1']]);
    expect(existsSync(credentialsFile(env))).toBe(false);
    expect(h.requests).toEqual([]);
  });

  it('a pool that does not revoke (unreachable, or without RevokeToken) does not keep anyone logged in: it says so', async () => {
    const { env, identity, revoked } = loggedIn(
      new CliError('the user pool at http://127.0.0.1:5000 answered with an error (HTTP 500)'),
    );
    const h = await runCli(['logout'], api, { env, identity });
    expect(h).toMatchObject({
      code: 0,
      stdout: '',
      stderr:
        'Logged out "alice". The refresh token was not revoked (the user pool at http://127.0.0.1:5000 answered with an error (HTTP 500)): it stays valid at the user pool until it expires.\n',
    });
    expect(revoked).toHaveLength(1);
    expect(existsSync(credentialsFile(env))).toBe(false);
  });

  it('a token login has nothing to revoke: the file goes, the pool is not asked', async () => {
    const { identity, revoked } = loggedIn();
    const env = { PROVISIONER_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), 'cli-logout-')), 'c') };
    saveLogin('http://api.test', 'tok', env);
    const h = await runCli(['logout'], api, { env, identity });
    expect(h).toMatchObject({ code: 0, stderr: 'Logged out.\n' });
    expect(revoked).toEqual([]);
    expect(existsSync(credentialsFile(env))).toBe(false);
  });
});
