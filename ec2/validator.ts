/**
 * The constraints validator for EC2, after Juju's provider/ec2
 * `ConstraintsValidator` (kept beside the provider, as Juju keeps each
 * provider's), and the merge that collapses a model's and an
 * application's constraints into a unit's.
 */
import type { ConstraintKey, Constraints } from '../core/constraints';
import { UNMATCHED_CONSTRAINTS } from '../core/instance-types';
import { compareStrings, goQuote } from '../core/text';
import { Validator } from '../core/validator';

/**
 * Keys EC2 cannot honour, as Juju's ec2 provider lists them: exactly those
 * core's instance-type matching leaves out (core/instance-types.ts).
 */
export const EC2_UNSUPPORTED_CONSTRAINTS: readonly ConstraintKey[] = UNMATCHED_CONSTRAINTS;

/** Architectures EC2 offers, in Juju's names. */
export const EC2_ARCHES: readonly string[] = ['amd64', 'arm64'];

/** What the validator needs to know of an instance type. */
export interface Ec2ValidatorInstanceType {
  readonly name: string;
  readonly arches: readonly string[];
}

export interface Ec2ValidatorOptions {
  /**
   * The region's instance types. When given, `instance-type` must name one of
   * them, and `arch` must be one the named type supports.
   */
  readonly instanceTypes?: readonly Ec2ValidatorInstanceType[];
}

/**
 * EC2's validator: `arch` in amd64/arm64; `instance-type` conflicts with
 * `arch`, `mem`, `cores` and `cpu-power` (so a value's `instance-type` masks
 * those keys of its fallback, and the other way round); `tags`, `virt-type`
 * and `allocate-public-ip` are reported as unsupported.
 *
 * Deviation from Juju (DESIGN.md wins): `instance-type` together with `mem`,
 * `cores` or `cpu-power` in one value is not ambiguous — instance-type
 * selection takes the tightest of both. `instance-type` with `arch` is
 * accepted when the named type supports that arch (as Juju's resolver does),
 * or when no catalogue was given.
 */
export function createEc2Validator(options: Ec2ValidatorOptions = {}): Validator {
  const validator = new Validator();
  validator.registerVocabulary('arch', EC2_ARCHES);
  validator.registerConflicts(['instance-type'], ['arch', 'mem', 'cores', 'cpu-power']);
  validator.registerUnsupported(EC2_UNSUPPORTED_CONSTRAINTS);
  for (const key of ['mem', 'cores', 'cpu-power'] as const) {
    validator.registerConflictResolver('instance-type', key, () => undefined);
  }

  const catalogue = options.instanceTypes;
  if (catalogue !== undefined) {
    const names = [...new Set(catalogue.map((t) => t.name))].sort(compareStrings);
    validator.registerVocabulary('instance-type', names);
  }
  validator.registerConflictResolver('instance-type', 'arch', (c: Constraints) => {
    if (catalogue === undefined || !c.instanceType || !c.arch) return undefined;
    const itype = catalogue.find((t) => t.name === c.instanceType);
    if (itype === undefined || itype.arches.includes(c.arch)) return undefined;
    return `instance-type=${goQuote(c.instanceType)} expected arch=${goQuote(itype.arches.join(','))} not ${goQuote(c.arch)}`;
  });
  return validator;
}

/**
 * Collapses `fallback` (e.g. the model's constraints) and `specific` (e.g.
 * the application's) into one value with Juju's fallback semantics: every key
 * `specific` leaves unset comes from `fallback`, except keys that conflict
 * with one `specific` sets. Throws `ConstraintsError` if either value is
 * invalid for the validator (EC2's by default).
 */
export function mergeConstraints(
  fallback: Constraints,
  specific: Constraints,
  validator: Validator = createEc2Validator(),
): Constraints {
  return validator.merge(fallback, specific);
}
