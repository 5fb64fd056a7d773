/**
 * Placement directives (`--to`, add-machine's argument), after Juju's
 * core/instance/placement.go, the CLI's handling of unscoped directives and
 * the EC2 provider's `zone=` / `subnet=` directives.
 */
import type { Constraints } from './constraints';
import { ConstraintsError, PlacementError } from './errors';
import { goQuote } from './text';

/** Juju's scope name for a directive that names an existing machine. */
export const MACHINE_SCOPE = '#';

/** Container types a placement may name. */
export const PLACEMENT_CONTAINER_TYPES = ['lxd'] as const;
export type ContainerType = (typeof PLACEMENT_CONTAINER_TYPES)[number];

/** Juju's `instance.Placement`: a scope and a scope-specific directive. */
export interface RawPlacement {
  readonly scope: string;
  readonly directive: string;
}

/** A placement directive, interpreted. */
export type Placement =
  /** An existing machine or container: `3`, `0/lxd/0`. */
  | { readonly kind: 'machine'; readonly machineId: string }
  /** A new container: on machine `machineId` (`lxd:3`), or on a new machine (`lxd`). */
  | {
      readonly kind: 'container';
      readonly containerType: ContainerType;
      readonly machineId?: string;
    }
  /** A new machine in an availability zone: `zone=us-east-1a`. */
  | { readonly kind: 'zone'; readonly zone: string }
  /** A new machine in a subnet (id or CIDR): `subnet=subnet-0abc`. */
  | { readonly kind: 'subnet'; readonly subnet: string }
  /** A manually provisioned machine: `ssh:[user@]host`. */
  | { readonly kind: 'ssh'; readonly host: string };

// names.IsValidMachine: N, or N/<container type>/M, nested any number of times.
const JUJU_MACHINE_ID = /^(?:0|[1-9][0-9]*)(?:\/[a-z]+\/(?:0|[1-9][0-9]*))*$/;
// The machines this provisioner creates: N, or N/lxd/M.
const MACHINE_ID = /^(?:0|[1-9][0-9]*)(?:\/lxd\/(?:0|[1-9][0-9]*))?$/;

/** True for the machine ids this provisioner uses: `N` or `N/lxd/M`. */
export function isValidMachineId(id: string): boolean {
  return MACHINE_ID.test(id);
}

/** True for any id Juju's grammar accepts (`names.IsValidMachine`), e.g. `0/kvm/1/lxd/2`. */
export function isJujuMachineId(id: string): boolean {
  return JUJU_MACHINE_ID.test(id);
}

/** True for a container's id (`N/lxd/M`). */
export function isContainerMachineId(id: string): boolean {
  return isJujuMachineId(id) && id.includes('/');
}

/** The id of the machine hosting container `id`, or undefined for a top-level machine. */
export function parentMachineId(id: string): string | undefined {
  const slash = id.lastIndexOf('/', id.lastIndexOf('/') - 1);
  return isContainerMachineId(id) && slash > 0 ? id.slice(0, slash) : undefined;
}

function isContainerType(s: string): s is ContainerType {
  return (PLACEMENT_CONTAINER_TYPES as readonly string[]).includes(s);
}

/**
 * Juju's `ParsePlacement`, exactly: undefined for `""`; `scope:directive`;
 * a bare machine id (scope `#`); a bare container type (empty directive).
 * Anything else throws `placement scope missing`.
 */
export function parseRawPlacement(text: string): RawPlacement | undefined {
  if (text === '') return undefined;
  const colon = text.indexOf(':');
  if (colon !== -1) {
    const scope = text.slice(0, colon);
    const directive = text.slice(colon + 1);
    if (scope === '') throw new PlacementError('placement scope missing');
    if ((scope === MACHINE_SCOPE || isContainerType(scope)) && !isJujuMachineId(directive)) {
      throw new PlacementError(
        `invalid value ${goQuote(directive)} for ${goQuote(scope)} scope: expected machine-id`,
      );
    }
    return { scope, directive };
  }
  if (isJujuMachineId(text)) return { scope: MACHINE_SCOPE, directive: text };
  if (isContainerType(text)) return { scope: text, directive: '' };
  throw new PlacementError('placement scope missing');
}

/** The EC2 provider's directives: `zone=…`, `subnet=…`. */
function parseProviderDirective(directive: string): Placement {
  const eq = directive.indexOf('=');
  if (eq !== -1) {
    const key = directive.slice(0, eq);
    const value = directive.slice(eq + 1);
    if (key === 'zone') {
      if (value === '') throw new PlacementError(`invalid availability zone ${goQuote(value)}`);
      return { kind: 'zone', zone: value };
    }
    if (key === 'subnet') {
      if (value === '') throw new PlacementError(`unable to find subnet ${goQuote(value)}`);
      return { kind: 'subnet', subnet: value };
    }
  }
  throw new PlacementError(`unknown placement directive: ${directive}`);
}

export interface ParsePlacementOptions {
  /**
   * The model's name. `<model>:zone=…` is then accepted as an explicitly
   * scoped provider directive, as Juju accepts `<model-uuid>:zone=…`.
   */
  readonly modelName?: string;
}

/**
 * Parses a placement directive: `3`, `0/lxd/0`, `lxd:3`, `lxd`,
 * `zone=us-east-1a`, `subnet=…`, `ssh:user@host`. Returns undefined for `""`.
 * An unscoped directive that is neither a machine nor a container type is a
 * provider directive (Juju's CLI scopes it to the model). Throws
 * `PlacementError` with Juju's messages. Whether a kind is allowed where it
 * was given is the caller's rule (see `checkAddMachine`).
 */
export function parsePlacement(
  text: string,
  options: ParsePlacementOptions = {},
): Placement | undefined {
  let raw: RawPlacement | undefined;
  try {
    raw = parseRawPlacement(text);
  } catch (err) {
    // As Juju's CLI: an unscoped directive is the model's (the provider's).
    if (err instanceof PlacementError && !text.includes(':')) return parseProviderDirective(text);
    throw err;
  }
  if (raw === undefined) return undefined;
  const { scope, directive } = raw;
  if (scope === MACHINE_SCOPE) return { kind: 'machine', machineId: directive };
  if (isContainerType(scope)) {
    return directive === ''
      ? { kind: 'container', containerType: scope }
      : { kind: 'container', containerType: scope, machineId: directive };
  }
  if (scope === 'ssh') {
    // Our own check (Juju fails later, when it cannot connect): a host is required.
    const host = directive.slice(directive.indexOf('@') + 1);
    if (host === '') {
      throw new PlacementError(
        `invalid value ${goQuote(directive)} for "ssh" scope: expected [user@]host`,
      );
    }
    return { kind: 'ssh', host: directive };
  }
  if (options.modelName !== undefined && scope === options.modelName) {
    return parseProviderDirective(directive);
  }
  throw new PlacementError(`invalid model name ${goQuote(scope)}`);
}

/** The directive's canonical text; `parsePlacement(placementToString(p))` equals `p`. */
export function placementToString(p: Placement): string {
  switch (p.kind) {
    case 'machine':
      return p.machineId;
    case 'container':
      return p.machineId === undefined ? p.containerType : `${p.containerType}:${p.machineId}`;
    case 'zone':
      return `zone=${p.zone}`;
    case 'subnet':
      return `subnet=${p.subnet}`;
    case 'ssh':
      return `ssh:${p.host}`;
  }
}

/** True when the placement carries a directive (Juju: a non-empty `Directive`). */
export function placementHasDirective(p: Placement): boolean {
  return !(p.kind === 'container' && p.machineId === undefined);
}

export interface AddMachineRequest {
  /** How many machines (`-n`); 1 when omitted. */
  readonly count?: number;
  readonly placement?: Placement;
  readonly constraints?: Constraints;
}

/**
 * Juju's add-machine rules: no `container` constraint; no count above 1
 * with a placement directive (`lxd` alone is fine); no existing machine id
 * as the placement. Throws `ConstraintsError` or `PlacementError`.
 */
export function checkAddMachine(request: AddMachineRequest): void {
  const { count = 1, placement, constraints } = request;
  if (constraints?.container !== undefined) {
    throw new ConstraintsError(
      `container constraint ${goQuote(constraints.container)} not allowed when adding a machine`,
    );
  }
  if (placement === undefined) return;
  if (count > 1 && placementHasDirective(placement)) {
    throw new PlacementError('cannot use -n when specifying a placement directive');
  }
  if (placement.kind === 'machine') {
    throw new PlacementError('machine-id cannot be specified when adding machines');
  }
}
