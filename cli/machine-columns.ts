import { shortAgo } from './ago';
import type { Machine } from './types';

/** `ssh:ubuntu@10.0.0.5` → `10.0.0.5`; undefined for anything else. */
export function manualHost(m: Pick<Machine, 'placement'>): string | undefined {
  const p = m.placement;
  if (!p?.startsWith('ssh:')) return undefined;
  const target = p.slice('ssh:'.length);
  return target.slice(target.lastIndexOf('@') + 1) || undefined;
}

/** The Address column: the public address when there is one (Juju's preferred), else the private. */
export function machineAddress(m: Machine): string {
  return m.publicAddress ?? m.privateAddress ?? manualHost(m) ?? '';
}

/** The Inst id column; a manual machine is `manual:<host>`, as Juju shows it. */
export function instanceIdCell(m: Machine): string {
  const host = manualHost(m);
  if (host !== undefined) return `manual:${host}`;
  return m.instanceId ?? '';
}

/**
 * EC2 states that move on by themselves: the recorded one may be stale
 * (the sweep looks once a minute), so its age is shown.
 */
const TRANSITIONAL = new Set(['pending', 'stopping', 'shutting-down']);

/**
 * The Message column: the machine's message; else, for a manual machine,
 * what it is; else EC2's state of its instance as last recorded. A state
 * that moves on by itself (`pending`) says how old it is, since the sweep
 * records the next one up to a minute later; `running`, `stopped` and the
 * rest are what the last sweep saw, and it writes any change it sees.
 */
export function machineMessage(m: Machine, now?: Date): string {
  if (m.message) return m.message;
  if (manualHost(m) !== undefined) return 'manually provisioned';
  const state = m.instanceStatus;
  if (!state) return '';
  if (now && m.instanceStatusAt && TRANSITIONAL.has(state)) {
    const ago = shortAgo(m.instanceStatusAt, now);
    if (ago) return `${state} (${ago})`;
  }
  return state;
}
