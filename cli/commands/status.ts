import type { Command } from 'commander';
import { stringify } from 'yaml';
import { segment } from '../client';
import type { Session } from '../context';
import { parseDuration } from '../duration';
import { CliError } from '../errors';
import { filterStatus, formatStatusTabular } from '../status';
import type { Status } from '../types';
import { withFormat, withModel, type Format, type ModelOpts } from './common';

const CLEAR_SCREEN = '\x1b[H\x1b[2J';

export function registerStatusCommand(program: Command, session: Session): void {
  withFormat(
    withModel(
      program
        .command('status')
        .description('Report the status of the model, its machines, applications and units.')
        .argument('[filter...]', 'applications, units or machines to show')
        .option(
          '--watch <interval>',
          'redraw the status every interval (e.g. 2s) until interrupted',
        )
        .option('--color', 'use ANSI color codes in tabular output, even when not on a terminal')
        .option('--no-color', 'disable ANSI color codes in tabular output'),
    ),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(
    async (
      filters: string[],
      opts: ModelOpts & { format: Format; watch?: string; color?: boolean },
    ) => {
      const intervalMs =
        opts.watch === undefined ? undefined : parseDuration(opts.watch, '--watch');
      const model = session.model(opts.model);
      const render = async (): Promise<string> => {
        const status = filterStatus(
          await session.client().get<Status>(`/v1/models/${segment(model)}/status`),
          filters,
        );
        if (opts.format === 'json') return `${JSON.stringify(status)}\n`;
        if (opts.format === 'yaml') return stringify(status);
        return formatStatusTabular(status, {
          colours: session.colours(opts.color),
          now: session.ctx.now(),
        });
      };
      if (intervalMs === undefined) {
        session.out(await render());
        return;
      }
      const tty = session.ctx.stdout.isTTY === true;
      for (let first = true; ; first = false) {
        let text: string;
        try {
          text = await render();
        } catch (err) {
          if (!(err instanceof CliError)) throw err;
          text = `ERROR ${err.message}\n`;
        }
        session.out(tty ? `${CLEAR_SCREEN}${text}` : `${first ? '' : '\n'}${text}`);
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    },
  );
}
