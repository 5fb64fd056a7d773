import { paintStatus, type Colours } from './colour';
import { instanceIdCell, machineAddress, machineMessage } from './machine-columns';
import { columns } from './table';
import type { Machine, Status, Unit } from './types';

/** Natural order: `2` before `10`, `app/2` before `app/10`, `0` before `0/lxd/0`. */
export function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

export function machineIdCompare(a: string, b: string): number {
  const pa = a.split('/');
  const pb = b.split('/');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const d = naturalCompare(x, y);
    if (d !== 0) return d;
  }
  return 0;
}

function hostOf(machineId: string): string {
  return machineId.split('/')[0] ?? machineId;
}

/**
 * Juju's status filters: an application (its units, their subordinates and
 * machines), a unit (likewise), or a machine (its containers, the units on
 * them and their applications). No filter keeps everything.
 */
export function filterStatus(status: Status, filters: string[]): Status {
  if (filters.length === 0) return status;
  const apps = new Set<string>();
  const units = new Set<string>();
  const machines = new Set<string>();
  const allUnits = new Map<string, { app: string; unit: Unit }>();
  for (const [app, a] of Object.entries(status.applications))
    for (const [name, unit] of Object.entries(a.units)) allUnits.set(name, { app, unit });

  const addUnit = (name: string) => {
    const found = allUnits.get(name);
    if (!found || units.has(name)) return;
    units.add(name);
    apps.add(found.app);
    machines.add(found.unit.machine);
    for (const sub of found.unit.subordinates) addUnit(sub);
  };
  for (const f of filters) {
    const app = status.applications[f];
    if (app) {
      apps.add(f);
      Object.keys(app.units).forEach(addUnit);
    }
    if (allUnits.has(f)) addUnit(f);
    for (const id of Object.keys(status.machines)) {
      if (id === f || hostOf(id) === f) {
        machines.add(id);
        for (const [name, { unit }] of allUnits) if (unit.machine === id) addUnit(name);
      }
    }
  }
  // a container's host is shown with it, as Juju does
  for (const id of [...machines]) if (status.machines[hostOf(id)]) machines.add(hostOf(id));

  const keep = <T>(record: Record<string, T>, wanted: Set<string>) =>
    Object.fromEntries(Object.entries(record).filter(([k]) => wanted.has(k)));
  return {
    model: status.model,
    machines: keep(status.machines, machines),
    applications: Object.fromEntries(
      Object.entries(keep(status.applications, apps)).map(([name, a]) => [
        name,
        { ...a, units: keep(a.units, units) },
      ]),
    ),
  };
}

/** Juju's two-level view of a unit: workload and agent, with a message. */
export function unitView(unit: Unit, machine: Machine | undefined) {
  if (machine?.status === 'down')
    return { workload: 'unknown', agent: 'lost', message: `machine ${unit.machine} is down` };
  switch (unit.status) {
    case 'deployed':
      return { workload: 'active', agent: 'idle', message: '' };
    case 'error':
      return {
        workload: 'waiting',
        agent: 'error',
        message: `machine ${unit.machine} failed to start`,
      };
    default:
      return { workload: 'waiting', agent: 'allocating', message: 'waiting for machine' };
  }
}

/** An application's status, summed from its units as Juju does; a unit on a down machine is not deployed. */
function applicationView(
  units: Unit[],
  machines: Record<string, Machine>,
): { status: string; message: string; deployed: number } {
  const down = (u: Unit) => machines[u.machine]?.status === 'down';
  const deployed = units.filter((u) => u.status === 'deployed' && !down(u)).length;
  const list = (ids: string[], what: string) => {
    const unique = [...new Set(ids)].sort(machineIdCompare);
    return `machine${unique.length > 1 ? 's' : ''} ${unique.join(', ')} ${what}`;
  };
  const failed = units.filter((u) => u.status === 'error').map((u) => u.machine);
  if (failed.length) return { status: 'error', message: list(failed, 'failed to start'), deployed };
  const lost = units.filter(down).map((u) => u.machine);
  if (lost.length)
    return {
      status: 'error',
      message: list(lost, lost.length > 1 ? 'are down' : 'is down'),
      deployed,
    };
  if (deployed < units.length)
    return { status: 'waiting', message: 'waiting for machine', deployed };
  return { status: units.length ? 'active' : 'unknown', message: '', deployed };
}

/** `15:04:05Z`, Juju's status timestamp. */
function timestamp(now: Date): string {
  return `${now.toISOString().slice(11, 19)}Z`;
}

export interface FormatOptions {
  colours: Colours;
  now: Date;
}

/** `$0.0208`: an hourly price in USD, as the model header's Cost/h shows it. */
export function formatPrice(usd: number): string {
  return `$${usd.toFixed(4)}`;
}

/**
 * The Machine section. `price` adds a Cost/h column (show-machine) when any
 * machine carries `pricePerHour`; a machine without one shows nothing there.
 */
export function formatMachineTable(
  machines: Machine[],
  c: Colours,
  opts: { price?: boolean; now?: Date } = {},
): string {
  const sorted = [...machines].sort((a, b) => machineIdCompare(a.id, b.id));
  const price = opts.price === true && sorted.some((m) => m.pricePerHour !== undefined);
  const header = ['Machine', 'State', 'Address', 'Inst id', 'Inst type', 'Base', 'AZ'];
  if (price) header.push('Cost/h');
  header.push('Message');
  return columns(
    header,
    sorted.map((m) => {
      const row = [
        m.id,
        paintStatus(c, m.status),
        machineAddress(m),
        instanceIdCell(m),
        m.instanceType ?? '',
        m.base,
        m.zone ?? '',
      ];
      if (price) row.push(m.pricePerHour === undefined ? '' : formatPrice(m.pricePerHour));
      row.push(machineMessage(m, opts.now));
      return row;
    }),
  );
}

/**
 * `juju status`'s tabular layout: the model line, then App, Unit and Machine
 * sections; subordinate units indented under their principal.
 */
export function formatStatusTabular(status: Status, opts: FormatOptions): string {
  const c = opts.colours;
  const header = ['Model', 'Cloud/Region', 'Constraints', 'Timestamp'];
  const values = [
    status.model.name,
    `aws/${status.model.region}`,
    status.model.constraints,
    timestamp(opts.now),
  ];
  if (status.model.pricePerHour !== undefined) {
    header.push('Cost/h');
    values.push(formatPrice(status.model.pricePerHour));
  }
  const sections = [columns(header, [values])];

  const appNames = Object.keys(status.applications).sort(naturalCompare);
  const machineIds = Object.keys(status.machines);
  if (appNames.length === 0 && machineIds.length === 0) {
    sections.push(`Model "${status.model.name}" is empty.`);
    return `${sections.join('\n\n')}\n`;
  }

  if (appNames.length) {
    sections.push(
      columns(
        ['App', 'Status', 'Scale', 'Charm', 'Base', 'Message'],
        appNames.map((name) => {
          const app = status.applications[name]!;
          const units = Object.values(app.units);
          const view = applicationView(units, status.machines);
          const deployed = view.deployed;
          const scale =
            deployed === units.length ? String(units.length) : `${deployed}/${units.length}`;
          return [
            name,
            paintStatus(c, view.status),
            deployed === units.length ? scale : c.yellow(scale),
            app.charm ?? name,
            app.base,
            view.message,
          ];
        }),
        [2],
      ),
    );
  }

  const unitRows: string[][] = [];
  const allUnits = new Map<string, Unit>();
  for (const app of Object.values(status.applications))
    for (const [name, u] of Object.entries(app.units)) allUnits.set(name, u);
  const subordinateNames = new Set([...allUnits.values()].flatMap((u) => u.subordinates));
  const addUnitRow = (name: string, unit: Unit, level: number) => {
    const view = unitView(unit, status.machines[unit.machine]);
    const machine = status.machines[unit.machine];
    unitRows.push([
      `${' '.repeat(level * 2)}${name}`,
      paintStatus(c, view.workload),
      paintStatus(c, view.agent),
      level === 0 ? unit.machine : '',
      machine ? machineAddress(machine) : '',
      view.message,
    ]);
    for (const sub of [...unit.subordinates].sort(naturalCompare)) {
      const subUnit = allUnits.get(sub);
      if (subUnit) addUnitRow(sub, subUnit, level + 1);
    }
  };
  for (const name of [...allUnits.keys()].sort(naturalCompare))
    if (!subordinateNames.has(name)) addUnitRow(name, allUnits.get(name)!, 0);
  // Juju's table has `Ports` between the address and the message: the ports a charm opened
  // through its unit agent. Nothing here runs agents or opens ports, so the column would be
  // empty on every row, as if ports were tracked: it is left out (issue 29)
  if (unitRows.length)
    sections.push(
      columns(['Unit', 'Workload', 'Agent', 'Machine', 'Public address', 'Message'], unitRows),
    );

  if (machineIds.length)
    sections.push(formatMachineTable(Object.values(status.machines), c, { now: opts.now }));
  const cost = status.model.pricePerHour;
  if (cost !== undefined) {
    // the model's running machines, at the on-demand prices their types were chosen at
    sections.push(
      `Cost of running machines: ${formatPrice(cost)}/h, $${(Math.round(cost * 730 * 100) / 100).toFixed(2)}/month`,
    );
  }
  return `${sections.join('\n\n')}\n`;
}
