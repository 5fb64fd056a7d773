import { InitiateAuthCommand } from '@aws-sdk/client-cognito-identity-provider';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniqueName } from './api-client';
import type { Terminal } from './cli-terminal';
import { CLI_BIN, CliTerminals } from './cli-terminal';
import { cognitoClientFor } from './identity-support';
import { loadTestStack } from './stack';

/**
 * The identity verbs as people use them, against the test stack and its
 * user pool (moto's cognito-idp): the admin (stack.json's token) adds alice
 * and bob at a terminal, alice logs in at a terminal (a wrong password
 * first), adds a model and grants bob; bob sees nothing until granted, is
 * refused what his level does not allow, and once removed his stored login
 * stops at once. Each person has their own config directory; all work in a
 * checkout whose .provisioner/stack.json is the test stack's.
 */
const stack = loadTestStack();
const home = mkdtempSync(join(tmpdir(), 'cli-id-'));
const checkout = join(home, 'checkout');
mkdirSync(join(checkout, '.provisioner'), { recursive: true });
writeFileSync(join(checkout, '.provisioner', 'stack.json'), JSON.stringify(stack));

const alice = uniqueName('alice');
const bob = uniqueName('bob');
const model = uniqueName('team');
const ALICE_PASSWORD = 'Alice-pw-7261!';
const BOB_PASSWORD = 'Bob-pw-5512!';
const WRONG_PASSWORD = 'not-her-pw-42!';

type Person = 'admin' | 'alice' | 'bob';

function envOf(person: Person): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    PROVISIONER_CONFIG_DIR: join(home, `config-${person}`),
    NO_COLOR: '1',
  };
}

function credentials(person: Person) {
  return join(home, `config-${person}`, 'credentials.json');
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The command off a terminal (stdin a pipe), as a script runs it. */
function cli(person: Person, args: string[], input = ''): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args], {
      cwd: checkout,
      env: envOf(person),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const terminals = new CliTerminals(home, 't');

/** The command at a terminal of its own. */
function terminal(person: Person, args: string[]): Promise<Terminal> {
  return terminals.open(args, envOf(person), checkout);
}

function expectNoSecrets(text: string) {
  for (const secret of [ALICE_PASSWORD, BOB_PASSWORD, WRONG_PASSWORD, stack.token])
    expect(text).not.toContain(secret);
  // one line, never a stack trace
  expect(text).not.toMatch(/\n\s+at /);
}

afterAll(async () => {
  await terminals.closeAll();
});

describe('users, logins and access through the CLI', () => {
  it('the admin adds alice at a terminal: the password asked twice, never echoed', async () => {
    const t = await terminal('admin', ['add-user', alice]);
    await t.waitFor(new RegExp(`Enter a password for ${alice}:$`));
    await t.type(ALICE_PASSWORD);
    await t.waitFor(/Type the password again:$/);
    await t.type(ALICE_PASSWORD);
    const { code, screen } = await t.finished();
    expect(screen).toContain(`User "${alice}" added\n`);
    expect(code).toBe(0);
    expectNoSecrets(screen);
  });

  it('a second password that differs adds no one', async () => {
    const t = await terminal('admin', ['add-user', 'nobody-typo']);
    await t.waitFor(/Enter a password for nobody-typo:$/);
    await t.type(BOB_PASSWORD);
    await t.waitFor(/Type the password again:$/);
    await t.type(`${BOB_PASSWORD}x`);
    const { code, screen } = await t.finished();
    expect(screen.split('\n').at(-1)).toBe('ERROR passwords do not match');
    expect(code).toBe(1);
    const users = await cli('admin', ['users', '--format', 'json']);
    expect(JSON.parse(users.stdout).users.map((u: { name: string }) => u.name)).not.toContain(
      'nobody-typo',
    );
  });

  it('the admin adds bob from a script (--password-stdin) and grants alice add-model', async () => {
    const add = await cli('admin', ['add-user', bob, '--password-stdin'], `${BOB_PASSWORD}\n`);
    expect(add).toEqual({
      code: 0,
      stdout: '',
      stderr: `User "${bob}" added\n${bob} can log in with "provisioner login --user ${bob}"\n`,
    });
    expect(await cli('admin', ['grant', alice, 'add-model'])).toEqual({
      code: 0,
      stdout: '',
      stderr: '',
    });
    const again = await cli('admin', ['grant', alice, 'login']);
    expect(again).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR user already has "login" access or greater\n',
    });
    const users = await cli('admin', ['users']);
    expect(users.code).toBe(0);
    expect(users.stdout).toMatch(new RegExp(`^Name +Access\\n`));
    expect(users.stdout).toMatch(new RegExp(`^${alice} +add-model$`, 'm'));
    expect(users.stdout).toMatch(new RegExp(`^${bob} +login$`, 'm'));
  });

  it('alice logs in at a terminal: a wrong password is one line and exit 1; the right one is stored 0600', async () => {
    const wrong = await terminal('alice', ['login', '--user', alice]);
    await wrong.waitFor(new RegExp(`please enter password for ${alice} on ${stack.apiUrl}:$`));
    await wrong.type(WRONG_PASSWORD);
    const refused = await wrong.finished();
    expect(refused.screen.split('\n').at(-1)).toBe(
      `ERROR cannot log in as "${alice}": wrong user name or password`,
    );
    expect(refused.code).toBe(1);
    expectNoSecrets(refused.screen);

    const right = await terminal('alice', ['login', '--user', alice]);
    await right.waitFor(/please enter password for .*:$/);
    await right.type(ALICE_PASSWORD);
    const ok = await right.finished();
    expect(ok.screen.split('\n').at(-1)).toBe(
      `Welcome, ${alice}. You are now logged in to ${stack.apiUrl} with "add-model" access.`,
    );
    expect(ok.code).toBe(0);
    expectNoSecrets(ok.screen);

    const file = credentials('alice');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = readFileSync(file, 'utf8');
    expect(stored).not.toContain(ALICE_PASSWORD);
    expect(JSON.parse(stored)).toMatchObject({
      apiUrl: stack.apiUrl,
      user: alice,
      refreshToken: expect.any(String),
      accessToken: expect.any(String),
    });
  });

  it("alice's login comes before stack.json's admin token: whoami, and her model", async () => {
    const who = await cli('alice', ['whoami']);
    expect(who.code).toBe(0);
    expect(who.stdout).toBe(
      `API:     ${stack.apiUrl}\nModel:   (none)\nUser:    ${alice}\nAccess:  add-model\n`,
    );
    const add = await cli('alice', ['add-model', model]);
    expect(add).toEqual({
      code: 0,
      stdout: '',
      stderr: `Added '${model}' model on aws/us-east-1\n`,
    });
    const access = await cli('alice', ['access']);
    // the user logged in is marked, as juju users marks the current one
    expect(access.stdout).toMatch(new RegExp(`^Name +Access\\n${alice}\\* +admin\\n$`));
    // she is not a superuser: the users list is not hers to see
    const users = await cli('alice', ['users']);
    expect(users.code).toBe(1);
    expect(users.stderr).toMatch(/^ERROR .*permission denied.*\n$/);
  });

  it('bob sees nothing until granted: the model is "not found" to him, as if it did not exist', async () => {
    const login = await cli(
      'bob',
      ['login', '--user', bob, '--password-stdin'],
      `${BOB_PASSWORD}\n`,
    );
    expect(login.code).toBe(0);
    const models = await cli('bob', ['models']);
    expect(models).toEqual({ code: 0, stdout: 'No models to display.\n', stderr: '' });
    const status = await cli('bob', ['status', '-m', model]);
    expect(status).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR model "${model}" not found\n`,
    });
    const grant = await cli('bob', ['grant', bob, 'admin', model]);
    expect(grant).toEqual({ code: 1, stdout: '', stderr: `ERROR model "${model}" not found\n` });
  });

  it('alice grants bob read: he sees the model, is refused a change (403), and grant/revoke follow Juju', async () => {
    expect(await cli('alice', ['grant', bob, 'read', model])).toEqual({
      code: 0,
      stdout: '',
      stderr: '',
    });
    const models = await cli('bob', ['models', '--format', 'json']);
    expect(JSON.parse(models.stdout).models.map((m: { name: string }) => m.name)).toEqual([model]);
    const denied = await cli('bob', ['add-machine', '-m', model]);
    expect(denied.code).toBe(1);
    expect(denied.stdout).toBe('');
    expect(denied.stderr).toMatch(/^ERROR .*permission denied.*\n$/);

    expect(await cli('alice', ['grant', bob, 'read', model])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR user already has "read" access or greater\n',
    });
    expect((await cli('alice', ['grant', bob, 'admin', model])).code).toBe(0);
    expect((await cli('alice', ['revoke', bob, 'admin', model])).code).toBe(0);
    const list = await cli('bob', ['access', '-m', model, '--format', 'json']);
    expect(JSON.parse(list.stdout).users).toEqual(
      expect.arrayContaining([
        { user: alice, access: 'admin' },
        { user: bob, access: 'write' },
      ]),
    );
    // revoke write leaves read
    expect((await cli('alice', ['revoke', bob, 'write', model])).code).toBe(0);
    const show = await cli('alice', ['show-model', model, '--format', 'json']);
    expect(JSON.parse(show.stdout)[model].users).toEqual({
      [alice]: { access: 'admin' },
      [bob]: { access: 'read' },
    });
    // alice is the only admin: she cannot revoke herself out of it
    expect(await cli('alice', ['revoke', alice, 'read', model])).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR cannot remove the last admin of model "${model}"\n`,
    });
  });

  it("alice reads her model's audit: her changes and bob's refusal, newest first, as a table", async () => {
    const run = await cli('alice', ['audit', '-m', model, '--since', '1h']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Time +User +Status +Request$/);
    expect(run.stdout).toMatch(
      new RegExp(`^\\S+ \\S+Z +${bob} +403 +POST /v1/models/${model}/machines$`, 'm'),
    );
    expect(run.stdout).toMatch(
      new RegExp(`^\\S+ \\S+Z +${alice} +200 +PUT /v1/models/${model}/access/${bob}$`, 'm'),
    );
    const json = JSON.parse(
      (await cli('alice', ['audit', '-m', model, '--format', 'json'])).stdout,
    );
    const times = json.entries.map((e: { time: string }) => e.time);
    expect([...times].sort().reverse()).toEqual(times);
    expectNoSecrets(run.stdout + JSON.stringify(json));
  });

  it('an expired access token is renewed with the refresh token, and the new one stored', async () => {
    const file = credentials('alice');
    const before = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...before, expiresAt: '2000-01-01T00:00:00.000Z' }), {
      mode: 0o600,
    });
    const who = await cli('alice', ['whoami', '--format', 'json']);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ user: alice });
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after.refreshToken).toBe(before.refreshToken);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(Date.parse(after.expiresAt)).toBeGreaterThan(Date.now() + 10 * 60_000);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a refresh token the pool does not know (expired) is one line: log in again', async () => {
    const dir = join(home, 'config-alice-expired');
    mkdirSync(dir, { recursive: true });
    const stored = JSON.parse(readFileSync(credentials('alice'), 'utf8'));
    writeFileSync(
      join(dir, 'credentials.json'),
      JSON.stringify({
        ...stored,
        refreshToken: 'a-refresh-token-long-gone',
        expiresAt: '2000-01-01T00:00:00.000Z',
      }),
      { mode: 0o600 },
    );
    const run = await new Promise<Run>((resolvePromise) => {
      const child = spawn(process.execPath, [CLI_BIN, 'models'], {
        cwd: checkout,
        env: { ...envOf('alice'), PROVISIONER_CONFIG_DIR: dir },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR the login of "${alice}" to ${stack.apiUrl} has expired or was revoked: log in again with "provisioner login --user ${alice}"\n`,
    });
  });

  it('bob removed at a terminal (confirmed): his stored login stops at once, one line; he cannot log in again', async () => {
    const t = await terminal('admin', ['remove-user', bob]);
    await t.waitFor(/Continue \(y\/N\)\?$/);
    await t.type('y');
    const removed = await t.finished();
    expect(removed.screen.split('\n').at(-1)).toBe(`User "${bob}" removed`);
    expect(removed.code).toBe(0);

    const run = await cli('bob', ['models']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `^ERROR the (login of "${bob}" to ${stack.apiUrl} has expired or was revoked|API at ${stack.apiUrl} refused the login of "${bob}" \\(removed, or signed out\\)): log in again with "provisioner login --user ${bob}"\\n$`,
      ),
    );
    const again = await cli(
      'bob',
      ['login', '--user', bob, '--password-stdin'],
      `${BOB_PASSWORD}\n`,
    );
    expect(again).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR cannot log in as "${bob}": wrong user name or password\n`,
    });
    expect((await cli('admin', ['access', '-m', model, '--format', 'json'])).stdout).not.toContain(
      bob,
    );
  });

  it("alice logs out: the pool is asked to revoke her refresh token, and commands go back to stack.json's admin token", async () => {
    const stored = JSON.parse(readFileSync(credentials('alice'), 'utf8')) as {
      refreshToken: string;
    };
    // the pinned moto (5.2.5) has no RevokeToken (it answers an HTML 500): logout
    // still forgets the login, and says the token was not revoked
    expect(await cli('alice', ['logout'])).toEqual({
      code: 0,
      stdout: '',
      stderr: `Logged out "${alice}". The refresh token was not revoked (the user pool at ${stack.cognitoEndpoint} answered with an error (HTTP 500)): it stays valid at the user pool until it expires.\n`,
    });
    expect(existsSync(credentials('alice'))).toBe(false);
    // which is true: moto still renews with it (Cognito would refuse it after RevokeToken)
    const cognito = cognitoClientFor(stack);
    const renewed = await cognito.send(
      new InitiateAuthCommand({
        ClientId: stack.userPoolClientId,
        AuthFlow: 'REFRESH_TOKEN_AUTH',
        AuthParameters: { REFRESH_TOKEN: stored.refreshToken },
      }),
    );
    cognito.destroy();
    expect(renewed.AuthenticationResult?.AccessToken).toMatch(/\S/);
    const who = await cli('alice', ['whoami', '--format', 'json']);
    expect(JSON.parse(who.stdout)).toMatchObject({ user: 'admin', access: 'superuser' });
    // the admin tidies up
    expect((await cli('admin', ['destroy-model', model, '-y', '--no-wait'])).code).toBe(0);
    expect((await cli('admin', ['remove-user', alice, '-y'])).code).toBe(0);
  });
});
