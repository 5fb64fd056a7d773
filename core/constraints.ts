/**
 * Juju's constraints language (core/constraints): a plain-data value, a
 * parser and its lossless canonical string form.
 *
 * A key that is absent (undefined) is unset and takes its value from a
 * fallback when merged. A key that is present is set, even when it holds the
 * default: `key=` parses to `''` for text keys, `0` for numeric keys and `[]`
 * for list keys, and it overrides fallbacks. For numeric keys `key=` and
 * `key=0` are the same value, as in Juju; both print as `key=`.
 * `allocate-public-ip=` sets nothing, as in Juju.
 */
import { isSupportedArch } from './arch';
import { ConstraintsError } from './errors';
import { goQuote, goTrimSpace } from './text';

/** Constraint keys in Juju's canonical order (the order of `String()`). */
export const CONSTRAINT_KEYS = [
  'arch',
  'container',
  'cores',
  'cpu-power',
  'instance-role',
  'instance-type',
  'mem',
  'root-disk',
  'root-disk-source',
  'tags',
  'spaces',
  'virt-type',
  'zones',
  'allocate-public-ip',
  'image-id',
] as const;

export type ConstraintKey = (typeof CONSTRAINT_KEYS)[number];

/** Aliases accepted by the parser. */
export const CONSTRAINT_ALIASES: Readonly<Record<string, ConstraintKey>> = { 'cpu-cores': 'cores' };

/** Container types a `container` constraint accepts (besides the empty default). */
export const CONTAINER_TYPES = ['lxd'] as const;

/**
 * A constraints value. Sizes (`mem`, `rootDisk`) are MiB; `cores` counts
 * vCPUs; `cpuPower` is in Juju's units (100 = one 2007 Xeon core).
 */
export interface Constraints {
  readonly arch?: string;
  readonly container?: string;
  readonly cores?: number;
  readonly cpuPower?: number;
  readonly instanceRole?: string;
  readonly instanceType?: string;
  readonly mem?: number;
  readonly rootDisk?: number;
  readonly rootDiskSource?: string;
  readonly tags?: readonly string[];
  readonly spaces?: readonly string[];
  readonly virtType?: string;
  readonly zones?: readonly string[];
  readonly allocatePublicIp?: boolean;
  readonly imageId?: string;
}

/** The value a constraint key holds. */
export type ConstraintValue = string | number | boolean | readonly string[];

type Kind = 'text' | 'count' | 'size' | 'list' | 'bool';

interface KeySpec {
  readonly field: keyof Constraints;
  readonly kind: Kind;
}

const SPECS: Readonly<Record<ConstraintKey, KeySpec>> = {
  arch: { field: 'arch', kind: 'text' },
  container: { field: 'container', kind: 'text' },
  cores: { field: 'cores', kind: 'count' },
  'cpu-power': { field: 'cpuPower', kind: 'count' },
  'instance-role': { field: 'instanceRole', kind: 'text' },
  'instance-type': { field: 'instanceType', kind: 'text' },
  mem: { field: 'mem', kind: 'size' },
  'root-disk': { field: 'rootDisk', kind: 'size' },
  'root-disk-source': { field: 'rootDiskSource', kind: 'text' },
  tags: { field: 'tags', kind: 'list' },
  spaces: { field: 'spaces', kind: 'list' },
  'virt-type': { field: 'virtType', kind: 'text' },
  zones: { field: 'zones', kind: 'list' },
  'allocate-public-ip': { field: 'allocatePublicIp', kind: 'bool' },
  'image-id': { field: 'imageId', kind: 'text' },
};

/** The `Constraints` field that holds a key. */
export function constraintField(key: ConstraintKey): keyof Constraints {
  return SPECS[key].field;
}

export function isConstraintKey(name: string): name is ConstraintKey {
  return Object.hasOwn(SPECS, name);
}

/** Resolves an alias (`cpu-cores`) to its key; other names are returned unchanged. */
export function resolveConstraintAlias(name: string): string {
  return Object.hasOwn(CONSTRAINT_ALIASES, name) ? (CONSTRAINT_ALIASES[name] ?? name) : name;
}

/** The value a key holds in `c`, or undefined when the key is unset. */
export function constraintValue(c: Constraints, key: ConstraintKey): ConstraintValue | undefined {
  return c[SPECS[key].field];
}

/** The keys set in `c` (present, even when holding the default), in canonical order. */
export function setConstraintKeys(c: Constraints): ConstraintKey[] {
  return CONSTRAINT_KEYS.filter((key) => constraintValue(c, key) !== undefined);
}

/**
 * Builds a value from key/value pairs, in canonical field order (so equal
 * values serialise identically). Values must be of the key's type.
 */
export function constraintsFromEntries(
  entries: Iterable<readonly [ConstraintKey, ConstraintValue]>,
): Constraints {
  const byKey = new Map(entries);
  const out: Record<string, ConstraintValue> = {};
  for (const key of CONSTRAINT_KEYS) {
    const value = byKey.get(key);
    if (value === undefined) continue;
    out[SPECS[key].field] = typeof value === 'object' ? value.slice() : value;
  }
  return out;
}

/** Juju's `Without`: a copy of `c` with the given keys unset. */
export function withoutConstraints(c: Constraints, keys: Iterable<string>): Constraints {
  const drop = new Set(Array.from(keys, resolveConstraintAlias));
  return constraintsFromEntries(
    setConstraintKeys(c)
      .filter((key) => !drop.has(key))
      .map((key) => [key, constraintValue(c, key) as ConstraintValue] as const),
  );
}

/** Juju's `HasAny`: those of `keys` (aliases allowed) that are set in `c`, in the order given. */
export function hasAnyConstraints(c: Constraints, keys: Iterable<string>): string[] {
  return Array.from(keys).filter((name) => {
    const key = resolveConstraintAlias(name);
    return isConstraintKey(key) && constraintValue(c, key) !== undefined;
  });
}

/** True when `c` sets nothing (Juju's `IsEmpty`: its string form is empty). */
export function isEmptyConstraints(c: Constraints): boolean {
  return constraintsToString(c) === '';
}

/** True when `arch` is set to a real architecture, not the default. */
export function hasArch(c: Constraints): boolean {
  return c.arch !== undefined && c.arch !== '';
}

/** True when `instance-type` names a type, not the default. */
export function hasInstanceType(c: Constraints): boolean {
  return c.instanceType !== undefined && c.instanceType !== '';
}

/** True when `zones` lists at least one zone. */
export function hasZones(c: Constraints): boolean {
  return c.zones !== undefined && c.zones.length > 0;
}

/** True when `container` names a container type (not empty, not `none`). */
export function hasContainer(c: Constraints): boolean {
  return c.container !== undefined && c.container !== '' && c.container !== 'none';
}

/** Spaces a machine must be in (`spaces` entries without `^`). */
export function includedSpaces(c: Constraints): string[] {
  return (c.spaces ?? []).filter((s) => !s.startsWith('^'));
}

/** Spaces a machine must not be in (`spaces` entries with `^`, which is removed). */
export function excludedSpaces(c: Constraints): string[] {
  return (c.spaces ?? []).filter((s) => s.startsWith('^')).map((s) => s.slice(1));
}

// ---------------------------------------------------------------------------
// String form

function formatValue(key: ConstraintKey, value: ConstraintValue): string {
  const kind = SPECS[key].kind;
  if (kind === 'count' || kind === 'size') {
    const n = value as number;
    if (n === 0) return '';
    return kind === 'size' ? `${n}M` : `${n}`;
  }
  if (kind === 'bool') return value ? 'true' : 'false';
  if (kind === 'list') return (value as readonly string[]).join(',');
  return value as string;
}

/**
 * Juju's `String()`: `key=value` pairs in canonical key order, sizes in MiB
 * with an `M` suffix, zero and empty values as `key=`, spaces escaped as `\ `.
 * `parseConstraints(constraintsToString(c))` deep-equals `c` for every value
 * `parseConstraints` can return.
 */
export function constraintsToString(c: Constraints): string {
  const parts: string[] = [];
  for (const key of CONSTRAINT_KEYS) {
    const value = constraintValue(c, key);
    if (value === undefined) continue;
    parts.push(`${key}=${formatValue(key, value)}`.replaceAll(' ', '\\ '));
  }
  return parts.join(' ');
}

// ---------------------------------------------------------------------------
// Parsing

const SIZE_MULTIPLIERS: Readonly<Record<string, number>> = {
  M: 1,
  G: 1024,
  T: 1024 * 1024,
  P: 1024 * 1024 * 1024,
};

/** A value a key cannot hold; becomes `bad "key" constraint: <message>`. */
class BadValue extends Error {}

const NON_NEGATIVE_INTEGER = 'must be a non-negative integer';
const NON_NEGATIVE_SIZE = 'must be a non-negative float with optional M/G/T/P suffix';

// Go's strconv.ParseFloat syntax: decimal or hexadecimal (with a mandatory
// binary exponent), underscores only between digits (or after a 0x prefix).
const DECIMAL_FLOAT =
  /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const HEX_FLOAT =
  /^([+-]?)0[xX]_?(?:([0-9a-fA-F](?:_?[0-9a-fA-F])*)(?:\.((?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?))?|\.([0-9a-fA-F](?:_?[0-9a-fA-F])*))[pP]([+-]?\d(?:_?\d)*)$/;
const GO_SPECIAL_FLOAT = /^(?:[+-]?(?:inf|infinity)|nan)$/i;

/**
 * Go's strconv.ParseFloat(s, 64), returning undefined where Go returns an
 * error (bad syntax, or out of range). Infinities and NaN, which Go accepts,
 * are returned as such.
 */
function parseGoFloat(s: string): number | undefined {
  if (GO_SPECIAL_FLOAT.test(s)) {
    if (/nan/i.test(s)) return NaN;
    return s.startsWith('-') ? -Infinity : Infinity;
  }
  if (DECIMAL_FLOAT.test(s)) {
    const value = Number(s.replaceAll('_', ''));
    return Number.isFinite(value) ? value : undefined;
  }
  const hex = HEX_FLOAT.exec(s);
  if (hex === null) return undefined;
  const [, sign = '', whole, fraction, onlyFraction, exponent = '0'] = hex;
  const intDigits = (whole ?? '').replaceAll('_', '');
  const fracDigits = (fraction ?? onlyFraction ?? '').replaceAll('_', '');
  const mantissa = BigInt('0x0' + intDigits + fracDigits);
  const magnitude =
    mantissa === 0n
      ? 0
      : Number(mantissa) * 2 ** (Number(exponent.replaceAll('_', '')) - 4 * fracDigits.length);
  if (Number.isNaN(magnitude) || !Number.isFinite(magnitude)) return undefined;
  return sign === '-' ? -magnitude : magnitude;
}

function parseCount(text: string): number {
  if (text === '') return 0;
  // Go's strconv.ParseUint(s, 10, 64): digits only. Values beyond 2^53 cannot
  // be held exactly here, so they are refused like values beyond 2^64 in Juju.
  if (!/^\d+$/.test(text)) throw new BadValue(NON_NEGATIVE_INTEGER);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new BadValue(NON_NEGATIVE_INTEGER);
  return value;
}

function parseSize(text: string): number {
  if (text === '') return 0;
  let number = text;
  let multiplier = 1;
  const suffix = text.slice(-1);
  if (Object.hasOwn(SIZE_MULTIPLIERS, suffix)) {
    number = text.slice(0, -1);
    multiplier = SIZE_MULTIPLIERS[suffix] ?? 1;
  }
  const value = parseGoFloat(number);
  if (value === undefined || value < 0) throw new BadValue(NON_NEGATIVE_SIZE);
  // Juju turns NaN, infinities and sizes beyond 2^64 into garbage; refuse them.
  const mib = Math.ceil(value * multiplier);
  if (!Number.isSafeInteger(mib)) throw new BadValue(NON_NEGATIVE_SIZE);
  return mib === 0 ? 0 : mib; // no -0
}

const GO_BOOLS: Readonly<Record<string, boolean>> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

function parseBool(text: string): boolean {
  if (!Object.hasOwn(GO_BOOLS, text)) throw new BadValue("must be 'true' or 'false'");
  return GO_BOOLS[text] ?? false;
}

// names.IsValidSpace
const SPACE_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

function parseList(text: string): string[] {
  return text === '' ? [] : text.split(',');
}

function parseSpaces(text: string): string[] {
  const spaces = parseList(text);
  for (const entry of spaces) {
    const name = entry.startsWith('^') ? entry.slice(1) : entry;
    if (!SPACE_NAME.test(name)) throw new BadValue(`${goQuote(name)} is not a valid space name`);
  }
  return spaces;
}

// Keys whose value is free text, which the string form writes back verbatim.
const FREE_TEXT_KEYS: ReadonlySet<ConstraintKey> = new Set<ConstraintKey>([
  'instance-role',
  'instance-type',
  'root-disk-source',
  'tags',
  'virt-type',
  'zones',
  'image-id',
]);

function parseValue(key: ConstraintKey, text: string): ConstraintValue {
  // Deviation from Juju: a value ending in a backslash would swallow the
  // separator after it in the string form (`a\ b=…`), so the string form
  // could not be parsed back. Juju accepts it; we refuse it.
  if (FREE_TEXT_KEYS.has(key) && text.endsWith('\\')) {
    throw new BadValue('must not end with a backslash');
  }
  switch (key) {
    case 'arch':
      if (text !== '' && !isSupportedArch(text))
        throw new BadValue(`${goQuote(text)} not recognized`);
      return text;
    case 'container':
      if (
        text !== '' &&
        text !== 'none' &&
        !(CONTAINER_TYPES as readonly string[]).includes(text)
      ) {
        throw new BadValue(`invalid container type ${goQuote(text)}`);
      }
      return text;
    case 'cores':
    case 'cpu-power':
      return parseCount(text);
    case 'mem':
    case 'root-disk':
      return parseSize(text);
    case 'tags':
    case 'zones':
      return parseList(text);
    case 'spaces':
      return parseSpaces(text);
    case 'allocate-public-ip':
      return parseBool(text);
    default:
      return text;
  }
}

/**
 * Juju's `Parse`: each argument holds space-separated `key=value` pairs
 * (`\ ` is a space inside a value); a key may be set once across all of them.
 * Throws `ConstraintsError` with Juju's messages.
 */
export function parseConstraints(...texts: string[]): Constraints {
  const values = new Map<ConstraintKey, ConstraintValue>();
  for (const text of texts) {
    // As Juju: escaped spaces become NULs, the text is split on plain spaces,
    // and NULs (escaped or literal) become spaces again in each item.
    const items = text.replaceAll('\\ ', '\0').split(' ');
    for (const item of items) {
      const raw = goTrimSpace(item.replaceAll('\0', ' '));
      if (raw === '') continue;
      const eq = raw.indexOf('=');
      if (eq <= 0) throw new ConstraintsError(`malformed constraint ${goQuote(raw)}`);
      const given = raw.slice(0, eq);
      const value = raw.slice(eq + 1);
      const name = resolveConstraintAlias(given);
      if (!isConstraintKey(name))
        throw new ConstraintsError(`unknown constraint ${goQuote(given)}`);
      // `allocate-public-ip=` sets nothing at all in Juju, not even "already set".
      if (name === 'allocate-public-ip' && value === '') continue;
      try {
        if (values.has(name)) throw new BadValue('already set');
        values.set(name, parseValue(name, value));
      } catch (err) {
        if (!(err instanceof BadValue)) throw err;
        throw new ConstraintsError(`bad ${goQuote(name)} constraint: ${err.message}`);
      }
    }
  }
  return constraintsFromEntries(values);
}
