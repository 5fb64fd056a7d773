import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of the stack's processes, read from `/proc` (Linux): wall-clock
 * figures move with whatever else the machine runs, CPU seconds spent by
 * each process do not. A process is counted with its whole process group
 * (each of the stack's processes leads one: a JVM's or Python's helpers
 * count with it), live members' user + system time plus what the leader
 * collected of children that ended.
 */

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ: 100 on Linux everywhere). */
const TICKS_PER_SECOND = 100;

interface StatFields {
  pgrp: number;
  /** utime + stime, ticks. */
  own: number;
  /** cutime + cstime, ticks. */
  children: number;
}

/** Fields of `/proc/<pid>/stat`; the command may hold spaces and parentheses, so split after its last `)`. */
export function parseStat(text: string): StatFields | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  // fields from the 3rd (state) on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  const n = (i: number) => Number(f[i] ?? NaN);
  const pgrp = n(2);
  const utime = n(11);
  const stime = n(12);
  const cutime = n(13);
  const cstime = n(14);
  if (![pgrp, utime, stime, cutime, cstime].every(Number.isFinite)) return undefined;
  return { pgrp, own: utime + stime, children: cutime + cstime };
}

function readStat(pid: number | string): StatFields | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** CPU seconds used so far by the process group `leader` leads; undefined when it is gone or /proc is not there. */
export function groupCpuSeconds(leader: number | undefined): number | undefined {
  if (leader === undefined) return undefined;
  const head = readStat(leader);
  if (!head) return undefined;
  let ticks = head.children;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const s: StatFields | undefined = name === String(leader) ? head : readStat(name);
    if (s && s.pgrp === leader) ticks += s.own;
  }
  return ticks / TICKS_PER_SECOND;
}

/** CPU seconds of this very process (user + system). */
export function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** CPU seconds per named process between two readings (a process missing from either is left out). */
export function cpuSince(
  before: Record<string, number | undefined>,
  after: Record<string, number | undefined>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, end] of Object.entries(after)) {
    const start = before[name];
    if (start !== undefined && end !== undefined) out[name] = Math.max(0, end - start);
  }
  return out;
}
