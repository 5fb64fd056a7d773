import { SingleBar } from 'cli-progress';
import type { Client } from './client';
import { segment } from './client';
import { formatDuration } from './duration';
import { CliError } from './errors';
import type { Machine, Status } from './types';

/** The progress bar with its leading and trailing space. */
const BAR_COLUMNS = 22;

export interface WaitOptions {
  timeoutMs: number;
  /** Where progress goes (stderr); a terminal gets one live line, anything else plain lines. */
  out: NodeJS.WriteStream | { write(text: string): unknown; isTTY?: boolean; columns?: number };
  pollMs?: number;
  /**
   * Machines just asked to retry, with the error they had: the API answers
   * 202 before the workflow takes the retry up, so until a machine shows
   * another error than that one it counts as pending, not failed again.
   */
  retried?: Map<string, RetriedMachine>;
}

/** A machine's error as it was when a retry was asked for. */
export interface RetriedMachine {
  message: string;
  /** Its `errorCount` then (absent: none reported). */
  errorCount?: number;
}

export interface Progress {
  total: number;
  pending: number;
  allocating: number;
  running: number;
  error: number;
  /** The latest "retrying with new availability zone" or "retrying in" message seen. */
  failover: string;
}

const FAILOVER = /retrying with new availability zone|retrying in /;

/** Where each waited-for machine is: `error` also holds machines down or gone. */
export function tally(ids: string[], status: Status, previousFailover = ''): Progress {
  const p: Progress = {
    total: ids.length,
    pending: 0,
    allocating: 0,
    running: 0,
    error: 0,
    failover: previousFailover,
  };
  for (const id of ids) {
    const m = status.machines[id];
    if (!m || m.status === 'error' || m.status === 'down' || m.status === 'stopping') p.error++;
    else if (m.status === 'running') p.running++;
    else if (m.status === 'allocating') p.allocating++;
    else p.pending++;
    if (m && FAILOVER.test(m.message)) p.failover = m.message;
  }
  return p;
}

export function progressLine(p: Progress): string {
  const counts = `${p.pending} pending, ${p.allocating} allocating, ${p.running} running, ${p.error} error`;
  return `machines ${p.running + p.error}/${p.total} settled: ${counts}`;
}

/**
 * `text` cut to at most `width` characters at a word boundary, with `…` when
 * anything was left out: a terminal's progress line is never cut mid-word.
 */
export function fitWords(text: string, width: number): string {
  if (text.length <= width) return text;
  if (width <= 1) return '';
  const room = text.slice(0, width - 1);
  const space = room.lastIndexOf(' ');
  return `${(space > 0 ? room.slice(0, space) : room).replace(/[\s,;:|(]+$/, '')}…`;
}

/** The terminal's width; cli-progress assumes 200 columns when the stream does not say. */
function terminalWidth(out: { columns?: number }): number {
  return out.columns ?? 200;
}

const EVERY_ZONE = 'every zone tried failed (';
const FAILED_ZONE = /in zone "([^"]+)", retrying with new availability zone/;

/** Zones each machine was seen failing in while waiting, from its failover messages. */
export function noteFailedZones(
  ids: readonly string[],
  status: Status,
  seen: Map<string, string[]>,
): void {
  for (const id of ids) {
    const zone = FAILED_ZONE.exec(status.machines[id]?.message ?? '')?.[1];
    if (zone === undefined) continue;
    const zones = seen.get(id) ?? [];
    if (!zones.includes(zone)) zones.push(zone);
    seen.set(id, zones);
  }
}

/** Containers are recorded, never provisioned here, so waiting for one would never end. */
export function waitable(ids: string[]): string[] {
  return [...new Set(ids)].filter((id) => !id.includes('/'));
}

/**
 * A failed machine's line. The machine's own error names every zone it tried
 * when more than one failed (the workflow records it so). Only for a machine
 * whose error does not (recorded before that), the zones seen failing while
 * polling are named instead: a guess, since a poll may miss a quick failover.
 */
export function failureLine(
  id: string,
  m: Machine | undefined,
  failedZones: string[] = [],
): string {
  if (!m) return `machine ${id} was removed`;
  const message = m.message || m.instanceStatus || 'no message';
  if (m.status === 'error' && failedZones.length > 1 && !message.startsWith(EVERY_ZONE)) {
    const zones = [...failedZones].sort().join(', ');
    return `machine ${id} ${m.status}: every zone tried failed (${zones}); the last: ${message}`;
  }
  return `machine ${id} ${m.status}: ${message}`;
}

/**
 * Whether a machine in error still shows the error it had before the retry.
 * Its `errorCount` says so whenever the API reports one (every new failure
 * adds one, whatever its message: a planning failure repeats its words
 * exactly); only an API without it leaves the message to compare.
 */
function sameError(m: Machine, was: RetriedMachine): boolean {
  if (m.errorCount !== undefined || was.errorCount !== undefined)
    return (m.errorCount ?? 0) === (was.errorCount ?? 0);
  return m.message === was.message;
}

/** A retried machine still showing the error it had is reported pending; once it moves on it is forgotten. */
function withRetriesPending(status: Status, retried: Map<string, RetriedMachine>): Status {
  if (retried.size === 0) return status;
  const machines = { ...status.machines };
  for (const [id, was] of [...retried]) {
    const m = machines[id];
    if (m && m.status === 'error' && sameError(m, was))
      machines[id] = { ...m, status: 'pending', message: 'retry requested' };
    else retried.delete(id);
  }
  return { ...status, machines };
}

/**
 * Polls the model's status until every machine is running or has failed;
 * resolves when all run, throws a CliError listing the failures otherwise
 * (or when the timeout passes first).
 */
export async function waitForMachines(
  client: Client,
  model: string,
  machineIds: string[],
  opts: WaitOptions,
): Promise<void> {
  const ids = waitable(machineIds);
  if (ids.length === 0) return;
  const pollMs = opts.pollMs ?? 1000;
  const deadline = Date.now() + opts.timeoutMs;
  const tty = opts.out.isTTY === true;
  const bar = tty
    ? new SingleBar({
        stream: opts.out as NodeJS.WriteStream,
        format: ' {bar} {line}{failover}',
        barsize: BAR_COLUMNS - 2,
        hideCursor: true,
        clearOnComplete: false,
        linewrap: false,
      })
    : undefined;
  const retried = new Map(opts.retried ?? []);
  const failedZones = new Map<string, string[]>();
  let last = '';
  let lastFailover = '';
  let progress: Progress = {
    total: ids.length,
    pending: ids.length,
    allocating: 0,
    running: 0,
    error: 0,
    failover: '',
  };
  bar?.start(ids.length, 0, {
    line: fitWords(progressLine(progress), terminalWidth(opts.out) - BAR_COLUMNS - 1),
    failover: '',
  });
  // the bar hides the cursor: give it back when the wait is interrupted
  const interrupted = () => {
    bar?.stop();
    process.exit(130);
  };
  if (bar) process.once('SIGINT', interrupted);
  let status: Status;
  try {
    for (;;) {
      status = await client.get<Status>(`/v1/models/${segment(model)}/status`);
      // a retry not yet taken up shows as pending here, in the count and in a timeout alike
      const seen = withRetriesPending(status, retried);
      progress = tally(ids, seen, progress.failover);
      noteFailedZones(ids, status, failedZones);
      const line = progressLine(progress);
      if (bar) {
        // the bar and its margins take 22 columns; the rest is cut between words
        const width = terminalWidth(opts.out) - BAR_COLUMNS - 1;
        bar.update(progress.running + progress.error, {
          line: fitWords(`${line}${progress.failover ? ` | ${progress.failover}` : ''}`, width),
          failover: '',
        });
      } else {
        if (line !== last) opts.out.write(`${line}\n`);
        if (progress.failover && progress.failover !== lastFailover)
          opts.out.write(`  ${progress.failover}\n`);
      }
      last = line;
      lastFailover = progress.failover;
      if (progress.running + progress.error === progress.total) break;
      if (Date.now() >= deadline) {
        const waiting = ids.filter((id) => {
          const s = seen.machines[id]?.status;
          return s === 'pending' || s === 'allocating';
        });
        throw new CliError(
          `timed out after ${formatDuration(opts.timeoutMs)} waiting for machine${waiting.length > 1 ? 's' : ''} ${waiting.join(', ')} to start`,
        );
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
  } finally {
    bar?.stop();
    process.removeListener('SIGINT', interrupted);
  }
  if (progress.error === 0) {
    opts.out.write(
      `${progress.total} machine${progress.total > 1 ? 's' : ''} running (${ids.join(', ')})\n`,
    );
    return;
  }
  const failures = ids
    .filter((id) => status.machines[id]?.status !== 'running')
    .map((id) => failureLine(id, status.machines[id], failedZones.get(id)));
  throw new CliError(
    `${progress.error} of ${progress.total} machines failed to start:\n${failures.map((f) => `  ${f}`).join('\n')}`,
  );
}
