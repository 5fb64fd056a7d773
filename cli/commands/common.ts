import { Option, type Command } from 'commander';
import { stringify } from 'yaml';
import type { Session } from '../context';
import { parseDuration } from '../duration';
import { UsageError } from '../errors';
import { waitForMachines, type RetriedMachine } from '../wait';

export interface ModelOpts {
  model?: string;
}

export interface WaitOpts {
  wait?: boolean;
  timeout: string;
}

export type Format = 'tabular' | 'json' | 'yaml';

export function withModel(cmd: Command): Command {
  return cmd.option('-m, --model <model>', 'model to operate in (default: the current model)');
}

export function withFormat(cmd: Command, formats: string[], fallback: string): Command {
  return cmd.addOption(
    new Option('--format <format>', 'output format').choices(formats).default(fallback),
  );
}

export function withWait(cmd: Command): Command {
  return cmd
    .option('--wait', 'wait until every new machine is running or has failed')
    .option('--timeout <duration>', 'how long --wait waits (e.g. 90s, 10m)', '10m');
}

/** `-n`: a whole number of at least `min`. */
export function count(min: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min)
      throw new UsageError(
        `invalid value "${value}" for option -n: must be a number ${min} or more`,
      );
    return Number(value);
  };
}

/** `--to 0,lxd:1,zone=us-east-1a`: Juju's comma-separated placement directives. */
export function placements(value: string): string[] {
  const list = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (list.length === 0) throw new UsageError('--to needs at least one placement directive');
  return list;
}

/** `key=value` words joined as one constraints string (`set-constraints app mem=4G cores=2`). */
export function constraintArgs(words: string[]): string {
  return words.join(' ');
}

export function printStructured(session: Session, format: Format, value: unknown): void {
  if (format === 'json') session.out(`${JSON.stringify(value)}\n`);
  else session.out(stringify(value));
}

/** The --wait timeout, read before anything is asked of the API so a bad value changes nothing. */
export function waitTimeout(opts: WaitOpts): number | undefined {
  return opts.wait ? parseDuration(opts.timeout, '--timeout') : undefined;
}

export async function maybeWait(
  session: Session,
  timeoutMs: number | undefined,
  model: string,
  machineIds: string[],
  retried?: Map<string, RetriedMachine>,
): Promise<void> {
  if (timeoutMs === undefined) return;
  await waitForMachines(session.client(), model, machineIds, {
    timeoutMs,
    out: session.ctx.stderr,
    ...(retried ? { retried } : {}),
  });
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
