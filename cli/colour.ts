import picocolors from 'picocolors';
import type { Env } from './config';

export type Colours = ReturnType<typeof picocolors.createColors>;

/**
 * Colour only for a terminal: never when piped, never with `NO_COLOR` set
 * (no-color.org), never on a dumb terminal; `FORCE_COLOR` turns it on.
 */
export function colourEnabled(stream: { isTTY?: boolean }, env: Env = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

export function colours(enabled: boolean): Colours {
  return picocolors.createColors(enabled);
}

const GOOD = new Set(['running', 'started', 'active', 'idle', 'deployed']);
const WARN = new Set(['pending', 'allocating', 'waiting', 'maintenance', 'stopping', 'dying']);
const BAD = new Set(['error', 'down', 'blocked', 'lost', 'unknown', 'terminated']);

/** A status word in Juju's colours: green when well, yellow on the way, red when wrong. */
export function paintStatus(c: Colours, status: string): string {
  if (GOOD.has(status)) return c.green(status);
  if (WARN.has(status)) return c.yellow(status);
  if (BAD.has(status)) return c.red(status);
  return status;
}
