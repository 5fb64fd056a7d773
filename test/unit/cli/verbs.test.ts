import { parse } from 'yaml';
import { friendlyAgo, shortAgo } from '../../../cli/ago';
import { configChanges } from '../../../cli/commands/model-config';
import { versionLine } from '../../../cli/commands/show';
import { machineStatusLog, namesEntity, statusLogTime } from '../../../cli/commands/status-log';
import { colours } from '../../../cli/colour';
import { ApiError } from '../../../cli/errors';
import { instanceIdCell, machineAddress, machineMessage } from '../../../cli/machine-columns';
import { lastChange, modelsTable } from '../../../cli/model-summary';
import { formatMachineTable, formatStatusTabular } from '../../../cli/status';
import type { Machine, Model, Status } from '../../../cli/types';
import { failureLine, fitWords } from '../../../cli/wait';
import { sampleStatus } from './fixtures';
import { runCli } from './harness';

const NOW = new Date('2026-11-22T10:20:30Z');

function machine(over: Partial<Machine> = {}): Machine {
  return {
    id: '3',
    base: 'ubuntu@22.04',
    life: 'alive',
    status: 'running',
    message: '',
    constraints: '',
    units: [],
    containers: [],
    ...over,
  };
}

describe('times, humanised', () => {
  it.each([
    ['2026-11-22T10:20:30Z', '0s ago'],
    ['2026-11-22T10:19:48Z', '42s ago'],
    ['2026-11-22T10:15:30Z', '5m ago'],
    ['2026-11-22T07:20:30Z', '3h ago'],
    ['2026-11-20T10:20:30Z', '2d ago'],
    // a clock a little ahead of ours is "now", never negative
    ['2026-11-22T10:20:35Z', '0s ago'],
  ])('shortAgo(%s) is %s', (iso, want) => {
    expect(shortAgo(iso, NOW)).toBe(want);
  });

  it('shortAgo of a malformed time is undefined', () => {
    expect(shortAgo('yesterday', NOW)).toBeUndefined();
  });

  it.each([
    ['2026-11-22T10:20:00Z', 'just now'],
    ['2026-11-22T10:19:30Z', '1 minute ago'],
    ['2026-11-22T09:50:30Z', '30 minutes ago'],
    ['2026-11-22T09:20:30Z', '1 hour ago'],
    ['2026-11-19T10:20:30Z', '3 days ago'],
    ['2026-10-01T08:00:00Z', '2026-10-01'],
    ['not a time', ''],
  ])('friendlyAgo(%s) is %s', (iso, want) => {
    expect(friendlyAgo(iso, NOW)).toBe(want);
  });
});

describe('machine columns', () => {
  it('a pending instance state says how old it is; running is what the last sweep saw', () => {
    const pending = machine({
      instanceId: 'i-1',
      instanceStatus: 'pending',
      instanceStatusAt: '2026-11-22T10:19:48Z',
    });
    expect(machineMessage(pending, NOW)).toBe('pending (42s ago)');
    expect(machineMessage({ ...pending, instanceStatus: 'shutting-down' }, NOW)).toBe(
      'shutting-down (42s ago)',
    );
    expect(machineMessage({ ...pending, instanceStatus: 'running' }, NOW)).toBe('running');
    // an API without instanceStatusAt: the state alone, as before
    expect(machineMessage(machine({ instanceStatus: 'pending' }), NOW)).toBe('pending');
    // the machine's own message wins
    expect(machineMessage({ ...pending, message: 'instance "i-1" is terminated' }, NOW)).toBe(
      'instance "i-1" is terminated',
    );
  });

  it('a manual machine shows what it is: manual:<host> for its instance, its host as address', () => {
    const manual = machine({ placement: 'ssh:ubuntu@10.0.0.5' });
    expect(instanceIdCell(manual)).toBe('manual:10.0.0.5');
    expect(machineAddress(manual)).toBe('10.0.0.5');
    expect(machineMessage(manual, NOW)).toBe('manually provisioned');
    expect(instanceIdCell(machine({ placement: 'ssh:host.example' }))).toBe('manual:host.example');
    // a zone placement is not manual
    expect(instanceIdCell(machine({ placement: 'zone=us-east-1a', instanceId: 'i-2' }))).toBe(
      'i-2',
    );
  });

  it('Address is the public address when there is one, else the private one', () => {
    expect(machineAddress(machine({ privateAddress: '10.0.0.7', publicAddress: '3.3.3.3' }))).toBe(
      '3.3.3.3',
    );
    expect(machineAddress(machine({ privateAddress: '10.0.0.7' }))).toBe('10.0.0.7');
    expect(machineAddress(machine())).toBe('');
  });

  it('the machine table has Juju\u2019s Address column', () => {
    const table = formatMachineTable(
      [
        machine({
          instanceId: 'i-0abc',
          instanceType: 't3.small',
          zone: 'us-east-1a',
          instanceStatus: 'pending',
          instanceStatusAt: '2026-11-22T10:19:48Z',
          privateAddress: '10.0.0.7',
          publicAddress: '54.1.2.3',
        }),
        machine({ id: '4', placement: 'ssh:ubuntu@10.0.0.5' }),
      ],
      colours(false),
      { now: NOW },
    );
    expect(table.split('\n')).toEqual([
      'Machine  State    Address   Inst id          Inst type  Base          AZ          Message',
      '3        running  54.1.2.3  i-0abc           t3.small   ubuntu@22.04  us-east-1a  pending (42s ago)',
      '4        running  10.0.0.5  manual:10.0.0.5             ubuntu@22.04              manually provisioned',
    ]);
  });

  it('status shows each unit\u2019s public address, subordinates too', () => {
    const status = sampleStatus();
    status.machines['0']!.publicAddress = '54.9.9.9';
    status.machines['0']!.privateAddress = '10.0.0.9';
    const units = formatStatusTabular(status, { colours: colours(false), now: NOW })
      .split('\n\n')[2]!
      .split('\n');
    expect(units[0]).toMatch(/^Unit +Workload +Agent +Machine +Public address +Message$/);
    expect(units.find((l) => l.startsWith('wordpress/0'))).toMatch(
      /^wordpress\/0 +active +idle +0 +54\.9\.9\.9$/,
    );
    expect(units.find((l) => l.startsWith('  telegraf/0'))).toMatch(
      /^ {2}telegraf\/0 +active +idle +54\.9\.9\.9$/,
    );
  });
});

describe('--wait output', () => {
  it('fitWords cuts between words, never inside one, and marks the cut', () => {
    const line = 'machines 1/3 settled: 2 pending, 0 allocating, 1 running, 0 error';
    expect(fitWords(line, 200)).toBe(line);
    expect(fitWords(line, 40)).toBe('machines 1/3 settled: 2 pending, 0…');
    for (let width = 10; width < line.length; width++) {
      const fitted = fitWords(line, width);
      expect(fitted.length).toBeLessThanOrEqual(width);
      // what is kept is whole words of the line
      expect(line.startsWith(fitted.slice(0, -1))).toBe(true);
      const kept = fitted.slice(0, -1);
      if (kept.length > 0 && kept.length < line.length)
        expect(line[kept.length]).toMatch(/[\s,;:|(]/);
    }
  });

  it('a machine seen failing in several zones: the error says every zone tried failed and names them', () => {
    const m = machine({
      status: 'error',
      message: 'InsufficientInstanceCapacity: no capacity in us-east-1f',
    });
    expect(failureLine('3', m, ['us-east-1f', 'us-east-1a', 'us-east-1c'])).toBe(
      'machine 3 error: every zone tried failed (us-east-1a, us-east-1c, us-east-1f); the last: InsufficientInstanceCapacity: no capacity in us-east-1f',
    );
    // one zone, or none seen: the error as it is
    expect(failureLine('3', m, ['us-east-1f'])).toBe(
      'machine 3 error: InsufficientInstanceCapacity: no capacity in us-east-1f',
    );
    expect(failureLine('3', undefined)).toBe('machine 3 was removed');
    // the machine's own error names the zones it tried: used as it is, not the polling guess
    const own = machine({
      status: 'error',
      message:
        'every zone tried failed (us-east-1a, us-east-1b, us-east-1c); the last: InsufficientInstanceCapacity: no capacity in us-east-1c',
    });
    expect(failureLine('3', own, ['us-east-1b', 'us-east-1c'])).toBe(
      'machine 3 error: every zone tried failed (us-east-1a, us-east-1b, us-east-1c); the last: InsufficientInstanceCapacity: no capacity in us-east-1c',
    );
  });
});

describe('models list', () => {
  const model: Model = {
    name: 'demo',
    region: 'us-east-1',
    constraints: 'mem=2048M',
    createdAt: '2026-11-22T09:20:30Z',
  };

  it('last change is the latest of the model\u2019s creation and its machines\u2019 changes', () => {
    const status = sampleStatus();
    status.machines['0']!.updatedAt = '2026-11-22T10:15:30Z';
    status.machines['1']!.updatedAt = '2026-11-22T10:00:00Z';
    expect(lastChange(model, status)).toBe('2026-11-22T10:15:30Z');
    expect(lastChange(model, { ...status, machines: {} })).toBe(model.createdAt);
  });

  it('the table has machines, units, access and humanised times', () => {
    const table = modelsTable(
      [model, { ...model, name: 'other', constraints: '', createdAt: '2026-10-01T08:00:00Z' }],
      new Map([
        ['demo', { machines: 4, units: 6, access: 'admin', lastChange: '2026-11-22T10:15:30Z' }],
        ['other', {}],
      ]),
      'demo',
      NOW,
    );
    expect(table.split('\n')).toEqual([
      'Model  Cloud/Region   Constraints  Machines  Units  Access  Created     Last change',
      'demo*  aws/us-east-1  mem=2048M           4      6  admin   1 hour ago  5 minutes ago',
      'other  aws/us-east-1                                        2026-10-01',
    ]);
  });

  it('a server that answers ?summary=true gives the table in one request', async () => {
    const other: Model = { ...model, name: 'other', constraints: '' };
    const h = await runCli(['models'], (req) => {
      if (req.path === '/v1/models?summary=true')
        return {
          models: [
            {
              ...other,
              summary: { machines: 0, units: 0, lastChange: other.createdAt, access: 'read' },
            },
            {
              ...model,
              summary: {
                machines: 4,
                units: 6,
                lastChange: '2026-11-22T10:15:30Z',
                access: 'admin',
              },
            },
          ],
        };
      throw new Error(`unexpected ${req.path}`);
    });
    expect(h.code).toBe(0);
    expect(h.requests).toEqual([{ method: 'GET', path: '/v1/models?summary=true' }]);
    expect(h.stdout.split('\n').slice(1, 3)).toEqual([
      expect.stringMatching(
        /^demo +aws\/us-east-1 +mem=2048M +4 +6 +admin +1 hour ago +5 minutes ago$/,
      ),
      expect.stringMatching(/^other +aws\/us-east-1 +0 +0 +read +1 hour ago +1 hour ago$/),
    ]);
    // json and yaml print the plain list: no summary asked for
    const json = await runCli(['models', '--format', 'json'], (req) => {
      if (req.path === '/v1/models') return { models: [model] };
      throw new Error(`unexpected ${req.path}`);
    });
    expect(json.requests).toEqual([{ method: 'GET', path: '/v1/models' }]);
    expect(JSON.parse(json.stdout).models).toEqual([model]);
  });

  it('the table follows the summary cursor: every page, in one table', async () => {
    const summed = (m: Model, machines: number) => ({
      ...m,
      summary: { machines, units: 0, lastChange: m.createdAt, access: 'admin' as const },
    });
    const h = await runCli(['models'], (req) => {
      if (req.path === '/v1/models?summary=true')
        return { models: [summed(model, 4)], cursor: 'eyJhZnRlciI6ImRlbW8ifQ' };
      if (req.path === '/v1/models?summary=true&cursor=eyJhZnRlciI6ImRlbW8ifQ')
        return { models: [summed({ ...model, name: 'other', constraints: '' }, 2)] };
      throw new Error(`unexpected ${req.path}`);
    });
    expect(h.code).toBe(0);
    expect(h.requests).toEqual([
      { method: 'GET', path: '/v1/models?summary=true' },
      { method: 'GET', path: '/v1/models?summary=true&cursor=eyJhZnRlciI6ImRlbW8ifQ' },
    ]);
    expect(h.stdout.split('\n').slice(1, 3)).toEqual([
      expect.stringMatching(/^demo +aws\/us-east-1 +mem=2048M +4 +0 +admin /),
      expect.stringMatching(/^other +aws\/us-east-1 +2 +0 +admin /),
    ]);
  });

  it('the table stops with an error when the server answers the same cursor twice', async () => {
    const summed = (m: Model, machines: number) => ({
      ...m,
      summary: { machines, units: 0, lastChange: m.createdAt, access: 'admin' as const },
    });
    const h = await runCli(['models'], (req) => {
      if (req.path === '/v1/models?summary=true')
        return { models: [summed(model, 4)], cursor: 'c1' };
      // a faulty server: the next page hands back a cursor already followed
      if (req.path === '/v1/models?summary=true&cursor=c1')
        return { models: [summed({ ...model, name: 'other' }, 2)], cursor: 'c2' };
      if (req.path === '/v1/models?summary=true&cursor=c2')
        return { models: [summed({ ...model, name: 'third' }, 1)], cursor: 'c1' };
      throw new Error(`unexpected ${req.path}`);
    });
    expect(h.code).toBe(1);
    expect(h.stdout).toBe('');
    expect(h.stderr).toBe(
      'ERROR the server answered the same models cursor twice ("c1"); stopped paging after 3 ' +
        'models (a server fault: try again, or use --format json)\n',
    );
    expect(h.requests.map((r) => r.path)).toEqual([
      '/v1/models?summary=true',
      '/v1/models?summary=true&cursor=c1',
      '/v1/models?summary=true&cursor=c2',
    ]);
  });

  it('list-models is models; a superuser has admin on every model (a server without summaries: one request per model)', async () => {
    const h = await runCli(['list-models'], (req) => {
      if (req.path === '/v1/models?summary=true') return { models: [model] };
      if (req.path === '/v1/whoami') return { user: 'admin', access: 'superuser' };
      return sampleStatus();
    });
    expect(h.code).toBe(0);
    expect(h.stdout.split('\n')[1]).toMatch(
      /^demo +aws\/us-east-1 +mem=2048M +4 +6 +admin +1 hour ago/,
    );
    expect(h.requests.map((r) => r.path)).toEqual([
      '/v1/models?summary=true',
      '/v1/whoami',
      '/v1/models/demo/status',
    ]);
  });
});

describe('new verbs', () => {
  const status = (): Status => {
    const s = sampleStatus();
    s.machines['0']!.publicAddress = '54.9.9.9';
    return s;
  };

  it('machines and list-machines: the machine table; --format yaml the machines by id', async () => {
    for (const verb of ['machines', 'list-machines']) {
      const h = await runCli([verb], () => status());
      expect(h.code).toBe(0);
      expect(h.stdout.split('\n')[0]).toMatch(
        /^Machine +State +Address +Inst id +Inst type +Base +AZ +Message$/,
      );
      expect(h.stdout).toMatch(/^0 +running +54\.9\.9\.9 +i-0a1b2c3d4e5f60001 /m);
      expect(h.requests).toEqual([{ method: 'GET', path: '/v1/models/demo/status' }]);
    }
    const yaml = parse((await runCli(['machines', '--format', 'yaml'], () => status())).stdout);
    expect(yaml.model).toBe('demo');
    expect(Object.keys(yaml.machines).sort()).toEqual(['0', '0/lxd/0', '1', '2']);
    const empty = await runCli(['machines'], () => ({ ...status(), machines: {} }));
    expect(empty).toMatchObject({ code: 0, stdout: '', stderr: 'No machines to display.\n' });
  });

  it('show-unit: machine, addresses, Juju\u2019s two statuses and the principal of a subordinate', async () => {
    const h = await runCli(['show-unit', 'wordpress/0', 'telegraf/0'], () => status());
    expect(h.code).toBe(0);
    expect(parse(h.stdout)).toEqual({
      'wordpress/0': {
        application: 'wordpress',
        charm: 'wordpress',
        base: 'ubuntu@22.04',
        machine: '0',
        life: 'alive',
        'workload-status': { current: 'active' },
        'juju-status': { current: 'idle' },
        'public-address': '54.9.9.9',
        subordinates: ['telegraf/0'],
      },
      'telegraf/0': {
        application: 'telegraf',
        charm: 'telegraf',
        base: 'ubuntu@22.04',
        machine: '0',
        life: 'alive',
        'workload-status': { current: 'active' },
        'juju-status': { current: 'idle' },
        'public-address': '54.9.9.9',
        principal: 'wordpress/0',
        subordinates: [],
      },
    });
    // a subordinate asked for alone keeps its principal
    const alone = await runCli(['show-unit', 'telegraf/0'], () => status());
    expect(alone.code).toBe(0);
    expect(parse(alone.stdout)).toMatchObject({ 'telegraf/0': { principal: 'wordpress/0' } });
    expect(await runCli(['show-unit', 'wordpress/9'], () => status())).toMatchObject({
      code: 1,
      stderr: 'ERROR unit "wordpress/9" not found\n',
    });
    expect(await runCli(['show-unit', 'wordpress'], () => status())).toMatchObject({
      code: 2,
      stderr: 'ERROR invalid unit name "wordpress"\n',
    });
  });

  it('show-application: the application with its units; JSON on request', async () => {
    const h = await runCli(['show-application', 'wordpress', '--format', 'json'], (req) =>
      req.path.endsWith('/status')
        ? status()
        : {
            name: 'wordpress',
            charm: 'wordpress',
            base: 'ubuntu@22.04',
            constraints: 'mem=2048M',
            subordinate: false,
            life: 'alive',
            createdAt: '2026-11-22T09:00:00.000Z',
          },
    );
    expect(h.code).toBe(0);
    expect(JSON.parse(h.stdout)).toEqual({
      wordpress: {
        charm: 'wordpress',
        base: 'ubuntu@22.04',
        principal: true,
        life: 'alive',
        constraints: 'mem=2048M',
        created: '2026-11-22T09:00:00.000Z',
        units: ['wordpress/0', 'wordpress/1', 'wordpress/2'],
      },
    });
  });

  it('model-config: the table with sources, one key, a change as PATCH, unknown keys refused', async () => {
    const model: Model = {
      name: 'demo',
      region: 'us-east-1',
      constraints: '',
      harvestMode: 'all',
      availabilitySets: false,
      reprovisionLost: false,
    };
    const h = await runCli(['model-config'], () => model);
    expect(h.stdout.split('\n')).toEqual([
      'Attribute                  From     Value',
      'availability-sets-enabled  default  false',
      'provisioner-harvest-mode   model    all',
      'reprovision-lost           default  false',
      '',
    ]);
    expect((await runCli(['model-config', 'provisioner-harvest-mode'], () => model)).stdout).toBe(
      'all\n',
    );
    const set = await runCli(['model-config', 'reprovision-lost=true'], () => model);
    expect(set.code).toBe(0);
    expect(set.requests).toEqual([
      { method: 'PATCH', path: '/v1/models/demo', body: { reprovisionLost: true } },
    ]);
    const reset = await runCli(
      ['model-config', '--reset', 'provisioner-harvest-mode'],
      () => model,
    );
    expect(reset.requests).toEqual([
      { method: 'PATCH', path: '/v1/models/demo', body: { harvestMode: 'destroyed' } },
    ]);
    const unknown = await runCli(['model-config', 'logging-config=x'], () => model);
    expect(unknown).toMatchObject({
      code: 2,
      stderr:
        'ERROR unknown model config key "logging-config" (known: availability-sets-enabled, provisioner-harvest-mode, reprovision-lost)\n',
      requests: [],
    });
    expect(() => configChanges(['reprovision-lost=yes'], [])).toThrow(
      'invalid value "yes" for config reprovision-lost: expected true or false',
    );
    expect(() => configChanges(['reprovision-lost=true'], ['reprovision-lost'])).toThrow(
      'key "reprovision-lost" specified more than once',
    );
  });

  it('version and --version print Juju\u2019s version-os-arch line', async () => {
    expect(versionLine('0.1.0', 'linux', 'x64')).toBe('0.1.0-linux-amd64');
    expect(versionLine('0.1.0', 'darwin', 'arm64')).toBe('0.1.0-darwin-arm64');
    const v = await runCli(['version']);
    expect(v).toMatchObject({ code: 0, stderr: '', requests: [] });
    expect(v.stdout).toMatch(/^\d+\.\d+\.\d+-[a-z0-9]+-[a-z0-9]+\n$/);
    const flag = await runCli(['--version']);
    expect(flag).toMatchObject({ code: 0, stdout: v.stdout, requests: [] });
    expect(JSON.parse((await runCli(['version', '--format', 'json'])).stdout)).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      node: process.versions.node,
    });
  });

  it('remove-unit says when the unit\u2019s machine goes too, in Juju\u2019s words', async () => {
    let removed = false;
    const h = await runCli(['remove-unit', 'wordpress/1', 'wordpress/0'], (req) => {
      if (req.method === 'DELETE') {
        removed = true;
        return {};
      }
      if (req.path === '/v1/models/demo/machines/1')
        return { ...status().machines['1'], life: 'dead' };
      if (req.path === '/v1/models/demo/machines/0') return status().machines['0'];
      return status();
    });
    expect(removed).toBe(true);
    expect(h).toMatchObject({
      code: 0,
      stdout: '',
      stderr:
        'will remove unit wordpress/1\n- will remove machine 1\nwill remove unit wordpress/0\n',
    });
  });
});

describe('show-status-log', () => {
  const m = machine({
    id: '3',
    status: 'running',
    instanceId: 'i-0abc',
    instanceStatus: 'running',
    instanceStatusAt: '2026-11-22T10:05:00.000Z',
    createdAt: '2026-11-22T10:00:00.000Z',
    updatedAt: '2026-11-22T10:05:00.000Z',
  });

  it('a request path names a machine exactly, containers encoded or not', () => {
    expect(namesEntity('/v1/models/demo/machines/3/retry', 'machine', '3')).toBe(true);
    expect(namesEntity('/v1/models/demo/machines/3', 'machine', '3')).toBe(true);
    expect(namesEntity('/v1/models/demo/machines/30', 'machine', '3')).toBe(false);
    expect(namesEntity('/v1/models/demo/machines/3%2Flxd%2F0', 'machine', '3')).toBe(false);
    expect(namesEntity('/v1/models/demo/machines/3%2Flxd%2F0', 'machine', '3/lxd/0')).toBe(true);
    expect(namesEntity('/v1/models/demo/units/wordpress/1', 'unit', 'wordpress/1')).toBe(true);
  });

  it('the rows: added, requests naming it, the instance state, the last change; oldest first', () => {
    const rows = machineStatusLog(
      { ...m, status: 'error', message: 'boom', updatedAt: '2026-11-22T10:09:00.000Z' },
      [
        {
          time: '2026-11-22T10:08:00.000Z',
          user: 'bob',
          method: 'POST',
          path: '/v1/models/demo/machines/3/retry',
          status: 202,
          requestId: 'r1',
        },
      ],
    );
    expect(rows).toEqual([
      {
        time: '2026-11-22T10:00:00.000Z',
        type: 'juju-machine',
        status: 'pending',
        message: 'added',
      },
      {
        time: '2026-11-22T10:05:00.000Z',
        type: 'machine',
        status: 'running',
        message: 'instance i-0abc',
      },
      {
        time: '2026-11-22T10:08:00.000Z',
        type: 'request',
        status: '202',
        message: 'retry-provisioning by bob',
      },
      { time: '2026-11-22T10:09:00.000Z', type: 'juju-machine', status: 'error', message: 'boom' },
    ]);
    expect(statusLogTime('2026-11-22T10:05:00.000Z')).toBe('22 Nov 2026 10:05:00Z');
    // Juju's (Go's) month names, never ICU's `Sept`
    expect(statusLogTime('2026-09-05T01:02:03.000Z')).toBe('05 Sep 2026 01:02:03Z');
    expect(
      Array.from({ length: 12 }, (_, i) =>
        statusLogTime(new Date(Date.UTC(2026, i, 1)).toISOString()).slice(3, 6),
      ).join(' '),
    ).toBe('Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec');
  });

  it('a unit shows its machine\u2019s log; without audit access the requests are left out and it says so', async () => {
    const h = await runCli(['show-status-log', 'wordpress/0'], (req) => {
      if (req.path.endsWith('/status')) return sampleStatus();
      if (req.path.includes('/audit')) throw new ApiError(403, 'forbidden', 'permission denied');
      return { ...m, id: '0' };
    });
    expect(h.code).toBe(0);
    expect(h.stdout.split('\n')).toEqual([
      'Time                   Type          Status   Message',
      '22 Nov 2026 10:00:00Z  juju-machine  pending  added',
      '22 Nov 2026 10:05:00Z  machine       running  instance i-0abc',
      '22 Nov 2026 10:05:00Z  juju-machine  running',
      '',
    ]);
    expect(h.stderr).toBe(
      [
        "NOTE unit wordpress/0 is on machine 0: its status follows the machine's",
        "NOTE built from the machine's record (added, instance state, last change)",
        "NOTE the model's audit needs admin access: the requests are not shown",
        "NOTE every step in between is in the machine's workflow history (Temporal UI)",
        '',
      ].join('\n'),
    );
    expect(await runCli(['show-status-log', 'nonsense!'])).toMatchObject({
      code: 2,
      stderr: 'ERROR invalid entity "nonsense!": expected a machine id or a unit name\n',
    });
  });
});
