import { ApiError } from '../../../cli/errors';
import { sampleStatus } from './fixtures';
import { runCli } from './harness';

describe('verbs map to API requests', () => {
  it('deploy: charm, application name, base, constraints, -n, --to', async () => {
    const h = await runCli(
      [
        'deploy',
        'ch:wordpress',
        'blog',
        '--base',
        'ubuntu@22.04',
        '--constraints',
        'mem=4G',
        '-n',
        '2',
        '--to',
        '0,zone=us-east-1b',
      ],
      () => ({
        units: [
          { name: 'blog/0', machine: '0' },
          { name: 'blog/1', machine: '1' },
        ],
      }),
    );
    expect(h.code).toBe(0);
    expect(h.requests).toEqual([
      {
        method: 'POST',
        path: '/v1/models/demo/applications',
        body: {
          name: 'blog',
          charm: 'wordpress',
          base: 'ubuntu@22.04',
          constraints: 'mem=4G',
          numUnits: 2,
          to: ['0', 'zone=us-east-1b'],
        },
      },
    ]);
    expect(h.stderr).toBe('Deployed "blog" from charm "wordpress" on ubuntu@22.04\n');
  });

  it('deploy defaults: one unit on ubuntu@24.04, named after the charm', async () => {
    const h = await runCli(['deploy', 'mysql', '-m', 'other'], () => ({ units: [] }));
    expect(h.requests[0]).toEqual({
      method: 'POST',
      path: '/v1/models/other/applications',
      body: { name: 'mysql', charm: 'mysql', base: 'ubuntu@24.04', numUnits: 1 },
    });
  });

  it('deploy --subordinate sends no units, and refuses -n', async () => {
    const ok = await runCli(['deploy', 'telegraf', '--subordinate'], () => ({ units: [] }));
    expect(ok.requests[0]!.body).toEqual({
      name: 'telegraf',
      charm: 'telegraf',
      base: 'ubuntu@24.04',
      subordinate: true,
      numUnits: 0,
    });
    const bad = await runCli(['deploy', 'telegraf', '--subordinate', '-n', '2']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('ERROR a subordinate application has no units of its own: drop -n\n');
    expect(bad.requests).toEqual([]);
  });

  it('add-unit -n and --to; add-machine with placement, base and constraints', async () => {
    const u = await runCli(['add-unit', 'wordpress', '-n', '3', '--to', 'lxd:0'], () => ({
      units: [{ name: 'wordpress/3', machine: '0/lxd/1' }],
    }));
    expect(u.requests[0]).toEqual({
      method: 'POST',
      path: '/v1/models/demo/applications/wordpress/units',
      body: { count: 3, to: ['lxd:0'] },
    });
    expect(u.stderr).toBe('added unit wordpress/3 to machine 0/lxd/1\n');
    const m = await runCli(
      [
        'add-machine',
        'zone=us-east-1c',
        '-n',
        '2',
        '--base',
        'ubuntu@22.04',
        '--constraints',
        'cores=4',
      ],
      () => ({ machines: [{ id: '4' }, { id: '5' }] }),
    );
    expect(m.requests[0]).toEqual({
      method: 'POST',
      path: '/v1/models/demo/machines',
      body: {
        count: 2,
        base: 'ubuntu@22.04',
        constraints: 'cores=4',
        placement: 'zone=us-east-1c',
      },
    });
    expect(m.stderr).toBe('created machine 4\ncreated machine 5\n');
  });

  it('remove-machine --force, containers URL-encoded', async () => {
    const h = await runCli(['remove-machine', '3', '0/lxd/1', '--force']);
    expect(h.requests).toEqual([
      { method: 'DELETE', path: '/v1/models/demo/machines/3?force=true' },
      { method: 'DELETE', path: '/v1/models/demo/machines/0%2Flxd%2F1?force=true' },
    ]);
    expect(h.stderr).toBe('will remove machine 3\nwill remove machine 0/lxd/1\n');
  });

  it('retry-provisioning --all retries only machines in error, with --constraints', async () => {
    const h = await runCli(
      ['retry-provisioning', '--all', '--constraints', 'instance-type=t3.large'],
      (req) => (req.method === 'GET' ? sampleStatus() : {}),
    );
    expect(h.code).toBe(0);
    expect(h.requests.slice(1)).toEqual([
      {
        method: 'POST',
        path: '/v1/models/demo/machines/1/retry',
        body: { constraints: 'instance-type=t3.large' },
      },
    ]);
  });

  it('retry-provisioning: several machines, one refused, the rest still retried, exit 1', async () => {
    const h = await runCli(['retry-provisioning', '1', '2', '3'], (req) => {
      if (req.path.includes('/2/'))
        throw new ApiError(409, 'conflict', 'machine 2 is not in an error state (running)');
      return {};
    });
    expect(h.requests.map((r) => r.path)).toEqual([
      '/v1/models/demo/machines/1/retry',
      '/v1/models/demo/machines/2/retry',
      '/v1/models/demo/machines/3/retry',
    ]);
    expect(h.stderr).toBe(
      [
        'retrying provisioning of machine 1',
        'ERROR machine 2 is not in an error state (running)',
        'retrying provisioning of machine 3',
        'ERROR could not retry machine 2',
        '',
      ].join('\n'),
    );
    expect(h.code).toBe(1);
  });

  it('set-constraints and set-model-constraints join key=value words', async () => {
    const a = await runCli(['set-constraints', 'wordpress', 'mem=4G', 'cores=2'], () => ({
      constraints: 'cores=2 mem=4096M',
    }));
    expect(a.requests[0]).toEqual({
      method: 'PUT',
      path: '/v1/models/demo/applications/wordpress/constraints',
      body: { constraints: 'mem=4G cores=2' },
    });
    const m = await runCli(['set-model-constraints', 'arch=arm64'], () => ({
      constraints: 'arch=arm64',
    }));
    expect(m.requests[0]).toEqual({
      method: 'PUT',
      path: '/v1/models/demo/constraints',
      body: { constraints: 'arch=arm64' },
    });
  });

  it('constraints prints the string; unsupported keys are warned about', async () => {
    const h = await runCli(['constraints', 'wordpress'], () => ({
      constraints: 'mem=4096M tags=a',
      unsupported: ['tags'],
    }));
    expect(h.stdout).toBe('mem=4096M tags=a\n');
    expect(h.stderr).toBe('WARNING unsupported constraints: tags\n');
    const y = await runCli(['model-constraints', '--format', 'yaml'], () => ({
      constraints: 'mem=2048M',
    }));
    expect(y.stdout).toBe('constraints: mem=2048M\n');
  });

  it('relate is integrate', async () => {
    const h = await runCli(['relate', 'wordpress', 'telegraf:juju-info']);
    expect(h.requests[0]).toEqual({
      method: 'POST',
      path: '/v1/models/demo/relations',
      body: { endpoints: ['wordpress', 'telegraf:juju-info'] },
    });
  });

  it('add-model takes [cloud/]region, constraints and known config keys', async () => {
    const h = await runCli(
      [
        'add-model',
        'prod',
        'aws/eu-west-1',
        '--constraints',
        'mem=8G',
        '--config',
        'provisioner-harvest-mode=none',
        '--config',
        'availability-sets-enabled=true',
      ],
      () => ({ name: 'prod', region: 'eu-west-1', constraints: 'mem=8192M' }),
    );
    expect(h.requests[0]).toEqual({
      method: 'POST',
      path: '/v1/models',
      body: {
        name: 'prod',
        region: 'eu-west-1',
        constraints: 'mem=8G',
        harvestMode: 'none',
        availabilitySets: true,
      },
    });
    expect(h.stderr).toBe("Added 'prod' model on aws/eu-west-1\n");
    const bad = await runCli(['add-model', 'prod', '--config', 'colour=blue']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^ERROR unknown model config key "colour"/);
    expect(bad.requests).toEqual([]);
  });

  it('show-machine prints YAML by default, keyed by id', async () => {
    const machine = sampleStatus().machines['0/lxd/0']!;
    const h = await runCli(['show-machine', '0/lxd/0'], () => machine);
    expect(h.requests[0]!.path).toBe('/v1/models/demo/machines/0%2Flxd%2F0');
    expect(h.stdout).toMatch(/^model: demo\nmachines:\n {2}0\/lxd\/0:\n {4}id: 0\/lxd\/0\n/);
  });

  it('status --color forces colour off a terminal; --no-color turns it off even when forced', async () => {
    const forced = await runCli(['status', '--color'], () => sampleStatus());
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('\x1b[32mrunning\x1b[39m');
    const off = await runCli(['status', '--no-color'], () => sampleStatus(), {
      env: { FORCE_COLOR: '1' },
    });
    expect(off.code).toBe(0);
    expect(off.stdout).not.toContain('\x1b');
    const piped = await runCli(['status'], () => sampleStatus());
    expect(piped.stdout).not.toContain('\x1b');
  });

  it('show-machine --format tabular shows the price a machine was chosen at', async () => {
    const machine = { ...sampleStatus().machines['0']!, pricePerHour: 0.0208 };
    const h = await runCli(['show-machine', '0', '--format', 'tabular'], () => machine);
    expect(h.stdout).toMatch(
      /^Machine +State .* AZ +Cost\/h +Message\n0 +running .* \$0\.0208 +running\n$/,
    );
  });

  it('show-machine --format tabular shows how long a moving instance state has lasted, as status does', async () => {
    const machine = {
      ...sampleStatus().machines['0']!,
      status: 'pending',
      message: '',
      instanceStatus: 'pending',
      // the harness's clock is 2026-11-22T10:20:30Z
      instanceStatusAt: '2026-11-22T10:18:30Z',
    };
    const h = await runCli(['show-machine', '0', '--format', 'tabular'], () => machine);
    expect(h.stdout).toMatch(/\n0 +pending .* pending \(2m ago\)\n$/);
  });

  it('status --format json is the (filtered) API status', async () => {
    const h = await runCli(['status', '--format', 'json', 'wordpress/1'], () => sampleStatus());
    const parsed = JSON.parse(h.stdout);
    expect(Object.keys(parsed.machines)).toEqual(['1']);
    expect(Object.keys(parsed.applications)).toEqual(['wordpress']);
  });
});

describe('usage errors and API errors', () => {
  it('an API error is printed as ERROR <message>, exit 1, no stack', async () => {
    const h = await runCli(['set-constraints', 'wordpress', 'mem=2G', 'mem=4G'], () => {
      throw new ApiError(400, 'invalid-constraints', 'bad "mem" constraint: already set');
    });
    expect(h.code).toBe(1);
    expect(h.stderr).toBe('ERROR bad "mem" constraint: already set\n');
    expect(h.stdout).toBe('');
  });

  it.each([
    [['deploy'], "ERROR missing required argument 'charm'\n"],
    [
      ['add-unit', 'wordpress', '-n', '0'],
      'ERROR invalid value "0" for option -n: must be a number 1 or more\n',
    ],
    [['add-unit', 'wordpress', '--to', ','], 'ERROR --to needs at least one placement directive\n'],
    [
      ['status', '--format', 'xml'],
      "ERROR option '--format <format>' argument 'xml' is invalid. Allowed choices are tabular, json, yaml.\n",
    ],
    [['retry-provisioning'], 'ERROR no machine specified: give machine ids or --all\n'],
    [['retry-provisioning', '1', '--all'], 'ERROR specify machines or --all, not both\n'],
    [
      ['deploy', 'x', '--wait', '--timeout', 'soon'],
      'ERROR invalid value "soon" for option --timeout: expected a duration like 90s or 5m\n',
    ],
    [['remove-machine', 'web'], 'ERROR invalid machine id "web"\n'],
  ])('%j → exit 2 and %j, no request', async (argv, message) => {
    const h = await runCli(argv);
    expect(h.stderr).toBe(message);
    expect(h.code).toBe(2);
    expect(h.requests).toEqual([]);
  });

  it('an unknown command suggests the right one', async () => {
    const h = await runCli(['add-machines']);
    expect(h.code).toBe(2);
    expect(h.stderr).toContain("ERROR unknown command 'add-machines'");
    expect(h.stderr).toContain('(Did you mean add-machine?)');
  });

  it('no model selected: says how to select one', async () => {
    const h = await runCli(['status'], () => sampleStatus(), { env: { PROVISIONER_MODEL: '' } });
    expect(h.code).toBe(1);
    expect(h.stderr).toBe(
      'ERROR no model selected: use "provisioner switch <model>" or -m <model> (see "provisioner models")\n',
    );
  });

  it('destroy-model without a terminal refuses unless --no-prompt or -y, and deletes nothing', async () => {
    const h = await runCli(['destroy-model', 'demo']);
    expect(h.code).toBe(2);
    expect(h.stderr).toBe(
      'ERROR cannot ask for confirmation without a terminal: use --no-prompt (or -y) to destroy the model\n',
    );
    expect(h.requests).toEqual([]);
    for (const flag of ['--no-prompt', '-y']) {
      const ok = await runCli(['destroy-model', 'demo', flag, '--no-wait']);
      expect(ok.code).toBe(0);
      expect(ok.requests).toEqual([{ method: 'DELETE', path: '/v1/models/demo' }]);
      expect(ok.stderr).toBe('Destroying model\n');
    }
  });

  it('--help exits 0 and prints the verb list on stdout', async () => {
    const h = await runCli(['--help']);
    expect(h.code).toBe(0);
    for (const verb of [
      'add-model',
      'deploy',
      'retry-provisioning',
      'reprovision-machine',
      'integrate|relate',
      'status',
    ])
      expect(h.stdout).toContain(verb);
  });
});
