import { printPlan, withDryRun, type DryRunOpts, type Plan } from '../plan';
import type { Command } from 'commander';
import { segment } from '../client';
import type { Session } from '../context';
import { CliError, UsageError } from '../errors';
import { formatMachineTable, machineIdCompare } from '../status';
import type { Machine, Status } from '../types';
import {
  count,
  maybeWait,
  printStructured,
  waitTimeout,
  withFormat,
  withModel,
  withWait,
  type Format,
  type ModelOpts,
  type WaitOpts,
} from './common';

const MACHINE_ID = /^\d+(\/lxd\/\d+)?$/;

function checkMachineId(id: string): void {
  if (!MACHINE_ID.test(id)) throw new UsageError(`invalid machine id "${id}"`);
}

/**
 * Runs one request per machine, as Juju does for several ids: each failure is
 * printed and the rest go on; any failure makes the exit code non-zero.
 */
async function eachMachine(
  session: Session,
  ids: string[],
  verb: string,
  run: (id: string) => Promise<void>,
): Promise<string[]> {
  const done: string[] = [];
  const failures: string[] = [];
  for (const id of ids) {
    try {
      checkMachineId(id);
      await run(id);
      done.push(id);
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      if (ids.length === 1) throw err;
      session.info(`ERROR ${err.message}\n`);
      failures.push(id);
    }
  }
  if (failures.length)
    throw new CliError(
      `could not ${verb} machine${failures.length > 1 ? 's' : ''} ${failures.join(', ')}`,
    );
  return done;
}

export function registerMachineCommands(program: Command, session: Session): void {
  const addMachineCmd = withWait(
    withModel(
      program
        .command('add-machine')
        .description('Provision a new machine or assign one to the model.')
        .argument('[placement]', 'lxd, lxd:N, zone=<zone>, subnet=<subnet> or ssh:[user@]host')
        .option('-n <n>', 'the number of machines to add', count(1), 1)
        .option('--base <base>', 'the base for the new machine (default: ubuntu@24.04)')
        .option('--constraints <constraints>', 'machine constraints, e.g. "mem=4G cores=2"'),
    ),
  );
  withDryRun(addMachineCmd).action(
    async (
      placement: string | undefined,
      opts: ModelOpts & WaitOpts & DryRunOpts & { n: number; base?: string; constraints?: string },
    ) => {
      const timeoutMs = waitTimeout(opts);
      const model = session.model(opts.model);
      const body: Record<string, unknown> = {};
      if (opts.n !== 1) body.count = opts.n;
      if (opts.base !== undefined) body.base = opts.base;
      if (opts.constraints !== undefined) body.constraints = opts.constraints;
      if (placement !== undefined) body.placement = placement;
      if (opts.dryRun) {
        const planned = await session.client().request<{
          plan: Plan;
        }>('POST', `/v1/models/${segment(model)}/machines`, { ...body, dryRun: true });
        printPlan(session, opts.format, planned.plan);
        return;
      }
      const { machines } = await session
        .client()
        .request<{ machines: { id: string }[] }>(
          'POST',
          `/v1/models/${segment(model)}/machines`,
          body,
        );
      for (const m of machines)
        session.info(
          m.id.includes('/') ? `created container ${m.id}\n` : `created machine ${m.id}\n`,
        );
      await maybeWait(
        session,
        timeoutMs,
        model,
        machines.map((m) => m.id),
      );
    },
  );

  withModel(
    program
      .command('remove-machine')
      .description('Removes one or more machines from a model.')
      .argument('<machine...>', 'machine ids')
      .option('--force', 'remove the machine even if it has units or containers'),
  ).action(async (ids: string[], opts: ModelOpts & { force?: boolean }) => {
    const model = session.model(opts.model);
    await eachMachine(session, ids, 'remove', async (id) => {
      await session
        .client()
        .request(
          'DELETE',
          `/v1/models/${segment(model)}/machines/${segment(id)}${opts.force ? '?force=true' : ''}`,
        );
      session.info(`will remove machine ${id}\n`);
    });
  });

  withWait(
    withModel(
      program
        .command('retry-provisioning')
        .description('Retries provisioning for failed machines.')
        .argument('[machine...]', 'machine ids')
        .option('--all', 'retry every machine in an error state')
        .option('--constraints <constraints>', 'replace the machines\u2019 constraints first'),
    ),
  ).action(
    async (ids: string[], opts: ModelOpts & WaitOpts & { all?: boolean; constraints?: string }) => {
      const timeoutMs = waitTimeout(opts);
      if (opts.all && ids.length) throw new UsageError('specify machines or --all, not both');
      if (!opts.all && ids.length === 0)
        throw new UsageError('no machine specified: give machine ids or --all');
      const model = session.model(opts.model);
      const client = session.client();
      let targets = ids;
      // the errors machines have now, to tell a retry not yet taken up from a new failure
      const before =
        opts.all || timeoutMs !== undefined
          ? await client.get<Status>(`/v1/models/${segment(model)}/status`)
          : undefined;
      if (opts.all) {
        targets = Object.values(before!.machines)
          .filter((m) => m.status === 'error')
          .map((m) => m.id)
          .sort(machineIdCompare);
        if (targets.length === 0) {
          session.info('no machines in an error state\n');
          return;
        }
      }
      const body = opts.constraints !== undefined ? { constraints: opts.constraints } : {};
      const retried = await eachMachine(session, targets, 'retry', async (id) => {
        await client.request(
          'POST',
          `/v1/models/${segment(model)}/machines/${segment(id)}/retry`,
          body,
        );
        session.info(`retrying provisioning of machine ${id}\n`);
      });
      await maybeWait(
        session,
        timeoutMs,
        model,
        retried,
        new Map(
          retried.map((id) => {
            const was = before?.machines[id];
            return [
              id,
              {
                message: was?.message ?? '',
                ...(was?.errorCount !== undefined ? { errorCount: was.errorCount } : {}),
              },
            ];
          }),
        ),
      );
    },
  );

  withModel(
    program
      .command('reprovision-machine')
      .description('Gives a machine whose instance is gone a new instance, keeping its units.')
      .argument('<machine...>', 'machine ids'),
  ).action(async (ids: string[], opts: ModelOpts) => {
    const model = session.model(opts.model);
    await eachMachine(session, ids, 'reprovision', async (id) => {
      await session
        .client()
        .request('POST', `/v1/models/${segment(model)}/machines/${segment(id)}/reprovision`);
      session.info(`reprovisioning machine ${id}\n`);
    });
  });

  withFormat(
    withModel(
      program
        .command('show-machine')
        .description('Show a machine\u2019s status.')
        .argument('<machine...>', 'machine ids'),
    ),
    ['yaml', 'json', 'tabular'],
    'yaml',
  ).action(async (ids: string[], opts: ModelOpts & { format: Format }) => {
    const model = session.model(opts.model);
    const machines: Machine[] = [];
    for (const id of ids) {
      checkMachineId(id);
      machines.push(
        await session.client().get<Machine>(`/v1/models/${segment(model)}/machines/${segment(id)}`),
      );
    }
    if (opts.format === 'tabular') {
      session.out(
        `${formatMachineTable(machines, session.colours(), { price: true, now: session.ctx.now() })}\n`,
      );
      return;
    }
    printStructured(session, opts.format, {
      model,
      machines: Object.fromEntries(machines.map((m) => [m.id, m])),
    });
  });
}
