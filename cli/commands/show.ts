import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { segment } from '../client';
import type { Session } from '../context';
import { CliError, UsageError } from '../errors';
import { machineAddress } from '../machine-columns';
import { formatMachineTable, naturalCompare, unitView } from '../status';
import type { Application, Machine, Status } from '../types';
import { printStructured, withFormat, withModel, type Format, type ModelOpts } from './common';

const UNIT_NAME = /^[a-z][a-z0-9-]*\/\d+$/;

/** The package's version, as `provisioner version` and `--version` print it. */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** Juju's `3.6.0-genericlinux-amd64` shape: version, OS, architecture. */
export function versionLine(
  version: string,
  platform: string = process.platform,
  arch: string = process.arch,
): string {
  const archName = arch === 'x64' ? 'amd64' : arch;
  return `${version}-${platform}-${archName}`;
}

/** `show-unit`'s mapping for one unit, from the model's status. */
export function showUnitValue(status: Status, name: string): Record<string, unknown> {
  for (const [app, a] of Object.entries(status.applications)) {
    const unit = a.units[name];
    if (!unit) continue;
    const machine: Machine | undefined = status.machines[unit.machine];
    const view = unitView(unit, machine);
    const principal = Object.values(status.applications)
      .flatMap((x) => Object.entries(x.units))
      .find(([, u]) => u.subordinates.includes(name))?.[0];
    const address = machine ? machineAddress(machine) : '';
    return {
      application: app,
      charm: a.charm ?? app,
      base: a.base,
      machine: unit.machine,
      life: unit.life,
      'workload-status': {
        current: view.workload,
        ...(view.message ? { message: view.message } : {}),
      },
      'juju-status': { current: view.agent },
      ...(address ? { 'public-address': address } : {}),
      ...(machine?.privateAddress ? { 'private-address': machine.privateAddress } : {}),
      ...(principal ? { principal } : {}),
      subordinates: [...unit.subordinates].sort(naturalCompare),
    };
  }
  throw new CliError(`unit "${name}" not found`);
}

export function registerShowCommands(program: Command, session: Session): void {
  withFormat(
    withModel(
      program
        .command('machines')
        .alias('list-machines')
        .description('Lists machines in a model.')
        .option('--color', 'use ANSI color codes in tabular output, even when not on a terminal')
        .option('--no-color', 'disable ANSI color codes in tabular output'),
    ),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (opts: ModelOpts & { format: Format; color?: boolean }) => {
    const model = session.model(opts.model);
    const status = await session.client().get<Status>(`/v1/models/${segment(model)}/status`);
    if (opts.format !== 'tabular') {
      printStructured(session, opts.format, { model, machines: status.machines });
      return;
    }
    const machines = Object.values(status.machines);
    if (machines.length === 0) {
      session.info('No machines to display.\n');
      return;
    }
    session.out(
      `${formatMachineTable(machines, session.colours(opts.color), { now: session.ctx.now() })}\n`,
    );
  });

  withFormat(
    withModel(
      program
        .command('show-application')
        .description('Displays information about an application.')
        .argument('<application...>', 'applications to show'),
    ),
    ['yaml', 'json'],
    'yaml',
  ).action(async (apps: string[], opts: ModelOpts & { format: Format }) => {
    const model = session.model(opts.model);
    const client = session.client();
    const status = await client.get<Status>(`/v1/models/${segment(model)}/status`);
    const out: Record<string, unknown> = {};
    for (const name of apps) {
      const app = await client.get<Application>(
        `/v1/models/${segment(model)}/applications/${segment(name)}`,
      );
      const units = Object.keys(status.applications[name]?.units ?? {}).sort(naturalCompare);
      out[name] = {
        charm: app.charm,
        base: app.base,
        principal: !app.subordinate,
        life: app.life,
        constraints: app.constraints,
        ...(app.createdAt ? { created: app.createdAt } : {}),
        units,
      };
    }
    printStructured(session, opts.format, out);
  });

  withFormat(
    withModel(
      program
        .command('show-unit')
        .description('Displays information about a unit.')
        .argument('<unit...>', 'units to show, e.g. wordpress/0'),
    ),
    ['yaml', 'json'],
    'yaml',
  ).action(async (units: string[], opts: ModelOpts & { format: Format }) => {
    for (const u of units) if (!UNIT_NAME.test(u)) throw new UsageError(`invalid unit name "${u}"`);
    const model = session.model(opts.model);
    // unfiltered: a subordinate asked for alone still finds its principal
    const status = await session.client().get<Status>(`/v1/models/${segment(model)}/status`);
    printStructured(
      session,
      opts.format,
      Object.fromEntries(units.map((u) => [u, showUnitValue(status, u)])),
    );
  });

  withFormat(
    program.command('version').description('Prints the provisioner CLI version.'),
    ['smart', 'json', 'yaml'],
    'smart',
  ).action((opts: { format: Format | 'smart' }) => {
    const version = cliVersion();
    if (opts.format === 'smart') {
      session.out(`${versionLine(version)}\n`);
      return;
    }
    printStructured(session, opts.format, {
      version,
      os: process.platform,
      arch: process.arch === 'x64' ? 'amd64' : process.arch,
      node: process.versions.node,
    });
  });
}
