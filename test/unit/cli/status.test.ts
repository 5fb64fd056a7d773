import { colours } from '../../../cli/colour';
import {
  filterStatus,
  formatMachineTable,
  formatStatusTabular,
  machineIdCompare,
} from '../../../cli/status';
import { sampleStatus } from './fixtures';

const NOW = new Date('2026-11-22T10:20:30Z');
const plain = { colours: colours(false), now: NOW };

describe('status, tabular', () => {
  it("prints Juju's sections: model, App, Unit (subordinates indented), Machine (containers after their host)", () => {
    expect(formatStatusTabular(sampleStatus(), plain)).toBe(
      [
        'Model  Cloud/Region   Constraints  Timestamp',
        'demo   aws/us-east-1  mem=2048M    10:20:30Z',
        '',
        'App        Status   Scale  Charm      Base          Message',
        'mysql      waiting    0/1  mysql      ubuntu@22.04  waiting for machine',
        'telegraf   waiting    1/2  telegraf   ubuntu@22.04  waiting for machine',
        'wordpress  error      1/3  wordpress  ubuntu@22.04  machine 1 failed to start',
        '',
        'Unit          Workload  Agent       Machine  Public address  Message',
        'mysql/0       waiting   allocating  0/lxd/0                  waiting for machine',
        'wordpress/0   active    idle        0',
        '  telegraf/0  active    idle',
        'wordpress/1   waiting   error       1                        machine 1 failed to start',
        'wordpress/2   waiting   allocating  2                        waiting for machine',
        '  telegraf/1  waiting   allocating                           waiting for machine',
        '',
        'Machine  State       Address  Inst id              Inst type  Base          AZ          Message',
        '0        running              i-0a1b2c3d4e5f60001  t3.small   ubuntu@22.04  us-east-1a  running',
        '0/lxd/0  pending                                              ubuntu@22.04              containers are recorded, not provisioned, by this provisioner',
        '1        error                                                ubuntu@22.04              failed to start machine 1 (InsufficientInstanceCapacity: no capacity in us-east-1b)',
        '2        allocating                                           ubuntu@22.04              starting in zone "us-east-1c" (attempt 1 of 10)',
        '',
      ].join('\n'),
    );
  });

  it('shows a machine down with its message, and the cost column when the model has a price', () => {
    const status = sampleStatus();
    status.model.pricePerHour = 0.0208;
    status.machines['0'] = {
      ...status.machines['0']!,
      status: 'down',
      instanceStatus: 'terminated',
      message: 'instance "i-0a1b2c3d4e5f60001" is terminated',
    };
    const text = formatStatusTabular(filterStatus(status, ['0']), plain);
    expect(text.split('\n').slice(0, 2)).toEqual([
      'Model  Cloud/Region   Constraints  Timestamp  Cost/h',
      'demo   aws/us-east-1  mem=2048M    10:20:30Z  $0.0208',
    ]);
    expect(text).toContain(
      '0        down              i-0a1b2c3d4e5f60001  t3.small   ubuntu@22.04  us-east-1a  instance "i-0a1b2c3d4e5f60001" is terminated',
    );
    // a unit on a down machine is lost, and its application no longer fully deployed
    expect(text).toContain('wordpress  error      0/1  wordpress  ubuntu@22.04  machine 0 is down');
    expect(text).toContain(
      'wordpress/0   unknown   lost        0                        machine 0 is down',
    );
  });

  it('ends with the cost of the running machines per hour and per month (x 730, to cents)', () => {
    const status = sampleStatus();
    status.model.pricePerHour = 0.0208;
    const text = formatStatusTabular(status, plain);
    expect(text.endsWith('\n\nCost of running machines: $0.0208/h, $15.18/month\n')).toBe(true);
    // no price known: no footer
    expect(formatStatusTabular(sampleStatus(), plain)).not.toContain('Cost of running machines');
  });

  it('shows the instance state in Message when the machine has no message', () => {
    const status = sampleStatus();
    status.machines['0']!.instanceStatus = 'stopping';
    expect(formatStatusTabular(status, plain)).toMatch(/^0 +running .* us-east-1a {2}stopping$/m);
  });

  it('says when the model is empty', () => {
    expect(
      formatStatusTabular(
        {
          model: { name: 'empty', region: 'eu-west-1', constraints: '' },
          machines: {},
          applications: {},
        },
        plain,
      ),
    ).toBe(
      [
        'Model  Cloud/Region   Constraints  Timestamp',
        'empty  aws/eu-west-1               10:20:30Z',
        '',
        'Model "empty" is empty.',
        '',
      ].join('\n'),
    );
  });

  it('colours states when colour is on: green running, yellow allocating, red error', () => {
    const text = formatStatusTabular(sampleStatus(), { colours: colours(true), now: NOW });
    expect(text).toContain('\x1b[32mrunning\x1b[39m');
    expect(text).toContain('\x1b[33mallocating\x1b[39m');
    expect(text).toContain('\x1b[31merror\x1b[39m');
    // columns stay aligned: escape codes take no width
    const plainLine = formatStatusTabular(sampleStatus(), plain)
      .split('\n')
      .find((l) => l.startsWith('1        error'))!;
    expect(text.split('\n')).toContain(plainLine.replace('error', '\x1b[31merror\x1b[39m'));
  });

  it('colours a down machine, and its lost unit, as an error', () => {
    const status = sampleStatus();
    status.machines['0'] = {
      ...status.machines['0']!,
      status: 'down',
      instanceStatus: 'terminated',
      message: 'instance "i-0a1b2c3d4e5f60001" is terminated',
    };
    const text = formatStatusTabular(status, { colours: colours(true), now: NOW });
    const red = (word: string) => `\x1b[31m${word}\x1b[39m`;
    const lines = text.split('\n');
    expect(lines.find((l) => l.startsWith('0 '))).toContain(` ${red('down')} `);
    const unit = lines.find((l) => l.startsWith('wordpress/0 '));
    expect(unit).toContain(` ${red('unknown')} `);
    expect(unit).toContain(` ${red('lost')} `);
  });

  it('a server that sends no instanceStatus, zone or type leaves those cells empty', () => {
    const status = sampleStatus();
    const { instanceStatus: _s, zone: _z, instanceType: _t, ...bare } = status.machines['0']!;
    status.machines['0'] = bare;
    expect(formatStatusTabular(status, plain)).toMatch(
      /^0 +running +i-0a1b2c3d4e5f60001 +ubuntu@22\.04$/m,
    );
  });

  it('has no escape codes when colour is off', () => {
    expect(formatStatusTabular(sampleStatus(), plain)).not.toContain('\x1b[');
  });
});

describe('machine table (show-machine --format tabular)', () => {
  it('adds Cost/h when a machine has a price, blank for one without', () => {
    const all = sampleStatus().machines;
    all['0']!.pricePerHour = 0.0187;
    // given out of order: the table sorts by id
    const machines = [all['0/lxd/0']!, all['0']!];
    expect(formatMachineTable(machines, colours(false), { price: true }).split('\n')).toEqual([
      'Machine  State    Address  Inst id              Inst type  Base          AZ          Cost/h   Message',
      '0        running           i-0a1b2c3d4e5f60001  t3.small   ubuntu@22.04  us-east-1a  $0.0187  running',
      '0/lxd/0  pending                                           ubuntu@22.04                       containers are recorded, not provisioned, by this provisioner',
    ]);
  });

  it('has no Cost/h column when no machine has a price, or in status', () => {
    const machines = Object.values(sampleStatus().machines);
    expect(formatMachineTable(machines, colours(false), { price: true })).not.toContain('Cost/h');
    machines[0]!.pricePerHour = 0.0187;
    expect(formatMachineTable(machines, colours(false))).not.toContain('Cost/h');
  });
});

describe('status filters', () => {
  it('an application brings its units, their subordinates and machines', () => {
    const s = filterStatus(sampleStatus(), ['wordpress']);
    expect(Object.keys(s.applications).sort()).toEqual(['telegraf', 'wordpress']);
    expect(Object.keys(s.applications.telegraf!.units)).toEqual(['telegraf/0', 'telegraf/1']);
    expect(Object.keys(s.machines).sort(machineIdCompare)).toEqual(['0', '1', '2']);
  });

  it('a machine brings its containers and every unit on them', () => {
    const s = filterStatus(sampleStatus(), ['0']);
    expect(Object.keys(s.machines).sort(machineIdCompare)).toEqual(['0', '0/lxd/0']);
    expect(Object.keys(s.applications).sort()).toEqual(['mysql', 'telegraf', 'wordpress']);
    expect(Object.keys(s.applications.wordpress!.units)).toEqual(['wordpress/0']);
    expect(Object.keys(s.applications.mysql!.units)).toEqual(['mysql/0']);
  });

  it('a unit brings its machine and application only', () => {
    const s = filterStatus(sampleStatus(), ['wordpress/1']);
    expect(Object.keys(s.machines)).toEqual(['1']);
    expect(Object.keys(s.applications)).toEqual(['wordpress']);
  });

  it('a subordinate application alone shows its units at the top level', () => {
    const text = formatStatusTabular(filterStatus(sampleStatus(), ['telegraf']), plain);
    expect(text).toContain('telegraf/0  active    idle        0');
    expect(text).not.toContain('wordpress/0');
  });

  it('nothing matching leaves the model line and no sections', () => {
    const text = formatStatusTabular(filterStatus(sampleStatus(), ['nosuch']), plain);
    expect(text).toContain('Model "demo" is empty.');
  });

  it('orders machine ids numerically by segment', () => {
    expect(['10', '2', '1/lxd/10', '1', '1/lxd/2'].sort(machineIdCompare)).toEqual([
      '1',
      '1/lxd/2',
      '1/lxd/10',
      '2',
      '10',
    ]);
  });
});
