/**
 * Bases (`ubuntu@22.04`), after Juju's core/base: an OS and a channel
 * (`track[/risk]`, risk `stable` by default).
 */
import { BaseMismatchError, InvalidBaseError, PlacementError } from './errors';
import { compareStrings, goQuote } from './text';

export const RISKS = ['stable', 'candidate', 'beta', 'edge'] as const;
export type Risk = (typeof RISKS)[number];

export interface Base {
  /** Lower-case OS name, e.g. `ubuntu`. */
  readonly os: string;
  /** The OS version, e.g. `22.04`. */
  readonly track: string;
  readonly risk: Risk;
}

function isRisk(s: string): s is Risk {
  return (RISKS as readonly string[]).includes(s);
}

/**
 * Parses `os@track[/risk]` (Juju's `ParseBaseFromString`, with
 * `ParseBase`'s lower-casing of the OS and its refusal of an empty OS).
 * Throws `InvalidBaseError` with Juju's messages.
 */
export function parseBase(text: string): Base {
  const parts = text.split('@');
  if (parts.length !== 2) {
    throw new InvalidBaseError("expected base string to contain os and channel separated by '@'");
  }
  const [os = '', channel = ''] = parts;
  if (channel === '') throw new InvalidBaseError('empty channel not valid');
  const segments = channel.split('/');
  if (segments.length > 2) {
    throw new InvalidBaseError(
      `channel is malformed and has too many components ${goQuote(channel)}`,
    );
  }
  const [track = '', risk] = segments;
  if (risk !== undefined && !isRisk(risk)) {
    throw new InvalidBaseError(`risk in channel ${goQuote(channel)} not valid`);
  }
  if (track === '') throw new InvalidBaseError(`track in channel ${goQuote(channel)} not valid`);
  if (os === '') throw new InvalidBaseError('missing base os or channel not valid');
  return { os: os.toLowerCase(), track, risk: risk ?? 'stable' };
}

/**
 * The OS names a request may use: Juju's OS types (core/os/ostype), less
 * `kubernetes`, which names no machine.
 */
export const KNOWN_OS = ['ubuntu', 'centos', 'genericlinux', 'windows', 'osx'] as const;

/** What a track may hold: a release (`22.04`, `22.04-blah`, `all`), never a shell word. */
const TRACK = /^[A-Za-z0-9._-]+$/;

/**
 * A base as a request may give it: it parses (parseBase, as permissive as
 * Juju's own ParseBase), its OS is one Juju knows (`unknown os type "foo"
 * not valid`, Juju's text), and its track holds nothing but
 * `[A-Za-z0-9._-]` (Juju's `track in channel … not valid`); the risk is one
 * of Juju's four already. Every refusal names the base, as Juju's ParseBase
 * does (`parsing base …: …`), quoted so control characters read as escapes.
 * Throws InvalidBaseError (400 bad-request).
 */
export function parseRequestBase(text: string): Base {
  const base = parseBase(text);
  const refuse = (why: string) => new InvalidBaseError(`parsing base ${goQuote(text)}: ${why}`);
  if (!(KNOWN_OS as readonly string[]).includes(base.os)) {
    throw refuse(`unknown os type ${goQuote(base.os)} not valid`);
  }
  if (!TRACK.test(base.track)) {
    throw refuse(`track in channel ${goQuote(text.slice(text.indexOf('@') + 1))} not valid`);
  }
  return base;
}

/** Linux variants share a kernel (Juju's `OSType.IsLinux`). */
function isLinux(os: string): boolean {
  return os === 'ubuntu' || os === 'centos' || os === 'genericlinux';
}

/**
 * A container's base against its host's, as Juju places containers: the
 * track may differ (Juju launches e.g. an `ubuntu@22.04` container on an
 * `ubuntu@24.04` host), but a container shares its host's kernel, so their
 * OS types must be equivalent (Juju's `OSType.EquivalentTo`: the same, or
 * both Linux). Throws BaseMismatchError in Juju's unit-on-machine wording:
 * `base does not match: container has "ubuntu@22.04", machine has "windows@2022"`.
 * The container's own image is checked by `containerImage`.
 */
export function checkContainerOnHostBase(
  containerBase: Base | string,
  hostBase: Base | string,
): void {
  const container = toBase(containerBase);
  const host = toBase(hostBase);
  if (container.os === host.os || (isLinux(container.os) && isLinux(host.os))) return;
  throw new BaseMismatchError(
    `base does not match: container has ${goQuote(baseToString(container))}, machine has ${goQuote(baseToString(host))}`,
  );
}

/** `ubuntu@22.04`, or `ubuntu@22.04/edge` for a risk other than stable (Juju's `DisplayString`). */
export function baseToString(base: Base): string {
  return base.risk === 'stable'
    ? `${base.os}@${base.track}`
    : `${base.os}@${base.track}/${base.risk}`;
}

function toBase(base: Base | string): Base {
  return typeof base === 'string' ? parseBase(base) : base;
}

/** Same OS, track and risk. */
export function basesEqual(a: Base | string, b: Base | string): boolean {
  const x = toBase(a);
  const y = toBase(b);
  return x.os === y.os && x.track === y.track && x.risk === y.risk;
}

/** Same OS and track, whatever the risk (Juju's `IsCompatible`). */
export function isCompatibleBase(a: Base | string, b: Base | string): boolean {
  const x = toBase(a);
  const y = toBase(b);
  return x.os === y.os && x.track === y.track;
}

function compareTracks(a: string, b: string): number {
  // Versions compare numerically part by part (20.04 < 22.04 < 22.10);
  // anything that is not a number compares as text after numbers.
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const nx = /^\d+$/.test(x) ? Number(x) : undefined;
    const ny = /^\d+$/.test(y) ? Number(y) : undefined;
    if (nx !== undefined && ny !== undefined) {
      if (nx !== ny) return nx < ny ? -1 : 1;
    } else if (nx !== undefined) {
      return -1;
    } else if (ny !== undefined) {
      return 1;
    } else if (x !== y) {
      return compareStrings(x, y);
    }
  }
  return 0;
}

/** Orders bases by OS, then version (numerically), then risk (stable first). */
export function compareBases(a: Base | string, b: Base | string): number {
  const x = toBase(a);
  const y = toBase(b);
  if (x.os !== y.os) return compareStrings(x.os, y.os);
  return compareTracks(x.track, y.track) || RISKS.indexOf(x.risk) - RISKS.indexOf(y.risk);
}

const UBUNTU_CODENAMES: Readonly<Record<string, string>> = {
  '20.04': 'focal',
  '22.04': 'jammy',
  '24.04': 'noble',
};

/** The Ubuntu codename of a base (`jammy` for `ubuntu@22.04`), or undefined when unknown. */
export function ubuntuCodename(base: Base | string): string | undefined {
  const b = toBase(base);
  if (b.os !== 'ubuntu' || !Object.hasOwn(UBUNTU_CODENAMES, b.track)) return undefined;
  return UBUNTU_CODENAMES[b.track];
}

/**
 * The name pattern (for DescribeImages' `name` filter) of Canonical's server
 * images for a base and arch (Juju's name: amd64/arm64), e.g. for
 * ubuntu@22.04 and amd64: `ubuntu/images/<*>/ubuntu-jammy-22.04-amd64-server-*`
 * where `<*>` is a literal `*`. Undefined when the base is not an Ubuntu
 * release we know.
 */
export function ubuntuImageNamePattern(base: Base | string, arch: string): string | undefined {
  const b = toBase(base);
  const codename = ubuntuCodename(b);
  if (codename === undefined) return undefined;
  return `ubuntu/images/*/ubuntu-${codename}-${b.track}-${arch}-server-*`;
}

/**
 * Juju's rule for assigning a unit to an existing machine: the bases must be
 * compatible. Throws `BaseMismatchError`:
 * `base does not match: unit has "ubuntu@22.04", machine has "ubuntu@20.04"`.
 */
export function checkUnitOnMachineBase(unitBase: Base | string, machineBase: Base | string): void {
  const unit = toBase(unitBase);
  const machine = toBase(machineBase);
  if (!isCompatibleBase(unit, machine)) {
    throw new BaseMismatchError(
      `base does not match: unit has ${goQuote(baseToString(unit))}, machine has ${goQuote(baseToString(machine))}`,
    );
  }
}

/**
 * Juju's checks before a unit is placed on an existing machine: a
 * subordinate is never placed directly (`PlacementError`
 * `unit is a subordinate`), and the bases must match (`BaseMismatchError`).
 */
export function checkUnitMachineAssignment(args: {
  readonly subordinate: boolean;
  readonly unitBase: Base | string;
  readonly machineBase: Base | string;
}): void {
  if (args.subordinate) throw new PlacementError('unit is a subordinate');
  checkUnitOnMachineBase(args.unitBase, args.machineBase);
}
