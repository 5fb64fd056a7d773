import { parse } from 'yaml';
import { uniqueName } from './api-client';
import { cliHome, CliTerminals } from './cli-terminal';
import { loadTestStack } from './stack';

/**
 * The verbs a Juju user types (issue 29), at a terminal as a person meets
 * them: each command runs in a private tmux server, and what is checked is
 * the screen and the exit code.
 */
const stack = loadTestStack();
const model = uniqueName('verbs');
const { home, workdir, env } = cliHome('cli-verbs-', stack, model);
const terminals = new CliTerminals(home, 'v');

/** Runs one command at a terminal of its own and waits for it to end. */
async function typed(
  args: string[],
  opts: { columns?: number; timeoutMs?: number } = {},
): Promise<{ code: number; screen: string }> {
  const t = await terminals.open(args, env(), workdir, opts.columns);
  return t.finished(opts.timeoutMs ?? 120_000);
}

/** Set once destroy-model has ended well; until then afterAll destroys the model. */
let destroyed = false;

afterAll(async () => {
  try {
    // a step that failed earlier must not leave the model's machines in the shared stack
    if (!destroyed) {
      await typed(['destroy-model', model, '-y', '--timeout', '3m'], { timeoutMs: 240_000 }).catch(
        () => undefined,
      );
    }
  } finally {
    await terminals.closeAll();
  }
}, 300_000);

describe('the verbs a Juju user types, at a terminal', () => {
  it('version and --version print the same version line', async () => {
    const version = await typed(['version']);
    expect(version.code).toBe(0);
    expect(version.screen).toMatch(/^\d+\.\d+\.\d+-[a-z0-9]+-(amd64|arm64|[a-z0-9]+)$/);
    const flag = await typed(['--version']);
    expect(flag).toEqual(version);
  });

  it('add-model, then list-models shows machines, units, access and humanised times', async () => {
    expect((await typed(['add-model', model, '--no-switch'])).code).toBe(0);
    const { code, screen } = await typed(['list-models']);
    expect(code).toBe(0);
    expect(screen).toMatch(
      /^Model +Cloud\/Region +Constraints +Machines +Units +Access +Created +Last change$/m,
    );
    expect(screen).toMatch(
      new RegExp(`^${model} +aws/us-east-1 +0 +0 +admin +just now +just now$`, 'm'),
    );
  });

  it('deploy --wait in a narrow terminal: the progress line is never cut inside a word', async () => {
    const { code, screen } = await typed(
      ['deploy', 'wordpress', '--base', 'ubuntu@22.04', '-n', '2', '--wait', '--timeout', '3m'],
      { columns: 60, timeoutMs: 240_000 },
    );
    expect(code).toBe(0);
    expect(screen).toContain('2 machines running (0, 1)');
    // the last redraw of the live line: bar, then whole words, cut with … where the width ends
    const bar = screen.split('\n').find((l) => /^ [=-]{20} machines/.test(l));
    expect(bar).toBeDefined();
    expect(bar!.length).toBeLessThan(60);
    const words = bar!.slice(22);
    const full = 'machines 2/2 settled: 0 pending, 0 allocating, 2 running, 0 error';
    expect(words.endsWith('…')).toBe(true);
    const kept = words.slice(0, -1);
    expect(full.startsWith(kept)).toBe(true);
    expect(full[kept.length]).toMatch(/[\s,]/);
  });

  it('machines and list-machines: Juju\u2019s machine table with addresses once the sweep lists them', async () => {
    // the sweep (every 5 s here) records the addresses EC2 lists for each instance
    const deadline = Date.now() + 120_000;
    let screen = '';
    for (;;) {
      ({ screen } = await typed(['machines']));
      if ((screen.match(/^\d+ +running +\d+\.\d+\.\d+\.\d+ +i-/gm) ?? []).length === 2) break;
      if (Date.now() > deadline) throw new Error(`no addresses after 120 s:\n${screen}`);
      await new Promise((r) => setTimeout(r, 2000));
    }
    expect(screen.split('\n')[0]).toMatch(
      /^Machine +State +Address +Inst id +Inst type +Base +AZ +Message$/,
    );
    const alias = await typed(['list-machines', '--format', 'yaml']);
    expect(alias.code).toBe(0);
    const yaml = parse(alias.screen) as {
      model: string;
      machines: Record<string, { privateAddress?: string; instanceStatusAt?: string }>;
    };
    expect(yaml.model).toBe(model);
    expect(Object.keys(yaml.machines)).toEqual(['0', '1']);
    expect(yaml.machines['0']!.privateAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(Date.parse(yaml.machines['0']!.instanceStatusAt!)).not.toBeNaN();

    // status: the unit's public address, and a Message that is true now or says how old it is
    const status = await typed(['status']);
    expect(status.screen).toMatch(/^Unit +Workload +Agent +Machine +Public address +Message$/m);
    expect(status.screen).toMatch(/^wordpress\/0 +active +idle +0 +\d+\.\d+\.\d+\.\d+$/m);
    const rows = status.screen.split('\n').filter((l) => /^[01] +running /.test(l));
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatch(/ (running|pending \(\d+[smhd] ago\))$/);
  });

  it('show-unit and show-application in YAML (show-model as before)', async () => {
    const unit = await typed(['show-unit', 'wordpress/0']);
    expect(unit.code).toBe(0);
    expect(parse(unit.screen)).toMatchObject({
      'wordpress/0': {
        application: 'wordpress',
        machine: '0',
        life: 'alive',
        'workload-status': { current: 'active' },
        'public-address': expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/),
      },
    });
    const app = await typed(['show-application', 'wordpress']);
    expect(parse(app.screen)).toMatchObject({
      wordpress: {
        charm: 'wordpress',
        base: 'ubuntu@22.04',
        principal: true,
        units: ['wordpress/0', 'wordpress/1'],
      },
    });
    // show-model was there before (identity): it still answers with the model and its users
    const shown = await typed(['show-model', model]);
    expect(parse(shown.screen)).toMatchObject({
      [model]: {
        name: model,
        cloud: 'aws',
        region: 'us-east-1',
        users: { admin: { access: 'admin' } },
      },
    });
  });

  it('model-config shows, sets and resets; an unknown key is refused with the known ones', async () => {
    const table = await typed(['model-config']);
    expect(table.screen.split('\n')).toEqual([
      'Attribute                  From     Value',
      'availability-sets-enabled  default  false',
      'provisioner-harvest-mode   default  destroyed',
      'reprovision-lost           default  false',
    ]);
    expect((await typed(['model-config', 'reprovision-lost=true'])).code).toBe(0);
    expect(await typed(['model-config', 'reprovision-lost'])).toEqual({ code: 0, screen: 'true' });
    expect((await typed(['model-config', '--reset', 'reprovision-lost'])).code).toBe(0);
    expect((await typed(['model-config'])).screen).toMatch(/^reprovision-lost +default +false$/m);
    const refused = await typed(['model-config', 'availability-sets-enabled=true']);
    expect(refused).toEqual({
      code: 1,
      screen: 'ERROR availability-sets-enabled cannot be changed after the model is created',
    });
    const unknown = await typed(['model-config', 'nope=1']);
    expect(unknown.code).toBe(2);
    expect(unknown.screen).toBe(
      'ERROR unknown model config key "nope" (known: availability-sets-enabled, provisioner-harvest-mode, reprovision-lost)',
    );
  });

  it('show-status-log: what is stored about the machine, oldest first, and where the rest is', async () => {
    const { code, screen } = await typed(['show-status-log', '0']);
    expect(code).toBe(0);
    const lines = screen.split('\n');
    expect(lines[0]).toMatch(/^Time +Type +Status +Message$/);
    expect(lines[1]).toMatch(
      /^\d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\dZ +juju-machine +pending +added$/,
    );
    expect(screen).toMatch(/ machine +(pending|running) +instance i-[0-9a-f]+$/m);
    expect(screen).toContain(
      "NOTE every step in between is in the machine's workflow history (Temporal UI)",
    );
  });

  it('remove-unit says the unit\u2019s machine goes too', async () => {
    expect(await typed(['remove-unit', 'wordpress/1'])).toEqual({
      code: 0,
      screen: 'will remove unit wordpress/1\n- will remove machine 1',
    });
  });

  it('a manual machine says what it is', async () => {
    expect((await typed(['add-machine', 'ssh:ubuntu@10.1.2.3'])).code).toBe(0);
    const { screen } = await typed(['machines']);
    expect(screen).toMatch(
      /^2 +running +10\.1\.2\.3 +manual:10\.1\.2\.3 +ubuntu@\d\d\.\d\d +manually provisioned$/m,
    );
  });

  it('destroy-model cleans up', async () => {
    expect(
      (await typed(['destroy-model', model, '-y', '--timeout', '3m'], { timeoutMs: 240_000 })).code,
    ).toBe(0);
    destroyed = true;
  });
});
