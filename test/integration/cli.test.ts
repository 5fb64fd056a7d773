import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { freePort } from '../../local/processes';
import { uniqueName } from './api-client';
import { loadTestStack } from './stack';

/**
 * The real `provisioner` command, run as a child process against the test
 * stack, as a person runs it: exit codes, stdout and stderr are what is
 * checked. One model is shared through the file to keep the run short.
 */
const stack = loadTestStack();
const BIN = resolve(__dirname, '../../cli/bin.js');
const home = mkdtempSync(join(tmpdir(), 'cli-it-'));
const workdir = join(home, 'work');
mkdirSync(workdir);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const baseEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    PROVISIONER_CONFIG_DIR: join(home, 'config'),
    PROVISIONER_API_URL: stack.apiUrl,
    PROVISIONER_API_TOKEN: stack.token,
  };
  return env;
};

function cli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {},
): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? workdir,
      env: opts.env ?? baseEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

const model = uniqueName('cli');

function expectClean(run: Run) {
  expect(run.stdout + run.stderr).not.toContain(stack.token);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('provisioner CLI against the local stack', () => {
  it('add-model switches to the new model; models marks it; a taken name is refused', async () => {
    const add = await cli(['add-model', model, '--constraints', 'mem=1G']);
    expect(add).toEqual({
      code: 0,
      stdout: '',
      stderr: `Added '${model}' model on aws/us-east-1\n`,
    });
    const sw = await cli(['switch']);
    expect(sw).toEqual({ code: 0, stdout: `${model}\n`, stderr: '' });
    const models = await cli(['models']);
    expect(models.code).toBe(0);
    expect(models.stdout).toMatch(
      /^Model +Cloud\/Region +Constraints +Machines +Units +Access +Created +Last change\n/,
    );
    // humanised, never a raw ISO time; the admin token is a superuser: admin on every model
    expect(models.stdout).toMatch(
      new RegExp(`^${model}\\* +aws/us-east-1 +mem=1024M +0 +0 +admin +just now +just now$`, 'm'),
    );
    expect(models.stdout).not.toMatch(/\d{4}-\d\d-\d\dT/);
    const again = await cli(['add-model', model]);
    expect(again).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR model "${model}" already exists\n`,
    });
    const json = await cli(['models', '--format', 'json']);
    expect(JSON.parse(json.stdout)['current-model']).toBe(model);
  });

  it('model constraints: set, shown canonical; a bad one is the API message and exit 1', async () => {
    expect(await cli(['set-model-constraints', 'mem=2G', 'cores=1'])).toEqual({
      code: 0,
      stdout: '',
      stderr: '',
    });
    expect(await cli(['model-constraints'])).toEqual({
      code: 0,
      stdout: 'cores=1 mem=2048M\n',
      stderr: '',
    });
    const bad = await cli(['set-model-constraints', 'mem=2G', 'mem=4G']);
    expect(bad).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR bad "mem" constraint: already set\n',
    });
    expectClean(bad);
  });

  it('deploy --wait: plain progress lines off a terminal, exit 0 when every machine runs', async () => {
    const run = await cli([
      'deploy',
      'wordpress',
      '--base',
      'ubuntu@22.04',
      '-n',
      '2',
      '--wait',
      '--timeout',
      '3m',
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe('Deployed "wordpress" from charm "wordpress" on ubuntu@22.04');
    expect(lines.at(-2)).toBe('machines 2/2 settled: 0 pending, 0 allocating, 2 running, 0 error');
    expect(lines.at(-1)).toBe('2 machines running (0, 1)');
    expect(run.stderr).not.toContain('\r');
    expect(run.stderr).not.toContain('\x1b');
  });

  it('subordinates, relations, a container and units show in status as Juju lays it out', async () => {
    expect(
      await cli(['deploy', 'telegraf', '--subordinate', '--base', 'ubuntu@22.04']),
    ).toMatchObject({ code: 0 });
    expect(await cli(['relate', 'wordpress', 'telegraf'])).toEqual({
      code: 0,
      stdout: '',
      stderr: '',
    });
    const twice = await cli(['integrate', 'telegraf', 'wordpress']);
    expect(twice).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR relation "telegraf wordpress" already exists\n',
    });
    expect(await cli(['deploy', 'mysql', '--base', 'ubuntu@22.04', '--to', 'lxd:0'])).toMatchObject(
      { code: 0 },
    );

    // the container is created on its host by its own workflow (Run Command): wait until it runs
    const deadline = Date.now() + 120_000;
    for (;;) {
      const json = JSON.parse((await cli(['status', '--format', 'json'])).stdout);
      if (json.machines['0/lxd/0']?.status === 'running') break;
      if (Date.now() > deadline) throw new Error(`container not running: ${JSON.stringify(json)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const status = await cli(['status']);
    expect(status.code).toBe(0);
    expect(status.stdout).not.toContain('\x1b');
    const sections = status.stdout.trimEnd().split('\n\n');
    // Model, App, Unit, Machine, and the model's cost footer (the stack prices its types)
    expect(sections).toHaveLength(5);
    expect(sections[4]).toMatch(/^Cost of running machines: \$\d+\.\d{4}\/h, \$\d+\.\d{2}\/month$/);
    expect(sections[0]).toMatch(
      new RegExp(
        // the stack prices instance types, so the running machines' cost per hour shows too
        `^Model +Cloud/Region +Constraints +Timestamp +Cost/h\\n${model} +aws/us-east-1 +cores=1 mem=2048M +\\d\\d:\\d\\d:\\d\\dZ +\\$\\d+\\.\\d+$`,
      ),
    );
    expect(sections[1]!.split('\n')).toEqual([
      'App        Status  Scale  Charm      Base          Message',
      'mysql      active      1  mysql      ubuntu@22.04',
      'telegraf   active      2  telegraf   ubuntu@22.04',
      'wordpress  active      2  wordpress  ubuntu@22.04',
    ]);
    // the Public address column fills in once a sweep has listed the instances
    const units = sections[2]!.split('\n').map((l) => l.replace(/ +\d+\.\d+\.\d+\.\d+$/, ''));
    // a subordinate is indented two spaces: its row starts with an empty cell here
    expect(units.map((l) => l.trimEnd().split(/ {2,}/))).toEqual([
      ['Unit', 'Workload', 'Agent', 'Machine', 'Public address', 'Message'],
      ['mysql/0', 'active', 'idle', '0/lxd/0'],
      ['wordpress/0', 'active', 'idle', '0'],
      ['', 'telegraf/0', 'active', 'idle'],
      ['wordpress/1', 'active', 'idle', '1'],
      ['', 'telegraf/1', 'active', 'idle'],
    ]);
    const machines = sections[3]!.split('\n');
    expect(machines[0]).toMatch(/^Machine +State +Address +Inst id +Inst type +Base +AZ +Message$/);
    expect(machines[1]).toMatch(
      /^0 +running +(\d+\.\d+\.\d+\.\d+ +)?i-[0-9a-f]+ +[a-z0-9]+\.[a-z0-9]+ +ubuntu@22\.04 +us-east-1[a-f]/,
    );
    expect(machines[2]).toMatch(/^0\/lxd\/0 +running +ubuntu@22\.04 +us-east-1[a-f] *$/);
    expect(machines[3]).toMatch(/^1 +running +(\d+\.\d+\.\d+\.\d+ +)?i-[0-9a-f]+ /);
  });

  it('status filters, --format yaml and json, and colour only when forced', async () => {
    const filtered = await cli(['status', 'mysql']);
    expect(filtered.stdout).toContain('mysql/0');
    expect(filtered.stdout).not.toContain('wordpress/');
    expect(filtered.stdout).toMatch(/^0\/lxd\/0 +running/m);
    const yaml = parse((await cli(['status', '--format', 'yaml', '1'])).stdout);
    expect(Object.keys(yaml.machines)).toEqual(['1']);
    expect(Object.keys(yaml.applications.wordpress.units)).toEqual(['wordpress/1']);
    const json = JSON.parse((await cli(['status', '--format', 'json'])).stdout);
    expect(json.machines['0'].status).toBe('running');
    const forced = await cli(['status'], { env: { ...baseEnv(), FORCE_COLOR: '1' } });
    expect(forced.stdout).toContain('\x1b[32mrunning\x1b[39m');
    const noColor = await cli(['status'], {
      env: { ...baseEnv(), FORCE_COLOR: '1', NO_COLOR: '1' },
    });
    expect(noColor.stdout).not.toContain('\x1b');
    // Juju's flags: --color forces it when piped, --no-color wins over FORCE_COLOR
    expect((await cli(['status', '--color'])).stdout).toContain('\x1b[32mrunning\x1b[39m');
    const flagOff = await cli(['status', '--no-color'], {
      env: { ...baseEnv(), FORCE_COLOR: '1' },
    });
    expect(flagOff.stdout).not.toContain('\x1b');
  });

  it('status --watch redraws until interrupted', async () => {
    const child = spawn(process.execPath, [BIN, 'status', '--watch', '1s'], {
      cwd: workdir,
      env: baseEnv(),
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const deadline = Date.now() + 60_000;
    while ((out.match(/^Model /gm) ?? []).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGINT');
    await new Promise((r) => child.on('close', r));
    expect((out.match(/^Model /gm) ?? []).length).toBeGreaterThanOrEqual(2);
    // off a terminal, frames are separated by a blank line, never by escape codes
    expect(out).not.toContain('\x1b');
  });

  it('show-machine: YAML by default, JSON and tabular; a missing machine is the API message', async () => {
    const yaml = parse((await cli(['show-machine', '0'])).stdout);
    expect(yaml.model).toBe(model);
    expect(yaml.machines['0']).toMatchObject({
      id: '0',
      status: 'running',
      units: ['wordpress/0'],
    });
    expect(yaml.machines['0'].instanceId).toMatch(/^i-/);
    const json = JSON.parse((await cli(['show-machine', '0/lxd/0', '--format', 'json'])).stdout);
    expect(json.machines['0/lxd/0'].status).toBe('running');
    const table = await cli(['show-machine', '1', '--format', 'tabular']);
    expect(table.stdout).toMatch(/^Machine +State +Address +Inst id/);
    // the stack prices instance types: a running machine shows what it was chosen at
    const priced = await cli(['show-machine', '0', '--format', 'tabular']);
    expect(priced.stdout).toMatch(
      /^Machine +State +Address +Inst id +Inst type +Base +AZ +Cost\/h +Message\n0 +running .* \$\d+\.\d{4}/,
    );
    expect(await cli(['show-machine', '99'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR machine 99 not found\n',
    });
  });

  it('application constraints: set-constraints, constraints, and a subordinate refused', async () => {
    expect(await cli(['set-constraints', 'wordpress', 'cores=2'])).toEqual({
      code: 0,
      stdout: '',
      stderr: '',
    });
    expect(await cli(['constraints', 'wordpress'])).toEqual({
      code: 0,
      stdout: 'cores=2\n',
      stderr: '',
    });
    const sub = await cli(['set-constraints', 'telegraf', 'mem=1G']);
    expect(sub.code).toBe(1);
    expect(sub.stderr).toMatch(/^ERROR .*subordinate.*\n$/);
    expect(await cli(['constraints', 'nosuch'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR application "nosuch" not found\n',
    });
  });

  it('add-unit --wait, then remove-unit; a missing unit is the API message', async () => {
    const add = await cli(['add-unit', 'wordpress', '--wait']);
    expect(add.code).toBe(0);
    expect(add.stderr.split('\n')[0]).toBe('added unit wordpress/2 to machine 2');
    expect(add.stderr).toContain('1 machine running (2)');
    // machine 2 was made for the unit: it goes with it, and Juju says so
    expect(await cli(['remove-unit', 'wordpress/2'])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'will remove unit wordpress/2\n- will remove machine 2\n',
    });
    expect(await cli(['remove-unit', 'wordpress/9'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR unit "wordpress/9" not found\n',
    });
  });

  it('a machine that cannot start: --wait lists the error and exits 1; retry-provisioning --constraints --wait fixes it', async () => {
    const add = await cli([
      'add-machine',
      '--constraints',
      'cores=4096',
      '--wait',
      '--timeout',
      '3m',
    ]);
    expect(add.code).toBe(1);
    const id = /^created machine (\d+)$/m.exec(add.stderr)?.[1];
    expect(id).toBeDefined();
    expect(add.stderr).toContain(`ERROR 1 of 1 machines failed to start:\n  machine ${id} error: `);
    expect(add.stderr).toMatch(/matching constraints "cores=4096 mem=2048M"/);

    const status = await cli(['status', id!]);
    expect(status.stdout).toMatch(new RegExp(`^${id} +error +ubuntu@24\\.04 +.*cores=4096`, 'm'));

    // retried as it is, it fails again with the very same message: told at once (issue 23, item 5),
    // where the CLI used to wait out its timeout and name no machine
    const message = /machine \d+ error: (.*)$/m.exec(add.stderr)?.[1];
    expect(message).toMatch(/matching constraints "cores=4096 mem=2048M"/);
    const errorCount = async () =>
      (
        JSON.parse((await cli(['show-machine', id!, '--format', 'json'])).stdout) as {
          machines: Record<string, { errorCount?: number }>;
        }
      ).machines[id!]?.errorCount;
    expect(await errorCount()).toBe(1);
    const started = Date.now();
    const same = await cli(['retry-provisioning', id!, '--wait', '--timeout', '3m']);
    const seconds = (Date.now() - started) / 1000;
    expect(same.code).toBe(1);
    expect(same.stderr).toContain(`retrying provisioning of machine ${id}\n`);
    expect(same.stderr).not.toContain('timed out');
    expect(same.stderr.trimEnd().split('\n').slice(-2)).toEqual([
      'ERROR 1 of 1 machines failed to start:',
      `  machine ${id} error: ${message}`,
    ]);
    expect(seconds).toBeLessThan(170);
    expect(await errorCount()).toBe(2);
    expectClean(same);

    const running = await cli(['retry-provisioning', '0']);
    expect(running).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR machine 0 is not in an error state (running)\n',
    });

    const retry = await cli([
      'retry-provisioning',
      '--all',
      '--constraints',
      'cores=2',
      '--wait',
      '--timeout',
      '3m',
    ]);
    expect(retry.code).toBe(0);
    expect(retry.stderr).toContain(`retrying provisioning of machine ${id}\n`);
    expect(retry.stderr.trimEnd().split('\n').at(-1)).toBe(`1 machine running (${id})`);
    expect(await cli(['retry-provisioning', '--all'])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'no machines in an error state\n',
    });
  });

  it('reprovision-machine: refused while the instance lives (or, before the route exists, not found)', async () => {
    const run = await cli(['reprovision-machine', '0']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `^ERROR (machine 0 has a live instance "i-[0-9a-f]+" \\(running\\)|no route for POST /v1/models/${model}/machines/0/reprovision)\\n$`,
      ),
    );
  });

  it('add-machine with a placement; remove-machine needs --force for a machine with units', async () => {
    const add = await cli(['add-machine', 'lxd:1']);
    expect(add).toEqual({ code: 0, stdout: '', stderr: 'created container 1/lxd/0\n' });
    const refused = await cli(['remove-machine', '1']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^ERROR machine 1 .*\n$/);
    expect(await cli(['remove-machine', '1/lxd/0'])).toMatchObject({
      code: 0,
      stderr: 'will remove machine 1/lxd/0\n',
    });
    expect(await cli(['remove-machine', '1', '--force'])).toMatchObject({
      code: 0,
      stderr: 'will remove machine 1\n',
    });
  });

  it('remove-application lists what goes; a missing one is the API message', async () => {
    const run = await cli(['remove-application', 'mysql']);
    expect(run).toEqual({
      code: 0,
      stdout: '',
      stderr: 'will remove application mysql\n- will remove unit mysql/0\n',
    });
    expect(await cli(['remove-application', 'mysql'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR application "mysql" not found\n',
    });
  });

  it('usage errors exit 2 with ERROR and no request made', async () => {
    expect(await cli(['add-unit', 'wordpress', '-n', 'two'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'ERROR invalid value "two" for option -n: must be a number 1 or more\n',
    });
    const unknown = await cli(['deploy', 'x', '--bse', 'ubuntu@22.04']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("ERROR unknown option '--bse'");
  });

  it('a wrong token: the API message, exit 1, the token never shown', async () => {
    const run = await cli(['models'], {
      env: { ...baseEnv(), PROVISIONER_API_TOKEN: 'wrong-token-value' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^ERROR .+\n$/);
    expect(run.stdout + run.stderr).not.toContain('wrong-token-value');
    expectClean(run);
  });

  it('a stack that is not running: one line with the npm start hint', async () => {
    const port = await freePort();
    const run = await cli(['status'], {
      env: {
        ...baseEnv(),
        PROVISIONER_API_URL: `http://127.0.0.1:${port}`,
        PROVISIONER_MODEL: model,
      },
    });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR cannot connect to the provisioner API at http://127.0.0.1:${port}: connection refused (is the local stack up? start it with "npm start")\n`,
    });
  });

  it('finds .provisioner/stack.json walking up from the working directory', async () => {
    const checkout = mkdtempSync(join(tmpdir(), 'cli-checkout-'));
    mkdirSync(join(checkout, '.provisioner'));
    mkdirSync(join(checkout, 'a', 'b'), { recursive: true });
    writeFileSync(join(checkout, '.provisioner', 'stack.json'), JSON.stringify(stack));
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      PROVISIONER_CONFIG_DIR: join(home, 'config'),
    };
    const run = await cli(['status', '--format', 'json', '-m', model], {
      env,
      cwd: join(checkout, 'a', 'b'),
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).model.name).toBe(model);
  });

  it('login stores the token 0600 from stdin and later commands use it; a bad token is refused', async () => {
    const config = join(home, 'login-config');
    const env = { PATH: process.env.PATH, HOME: home, PROVISIONER_CONFIG_DIR: config };
    const bad = await cli(['login', stack.apiUrl], { env, input: 'not-the-token\n' });
    expect(bad).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR cannot log in to ${stack.apiUrl}: the token was not accepted\n`,
    });
    const ok = await cli(['login', stack.apiUrl], { env, input: `${stack.token}\n` });
    expect(ok.code).toBe(0);
    expect(ok.stderr).toBe(
      `Logged in to ${stack.apiUrl} (token stored in ${join(config, 'credentials.json')}).\n`,
    );
    expectClean(ok);
    const file = join(config, 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      apiUrl: stack.apiUrl,
      token: stack.token,
    });
    const models = await cli(['models', '--format', 'json'], { env });
    expect(models.code).toBe(0);
    expect(JSON.parse(models.stdout).models.map((x: { name: string }) => x.name)).toContain(model);
    expect(await cli(['logout'], { env })).toEqual({
      code: 0,
      stdout: '',
      stderr: 'Logged out.\n',
    });
    const after = await cli(['models'], { env });
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/^ERROR no provisioner API to talk to/);
  });

  it('destroy-model refuses without a terminal, then with -y waits until the model is gone', async () => {
    const refused = await cli(['destroy-model', model]);
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'ERROR cannot ask for confirmation without a terminal: use --no-prompt (or -y) to destroy the model\n',
    });
    const run = await cli(['destroy-model', model, '-y', '--timeout', '3m']);
    expect(run.code).toBe(0);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe('Destroying model');
    expect(lines.at(-1)).toBe('Model destroyed.');
    // the current model was this one: it is forgotten, as Juju does
    expect(await cli(['switch'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ERROR no current model: use "provisioner switch <model>" to select one\n',
    });
    expect(await cli(['destroy-model', model, '--no-prompt'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `ERROR model "${model}" not found\n`,
    });
  });
});
