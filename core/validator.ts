/**
 * Juju's constraints Validator (core/constraints/validation.go): vocabularies,
 * conflicts (with optional resolvers) and unsupported keys, and the merge of
 * a value onto its fallback.
 */
import {
  CONSTRAINT_KEYS,
  type ConstraintKey,
  type Constraints,
  type ConstraintValue,
  constraintValue,
  constraintsFromEntries,
  resolveConstraintAlias,
  setConstraintKeys,
  withoutConstraints,
} from './constraints';
import { ConstraintsError } from './errors';
import { compareStrings, goQuote, levenshtein } from './text';

/** A value a vocabulary may allow. */
export type VocabularyValue = string | number | boolean;

/**
 * Decides whether two conflicting keys may be set together in this value:
 * returns undefined when they may, or the reason they may not.
 */
export type ConflictResolver = (constraints: Constraints) => string | undefined;

/** A key, or an alias of one (`cpu-cores`). */
export type ConstraintName = ConstraintKey | 'cpu-cores';

const VALID_VALUES_COUNT_LIMIT = 10;

function canonical(name: ConstraintName): ConstraintKey {
  return resolveConstraintAlias(name) as ConstraintKey;
}

function resolverId(red: string, blue: string): string {
  return [red, blue].sort(compareStrings).join(' ');
}

/** The default value of a key (`key=`) is always allowed by a vocabulary. */
function isDefaultValue(value: VocabularyValue): boolean {
  return value === '' || value === 0;
}

export class Validator {
  private readonly conflicts = new Map<string, ReadonlySet<string>>();
  private readonly resolvers = new Map<string, ConflictResolver>();
  private unsupported: ReadonlySet<ConstraintKey> = new Set();
  private readonly vocabularies = new Map<ConstraintKey, readonly VocabularyValue[]>();

  /**
   * Every key in `reds` conflicts with every key in `blues`: setting both in
   * one value is ambiguous (unless a resolver allows it), and a key set in a
   * value masks the keys it conflicts with in the fallback it is merged onto.
   * As in Juju, a later registration replaces an earlier one for a key.
   */
  registerConflicts(reds: readonly ConstraintName[], blues: readonly ConstraintName[]): void {
    for (const red of reds) this.conflicts.set(red, new Set(blues));
    for (const blue of blues) this.conflicts.set(blue, new Set(reds));
  }

  /** Lets `red` and `blue` be set together when `resolver` allows the value. */
  registerConflictResolver(
    red: ConstraintName,
    blue: ConstraintName,
    resolver: ConflictResolver,
  ): void {
    this.resolvers.set(resolverId(red, blue), resolver);
  }

  /** Keys the provider cannot honour; `validate` reports them (replaces earlier ones). */
  registerUnsupported(keys: readonly ConstraintName[]): void {
    this.unsupported = new Set(keys.map(canonical));
  }

  /** The values a key may take (each element, for list keys). */
  registerVocabulary(key: ConstraintName, allowed: readonly VocabularyValue[]): void {
    this.vocabularies.set(canonical(key), [...allowed]);
  }

  /** Adds values to a key's vocabulary (registering it if need be). */
  updateVocabulary(key: ConstraintName, allowed: readonly VocabularyValue[]): void {
    const current = this.vocabularies.get(canonical(key)) ?? [];
    this.vocabularies.set(canonical(key), [...new Set([...current, ...allowed])]);
  }

  /**
   * Checks vocabularies, then conflicts; throws `ConstraintsError` on the
   * first problem, in canonical key order. Returns the keys set in `c` that
   * the provider does not support (in canonical order), which are not an
   * error: callers report them.
   */
  validate(c: Constraints): ConstraintKey[] {
    const unsupported = setConstraintKeys(c).filter((key) => this.unsupported.has(key));
    this.checkVocabularies(c);
    this.checkConflicts(c);
    return unsupported;
  }

  /**
   * Juju's `Validator.Merge`: both values must be valid; the result is
   * `specific` with every key it leaves unset taken from `fallback`, except
   * fallback keys that conflict with a key set in `specific`. A key set to
   * its default (`key=`) counts as set.
   */
  merge(fallback: Constraints, specific: Constraints): Constraints {
    this.validate(fallback);
    this.validate(specific);
    const masked = new Set<string>();
    for (const key of setConstraintKeys(specific)) {
      for (const conflict of this.conflicts.get(key) ?? []) masked.add(conflict);
    }
    const base = withoutConstraints(fallback, masked);
    return constraintsFromEntries(
      CONSTRAINT_KEYS.flatMap((key) => {
        const value = constraintValue(specific, key) ?? constraintValue(base, key);
        return value === undefined ? [] : [[key, value] as const];
      }),
    );
  }

  private checkVocabularies(c: Constraints): void {
    for (const key of setConstraintKeys(c)) {
      const allowed = this.vocabularies.get(key);
      if (allowed === undefined) continue;
      const value = constraintValue(c, key) as ConstraintValue;
      const values: readonly VocabularyValue[] = Array.isArray(value)
        ? (value as readonly string[])
        : [value as VocabularyValue];
      for (const v of values) this.checkInVocabulary(key, v, allowed);
    }
  }

  private checkInVocabulary(
    key: ConstraintKey,
    value: VocabularyValue,
    allowed: readonly VocabularyValue[],
  ): void {
    // Deviation from Juju: `key=` (the default) is always allowed; Juju would
    // refuse `arch=` against EC2's arch vocabulary.
    if (isDefaultValue(value)) return;
    if (allowed.some((a) => a === value)) return;
    const unique = [...new Set(allowed.map((a) => String(a)))];
    if (typeof value === 'string') {
      const distance = new Map(unique.map((u) => [u, levenshtein(u, value)]));
      unique.sort(
        (a, b) => (distance.get(a) ?? 0) - (distance.get(b) ?? 0) || compareStrings(a, b),
      );
    } else {
      // Juju leaves these in map order; sort them so the message is stable.
      unique.sort((a, b) => Number(a) - Number(b) || compareStrings(a, b));
    }
    const closest = unique.slice(0, VALID_VALUES_COUNT_LIMIT);
    let message = `invalid constraint value: ${key}=${String(value)}\nvalid values are: ${closest.join(' ')}`;
    if (unique.length > closest.length)
      message += ` ...(plus ${unique.length - closest.length} more)`;
    throw new ConstraintsError(message);
  }

  private checkConflicts(c: Constraints): void {
    const present = new Set<string>(setConstraintKeys(c));
    for (const key of [...present].sort(compareStrings)) {
      const conflicts = this.conflicts.get(key);
      if (conflicts === undefined) continue;
      for (const conflict of [...conflicts].sort(compareStrings)) {
        if (!present.has(conflict)) continue;
        const prefix = `ambiguous constraints: ${goQuote(key)} overlaps with ${goQuote(conflict)}`;
        const resolver = this.resolvers.get(resolverId(key, conflict));
        if (resolver === undefined) throw new ConstraintsError(prefix);
        const reason = resolver(c);
        if (reason !== undefined) throw new ConstraintsError(`${prefix}: ${reason}`);
      }
    }
  }
}

/**
 * Juju's warning for keys a provider cannot honour:
 * `unsupported constraints: tags,virt-type`.
 */
export function unsupportedConstraintsMessage(keys: readonly string[]): string {
  return `unsupported constraints: ${keys.join(',')}`;
}
