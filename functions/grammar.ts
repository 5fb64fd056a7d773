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
import { CONTAINER_TYPES } from '../core';
import { EC2_ARCHES } from '../ec2/validator';

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
 * A count (`cores`, `cpu-power`) as the server takes and answers it: Go's
 * unsigned integer, held exactly (core refuses beyond 2^53). Up to 15
 * digits, or 16 below 9·10^15, so every count the server answers matches.
 */
const COUNT = '(?:[0-9]{1,15}|[1-8][0-9]{15})?';
/**
 * A size (`mem`, `root-disk`): a number with an optional `M`/`G`/`T`/`P`
 * suffix, bounded per suffix so that the MiB it makes stays an exact
 * integer (the parser refuses beyond 2^53 MiB). The server answers sizes in
 * MiB (`root-disk=3000G` as `root-disk=3072000M`), so the `M` form takes as
 * many digits as such an answer can have: a constraints string read from the
 * API can be sent back.
 */
const FRACTION = '(?:\\.[0-9]{1,3})?';
const SIZE =
  `(?:(?:[0-9]{1,15}|[1-8][0-9]{15})${FRACTION}M?` +
  `|[0-9]{1,12}${FRACTION}G|[0-9]{1,9}${FRACTION}T|[0-9]{1,6}${FRACTION}P)?`;

/**
 * Each key's value, as core/constraints.ts parses it and EC2's validator
 * takes it (empty: the key set to its default), in Juju's canonical key
 * order, and the `cpu-cores` alias of `cores`.
 */
const VALUES = {
  arch: `${alt(EC2_ARCHES)}?`,
  container: `${alt([...CONTAINER_TYPES, 'none'])}?`,
  cores: COUNT,
  'cpu-cores': COUNT,
  'cpu-power': COUNT,
  'instance-role': `${WORD}*`,
  'instance-type': '(?:[a-z][a-z0-9-]{0,30}\\.[a-z0-9-]{1,30})?',
  mem: SIZE,
  'root-disk': SIZE,
  'root-disk-source': `${WORD}*`,
  tags: list(`\\^?${WORD}+`),
  spaces: list(`\\^?${SPACE}`),
  'virt-type': `${WORD}*`,
  zones: list(ZONE),
  'allocate-public-ip': '(?:true|false)?',
  'image-id': '(?:ami-[0-9a-f]{8,17})?',
} as const;

const KEYS = Object.keys(VALUES) as Array<keyof typeof VALUES>;

/**
 * Juju's constraints string: space-separated `key=value` items in any order
 * (as Juju users write them, `mem=2G cores=2`), each from the known keys and
 * their value forms. "Each key at most once" is the one rule the pattern
 * does not state (a regular expression could only with look-aheads, which
 * generators such as Hypothesis and fast-check cannot honour): the server
 * refuses a repeated key with `bad "mem" constraint: already set`, and the
 * field's description says so. `container` is left out where the request
 * refuses it (add-machine: Juju's `container constraint "lxd" not allowed
 * when adding a machine`).
 */
export function constraintsPattern(options: { container?: boolean } = {}): string {
  const items = KEYS.filter((k) => options.container !== false || k !== 'container').map(
    (k) => `${k}=${VALUES[k]}`,
  );
  const item = alt(items);
  // no end-of-string assertion inside, which generators cannot honour
  return `^ *(?:${item}(?: +${item})*)? *$`;
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
