import type { ConstraintsView } from './views';
import { constraintsToString, parseConstraints, type Constraints } from '../core';
import { createEc2Validator, mergeConstraints } from '../ec2/validator';

/**
 * Constraints as the API takes them: Juju's grammar, EC2's validator
 * (vocabularies, conflicts), canonical text out. Keys EC2 cannot honour are
 * kept and reported as unsupported, never silently dropped.
 */
const validator = createEc2Validator();

export interface ValidatedConstraints {
  value: Constraints;
  canonical: string;
  unsupported: string[];
}

export function validateConstraints(text: string): ValidatedConstraints {
  const value = parseConstraints(text);
  const unsupported = validator.validate(value);
  return { value, canonical: constraintsToString(value), unsupported };
}

export function canonicalConstraints(text: string): string {
  return validateConstraints(text).canonical;
}

/** Juju's fallback merge: every key `specific` leaves unset comes from `fallback`. */
export function collapseConstraints(fallback: string, specific: string): string {
  return constraintsToString(
    mergeConstraints(parseConstraints(fallback), parseConstraints(specific), validator),
  );
}

/** The API's constraints body: canonical text, plus the unsupported keys when there are any. */
export function constraintsView(text: string): ConstraintsView {
  const { canonical, unsupported } = validateConstraints(text);
  return unsupported.length ? { constraints: canonical, unsupported } : { constraints: canonical };
}
