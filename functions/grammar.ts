/**
 * The constraints and placement grammars as regular expressions, for the
 * OpenAPI document (issue 29): so a client generator or a fuzzer builds
 * values the server takes. The server itself parses with core's parsers
 * (parseConstraints, parsePlacement and the services' rules); these patterns
 * are documentation, never the check. Each is the rule or narrower, never
 * wider: a value that matches is one the server accepts in shape. What a
 * pattern cannot say (whether a zone or instance type exists in the model's
 * region, whether a machine exists) is said in the field's description.
 */
import { CONTAINER_TYPES, EC2_ARCHES } from '../core';

const alt = (words: readonly string[]) => `(?:${words.join('|')})`;

/** A machine number as this provisioner numbers them (no leading zeros). */
const NUMBER = '(?:0|[1-9][0-9]{0,8})';
/** An EC2 availability zone's name: a region and a letter, e.g. `us-east-1a`. */
export const ZONE = '[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}[a-z]';
/** A word of free text in a constraint value: no space, `=`, `,` or backslash. */
const WORD = '[A-Za-z0-9._-]';
/** names.IsValidSpace, as core/constraints.ts checks it. */
const SPACE = '[a-z0-9]+(?:-[a-z0-9]+)*';
const list = (item: string) => `(?:${item}(?:,${item})*)?`;

/**
 * Each key's value, as core/constraints.ts parses it and EC2's validator
 * takes it (empty: the key set to its default). Sizes are bounded so that
 * the MiB they make stays an exact integer (the parser refuses beyond).
 */
const VALUES = {
  arch: `${alt(EC2_ARCHES)}?`,
  container: `${alt([...CONTAINER_TYPES, 'none'])}?`,
  cores: '[0-9]{0,9}',
  'cpu-power': '[0-9]{0,9}',
  'instance-role': `${WORD}*`,
  'instance-type': '(?:[a-z][a-z0-9-]{0,30}\\.[a-z0-9-]{1,30})?',
  mem: '(?:[0-9]{1,6}(?:\\.[0-9]{1,3})?[MGTP]?)?',
  'root-disk': '(?:[0-9]{1,6}(?:\\.[0-9]{1,3})?[MGTP]?)?',
  'root-disk-source': `${WORD}*`,
  tags: list(`\\^?${WORD}+`),
  spaces: list(`\\^?${SPACE}`),
  'virt-type': `${WORD}*`,
  zones: list(ZONE),
  'allocate-public-ip': '(?:true|false)?',
  'image-id': '(?:ami-[0-9a-f]{8,17})?',
} as const;

/** Juju's canonical key order (core CONSTRAINT_KEYS), which the pattern follows. */
const ORDER = Object.keys(VALUES) as Array<keyof typeof VALUES>;

/**
 * Juju's constraints string: space-separated `key=value` items, each key at
 * most once. A regular expression cannot say "each key once, in any order"
 * without look-aheads fuzzers cannot generate from, so the pattern takes the
 * keys in Juju's canonical order (the order the server answers them in);
 * the server takes any order. `container` is left out where the request
 * refuses it (add-machine: Juju's `container constraint "lxd" not allowed
 * when adding a machine`).
 */
export function constraintsPattern(options: { container?: boolean } = {}): string {
  const items = ORDER.filter((k) => options.container !== false || k !== 'container').map(
    (k) => `${k}=${VALUES[k]}`,
  );
  // one alternative per first item, each followed by any of the later ones after spaces:
  // no end-of-string assertion inside, which generators (Hypothesis, fast-check) cannot honour
  const starts = items.map(
    (first, i) =>
      first +
      items
        .slice(i + 1)
        .map((later) => `(?: +${later})?`)
        .join(''),
  );
  return `^ *(?:${starts.join('|')})? *$`;
}

const MACHINE = `${NUMBER}(?:/lxd/${NUMBER})?`;
const SUBNET = '(?:subnet-[0-9a-f]{8,17}|[0-9]{1,3}(?:\\.[0-9]{1,3}){3}/[0-9]{1,2})';
const HOST = '[A-Za-z0-9](?:[A-Za-z0-9.-]{0,61}[A-Za-z0-9])?';
const USER = '[a-z_][a-z0-9_-]{0,31}';

/**
 * A placement directive. `unit` (deploy and add-unit `to`): an existing
 * machine or container (`3`, `0/lxd/1`), a new container (`lxd`, `lxd:3`),
 * a zone (`zone=us-east-1a`) or a subnet. `machine` (add-machine): a new
 * container, a zone, a subnet, or a manual machine (`ssh:[user@]host`); an
 * existing machine's id is refused there, as in Juju.
 */
export function placementPattern(kind: 'unit' | 'machine'): string {
  const common = [`lxd(?::${NUMBER})?`, `zone=${ZONE}`, `subnet=${SUBNET}`];
  const forms = kind === 'unit' ? [MACHINE, ...common] : [...common, `ssh:(?:${USER}@)?${HOST}`];
  return `^${alt(forms)}$`;
}
