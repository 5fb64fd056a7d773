/**
 * Containers on their hosts (issue 15): what is run on a host to create or
 * delete a container with LXD, through SSM Run Command's
 * `AWS-RunShellScript`. Pure: the activities send these lines, the tests
 * assert them (they are exactly what a real host runs).
 */
import { parseRequestBase } from './base';
import { InvalidBaseError } from './errors';
import { goQuote } from './text';

/** The SSM document every container command is sent with. */
export const RUN_SHELL_SCRIPT = 'AWS-RunShellScript';

/** LXD's instance names: at most 63 characters, letters, digits and hyphens, starting with a letter. */
const LXD_NAME_MAX = 63;

/**
 * The LXD name of a container machine, after Juju's
 * `juju-<model uuid tail>-<machine id with / as ->` (`juju-4f2a9c-0-lxd-1`):
 * unique per model (a model re-created under the same name has another uid)
 * and the same every time it is derived, so a command run twice acts on the
 * same container.
 */
export function containerName(args: {
  model: string;
  modelUid?: string;
  machineId: string;
}): string {
  const scope = args.modelUid ? args.modelUid.replace(/[^a-z0-9]/gi, '').slice(-6) : args.model;
  const name = `juju-${scope}-${args.machineId.replaceAll('/', '-')}`.toLowerCase();
  return name.length <= LXD_NAME_MAX ? name : name.slice(0, LXD_NAME_MAX).replace(/-+$/, '');
}

/**
 * The image a container is launched from: its own base's release on LXD's
 * `ubuntu:` remote (`ubuntu@22.04` → `ubuntu:22.04`). Only Ubuntu bases have
 * one; another OS, or a base a request could not have given (its track is
 * checked again here, so a record written before that check never reaches a
 * shell), is refused with InvalidBaseError.
 */
export function containerImage(base: string): string {
  const parsed = parseRequestBase(base);
  if (parsed.os !== 'ubuntu') {
    throw new InvalidBaseError(
      `no LXD image for base ${goQuote(base)} (only ubuntu bases are supported)`,
    );
  }
  return `ubuntu:${parsed.track}`;
}

/**
 * One shell word, whatever it holds: in single quotes, each `'` written as
 * `'\''` (close, an escaped quote, reopen). Nothing inside single quotes is
 * special to a POSIX shell, so no value can end the word or start a command.
 */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * LXD is initialised once per host, whichever container gets there first:
 * under a lock, and only while it has no storage pool yet (`lxd init --auto`
 * on an initialised host would fail). Ubuntu images ship LXD (a snap, or the
 * installer that fetches it on first use).
 */
const INIT_LXD: readonly string[] = [
  'set -eu',
  'command -v lxc >/dev/null 2>&1 || snap install lxd',
  'flock /run/provisioner-lxd-init.lock sh -c \'[ -n "$(lxc storage list --format csv 2>/dev/null)" ] || lxd init --auto\'',
];

/**
 * Creates the container unless it exists (running it twice launches once).
 * Every argument that comes from a record is quoted (shellQuote); the
 * other words are this file's own literals.
 */
export function createContainerScript(name: string, image: string): string[] {
  const n = shellQuote(name);
  return [...INIT_LXD, `lxc info ${n} >/dev/null 2>&1 || lxc launch ${shellQuote(image)} ${n}`];
}

/** Deletes the container if it exists (running it twice, or on a host without it, succeeds). */
export function deleteContainerScript(name: string): string[] {
  const n = shellQuote(name);
  return [
    'set -eu',
    'command -v lxc >/dev/null 2>&1 || exit 0',
    `if lxc info ${n} >/dev/null 2>&1; then lxc delete --force ${n}; fi`,
  ];
}

/** Run Command's final invocation states (everything else is still on its way). */
const FINAL_STATUSES: ReadonlySet<string> = new Set([
  'Success',
  'Failed',
  'Cancelled',
  'TimedOut',
  'DeliveryTimedOut',
  'ExecutionTimedOut',
  'Undeliverable',
  'Terminated',
  'InvalidPlatform',
  'AccessDenied',
]);

export function isFinalCommandStatus(status: string): boolean {
  return FINAL_STATUSES.has(status);
}

/** The last lines of a command's output, short enough for a status message. */
export function outputTail(output: string, maxLines = 5, maxChars = 400): string {
  const lines = output
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
  const tail = lines.slice(-maxLines).join('\n');
  return tail.length <= maxChars ? tail : `…${tail.slice(tail.length - maxChars + 1)}`;
}
