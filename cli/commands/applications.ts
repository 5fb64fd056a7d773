import type { Command } from 'commander';
import { segment } from '../client';
import type { Session } from '../context';
import { ApiError, CliError, UsageError } from '../errors';
import { naturalCompare } from '../status';
import { printPlan, withDryRun, type DryRunOpts, type Plan } from '../plan';
import type { ConstraintsAnswer, Machine, Status, UnitRef } from '../types';
import { constraintsOutput } from './models';
import {
  constraintArgs,
  count,
  maybeWait,
  placements,
  waitTimeout,
  withFormat,
  withModel,
  withWait,
  type Format,
  type ModelOpts,
  type WaitOpts,
} from './common';

/** The default base when --base is not given: there is no charm metadata here to choose one. */
export const DEFAULT_BASE = 'ubuntu@24.04';

/** A charm reference's name: `ch:wordpress`, `wordpress`, `./charms/wordpress` → `wordpress`. */
export function charmName(charm: string): string {
  const last = charm.replace(/\/+$/, '').split('/').pop() ?? charm;
  return last.replace(/^(ch|cs|local):/, '');
}

const UNIT_NAME = /^([a-z][a-z0-9-]*)\/(\d+)$/;

/**
 * The unit's machine, when removing the unit made it Dying or Dead (or
 * removed it already): it was alive before, and is not now.
 */
async function machineGoing(
  session: Session,
  model: string,
  before: Status | undefined,
  app: string,
  unit: string,
): Promise<string | undefined> {
  const id = before?.applications[app]?.units[unit]?.machine;
  if (id === undefined || before?.machines[id]?.life !== 'alive') return undefined;
  try {
    const now = await session
      .client()
      .get<Machine>(`/v1/models/${segment(model)}/machines/${segment(id)}`);
    return now.life === 'alive' ? undefined : id;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return id;
    // the unit is removed either way: not knowing about its machine is no failure
    if (err instanceof CliError) return undefined;
    throw err;
  }
}

export function registerApplicationCommands(program: Command, session: Session): void {
  const deployCmd = withWait(
    withModel(
      program
        .command('deploy')
        .description('Deploys a new application.')
        .argument('<charm>', 'the charm to deploy')
        .argument('[application-name]', 'the application name (default: the charm name)')
        .option('--base <base>', `the base to deploy on (default: ${DEFAULT_BASE})`)
        .option('--constraints <constraints>', 'application constraints, e.g. "mem=4G cores=2"')
        .option('-n, --num-units <n>', 'number of units to add', count(0), 1)
        .option(
          '--to <placement>',
          'placement directives, comma-separated (e.g. 0,lxd:1,zone=us-east-1a)',
          placements,
        )
        .option('--subordinate', 'deploy as a subordinate application (no units until related)'),
    ),
  );
  withDryRun(deployCmd).action(
    async (
      charm: string,
      name: string | undefined,
      opts: ModelOpts &
        WaitOpts &
        DryRunOpts & {
          base?: string;
          constraints?: string;
          numUnits: number;
          to?: string[];
          subordinate?: boolean;
        },
      cmd: Command,
    ) => {
      const timeoutMs = waitTimeout(opts);
      const model = session.model(opts.model);
      const app = name ?? charmName(charm);
      const base = opts.base ?? DEFAULT_BASE;
      const body: Record<string, unknown> = { name: app, charm: charmName(charm), base };
      if (opts.constraints !== undefined) body.constraints = opts.constraints;
      if (opts.subordinate) {
        body.subordinate = true;
        if (cmd.getOptionValueSource('numUnits') === 'cli' && opts.numUnits !== 0)
          throw new UsageError('a subordinate application has no units of its own: drop -n');
        body.numUnits = 0;
      } else body.numUnits = opts.numUnits;
      if (opts.to) body.to = opts.to;
      if (opts.dryRun) {
        const planned = await session
          .client()
          .request<{ plan: Plan }>('POST', `/v1/models/${segment(model)}/applications`, {
            ...body,
            dryRun: true,
          });
        printPlan(session, opts.format, planned.plan);
        return;
      }
      const answer = await session
        .client()
        .request<{ units: UnitRef[] }>('POST', `/v1/models/${segment(model)}/applications`, body);
      session.info(`Deployed "${app}" from charm "${charmName(charm)}" on ${base}\n`);
      await maybeWait(
        session,
        timeoutMs,
        model,
        answer.units.map((u) => u.machine),
      );
    },
  );

  const addUnitCmd = withWait(
    withModel(
      program
        .command('add-unit')
        .description('Adds one or more units to a deployed application.')
        .argument('<application>', 'the application to add units to')
        .option('-n, --num-units <n>', 'number of units to add', count(1), 1)
        .option('--to <placement>', 'placement directives, comma-separated', placements),
    ),
  );
  withDryRun(addUnitCmd).action(
    async (
      app: string,
      opts: ModelOpts & WaitOpts & DryRunOpts & { numUnits: number; to?: string[] },
    ) => {
      const timeoutMs = waitTimeout(opts);
      const model = session.model(opts.model);
      const body: Record<string, unknown> = { count: opts.numUnits };
      if (opts.to) body.to = opts.to;
      const path = `/v1/models/${segment(model)}/applications/${segment(app)}/units`;
      if (opts.dryRun) {
        const planned = await session
          .client()
          .request<{ plan: Plan }>('POST', path, { ...body, dryRun: true });
        printPlan(session, opts.format, planned.plan);
        return;
      }
      const answer = await session.client().request<{
        units: UnitRef[];
      }>('POST', path, body);
      for (const u of answer.units) session.info(`added unit ${u.name} to machine ${u.machine}\n`);
      await maybeWait(
        session,
        timeoutMs,
        model,
        answer.units.map((u) => u.machine),
      );
    },
  );

  withModel(
    program
      .command('remove-unit')
      .description('Removes application units from the model.')
      .argument('<unit...>', 'units to remove, e.g. wordpress/1'),
  ).action(async (units: string[], opts: ModelOpts) => {
    const model = session.model(opts.model);
    // which machine each unit is on, to say when the machine goes with it (Juju's "- will remove machine N")
    const before = await session
      .client()
      .get<Status>(`/v1/models/${segment(model)}/status`)
      .catch((err: unknown) => {
        if (err instanceof CliError) return undefined;
        throw err;
      });
    let failed = 0;
    for (const unit of units) {
      const match = UNIT_NAME.exec(unit);
      if (!match) {
        session.info(`ERROR invalid unit name "${unit}"\n`);
        failed++;
        continue;
      }
      try {
        await session
          .client()
          .request(
            'DELETE',
            `/v1/models/${segment(model)}/units/${segment(match[1]!)}/${match[2]!}`,
          );
        session.info(`will remove unit ${unit}\n`);
        const machine = await machineGoing(session, model, before, match[1]!, unit);
        if (machine !== undefined) session.info(`- will remove machine ${machine}\n`);
      } catch (err) {
        if (!(err instanceof CliError) || units.length === 1) throw err;
        session.info(`ERROR removing unit ${unit} failed: ${err.message}\n`);
        failed++;
      }
    }
    if (failed) throw new CliError(`${failed} of ${units.length} units not removed`);
  });

  withModel(
    program
      .command('remove-application')
      .description('Remove applications from the model.')
      .argument('<application...>', 'applications to remove'),
  ).action(async (apps: string[], opts: ModelOpts) => {
    const model = session.model(opts.model);
    const client = session.client();
    let failed = 0;
    for (const app of apps) {
      try {
        const status = await client.get<Status>(`/v1/models/${segment(model)}/status`);
        await client.request('DELETE', `/v1/models/${segment(model)}/applications/${segment(app)}`);
        session.info(`will remove application ${app}\n`);
        const units = Object.keys(status.applications[app]?.units ?? {}).sort(naturalCompare);
        for (const u of units) session.info(`- will remove unit ${u}\n`);
      } catch (err) {
        if (!(err instanceof CliError) || apps.length === 1) throw err;
        session.info(`ERROR removing application ${app} failed: ${err.message}\n`);
        failed++;
      }
    }
    if (failed) throw new CliError(`${failed} of ${apps.length} applications not removed`);
  });

  withFormat(
    withModel(
      program
        .command('constraints')
        .description('Displays machine constraints for an application.')
        .argument('<application>', 'the application'),
    ),
    ['constraints', 'json', 'yaml'],
    'constraints',
  ).action(async (app: string, opts: ModelOpts & { format: Format | 'constraints' }) => {
    const model = session.model(opts.model);
    const answer = await session
      .client()
      .get<ConstraintsAnswer>(
        `/v1/models/${segment(model)}/applications/${segment(app)}/constraints`,
      );
    constraintsOutput(session, opts.format, answer);
  });

  withModel(
    program
      .command('set-constraints')
      .description('Sets machine constraints for an application.')
      .argument('<application>', 'the application')
      .argument('<constraint...>', 'constraints as key=value, e.g. mem=4G cores=2'),
  ).action(async (app: string, words: string[], opts: ModelOpts) => {
    const model = session.model(opts.model);
    const answer = await session
      .client()
      .request<ConstraintsAnswer>(
        'PUT',
        `/v1/models/${segment(model)}/applications/${segment(app)}/constraints`,
        { constraints: constraintArgs(words) },
      );
    if (answer.unsupported?.length)
      session.info(`WARNING unsupported constraints: ${answer.unsupported.join(',')}\n`);
  });

  withModel(
    program
      .command('integrate')
      .alias('relate')
      .description('Integrate two applications.')
      .argument('<application1[:endpoint]>', 'one side')
      .argument('<application2[:endpoint]>', 'the other side'),
  ).action(async (a: string, b: string, opts: ModelOpts) => {
    const model = session.model(opts.model);
    await session
      .client()
      .request('POST', `/v1/models/${segment(model)}/relations`, { endpoints: [a, b] });
  });
}
