import fc from 'fast-check';
import {
  ARCHES,
  type Constraints,
  constraintsToString,
  CoreError,
  type InstanceTypeInfo,
  matchingInstanceTypes,
  parseBase,
  parseConstraints,
  parsePlacement,
  parseRawPlacement,
  placementToString,
  baseToString,
  Validator,
} from '../../../core';
import { createEc2Validator, mergeConstraints } from '../../../ec2/validator';

const RUNS = 3000;

// Characters that matter to the grammars, mixed with arbitrary code points.
const interesting = fc.constantFrom(
  ' ',
  '  ',
  '\\',
  '\\ ',
  '=',
  ',',
  '^',
  ':',
  '@',
  '/',
  '#',
  '.',
  '-',
  '_',
  '\t',
  '\n',
  '\u0000',
  '\u00a0',
  '\u0085',
  '\u2028',
  '\ufeff',
  'é',
  '😀',
  '\ud800',
);
const char = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: interesting },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
);
const anyText = fc.string({ unit: char, maxLength: 40 });

// Strings built from the grammars' own tokens, so the parsers get past their
// first check and into the interesting paths.
const constraintTokens = fc.constantFrom(
  'arch',
  'container',
  'cores',
  'cpu-cores',
  'cpu-power',
  'mem',
  'root-disk',
  'root-disk-source',
  'tags',
  'instance-role',
  'instance-type',
  'spaces',
  'virt-type',
  'zones',
  'allocate-public-ip',
  'image-id',
  '=',
  '==',
  ' ',
  '\\ ',
  ',',
  '^',
  'amd64',
  'arm64',
  'lxd',
  'none',
  'true',
  'False',
  '0',
  '1',
  '4',
  '1.5',
  'G',
  'M',
  'T',
  'P',
  'e5',
  '0x1p4',
  '_',
  '-',
  'NaN',
  'Inf',
  '9007199254740993',
  'm5.large',
  'dmz',
  '\\',
);
const constraintText = fc.oneof(
  anyText,
  fc.array(fc.oneof(constraintTokens, anyText), { maxLength: 12 }).map((parts) => parts.join('')),
);

const placementTokens = fc.constantFrom(
  '0',
  '3',
  '12',
  '01',
  '/',
  'lxd',
  'kvm',
  ':',
  '#',
  'ssh',
  '@',
  'ubuntu',
  'zone',
  'subnet',
  '=',
  'us-east-1a',
  'demo',
  '10.0.0.0/24',
);
const placementText = fc.oneof(
  anyText,
  fc.array(fc.oneof(placementTokens, anyText), { maxLength: 8 }).map((parts) => parts.join('')),
);

const baseTokens = fc.constantFrom(
  'ubuntu',
  'Ubuntu',
  '@',
  '22.04',
  '20.04',
  '/',
  'stable',
  'edge',
  'x',
  '',
);
const baseText = fc.oneof(
  anyText,
  fc.array(fc.oneof(baseTokens, anyText), { maxLength: 6 }).map((parts) => parts.join('')),
);

/** Runs `fn`; anything thrown must be one of core's typed errors. */
function returnsOrThrowsTyped<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof CoreError)) throw err;
    expect(err.message).not.toBe('');
    expect(typeof err.code).toBe('string');
    return undefined;
  }
}

describe('fuzz: every parser returns a value or throws a typed error', () => {
  test('parseConstraints, and what it returns survives its string form', () => {
    fc.assert(
      fc.property(fc.array(constraintText, { minLength: 1, maxLength: 3 }), (texts) => {
        const parsed = returnsOrThrowsTyped(() => parseConstraints(...texts));
        if (parsed !== undefined) {
          expect(parseConstraints(constraintsToString(parsed))).toStrictEqual(parsed);
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('parseConstraints on key=value arguments with arbitrary values', () => {
    const key = fc.constantFrom(
      'arch',
      'cores',
      'mem',
      'instance-type',
      'tags',
      'spaces',
      'zones',
      'virt-type',
      'image-id',
      'allocate-public-ip',
    );
    const args = fc.array(
      fc.tuple(key, anyText).map(([k, v]) => `${k}=${v}`),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(args, (texts) => {
        const parsed = returnsOrThrowsTyped(() => parseConstraints(...texts));
        if (parsed !== undefined) {
          expect(parseConstraints(constraintsToString(parsed))).toStrictEqual(parsed);
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('parsePlacement and parseRawPlacement, and placementToString round trips', () => {
    fc.assert(
      fc.property(placementText, (text) => {
        returnsOrThrowsTyped(() => parseRawPlacement(text));
        const placement = returnsOrThrowsTyped(() => parsePlacement(text));
        if (placement !== undefined) {
          expect(parsePlacement(placementToString(placement))).toStrictEqual(placement);
        }
        returnsOrThrowsTyped(() => parsePlacement(text, { modelName: 'demo' }));
      }),
      { numRuns: RUNS },
    );
  });

  test('parseBase, and baseToString round trips', () => {
    fc.assert(
      fc.property(baseText, (text) => {
        const base = returnsOrThrowsTyped(() => parseBase(text));
        if (base !== undefined) expect(parseBase(baseToString(base))).toStrictEqual(base);
      }),
      { numRuns: RUNS },
    );
  });

  test('validators, merge and instance-type selection on whatever parses', () => {
    const catalogue: InstanceTypeInfo[] = [
      { name: 'm5.large', arches: ['amd64'], cores: 2, mem: 8192 },
      { name: 'm6g.large', arches: ['arm64'], cores: 2, mem: 8192, cost: 1 },
      { name: 't3.micro', arches: ['amd64'], cores: 2, mem: 1024, deprecated: true },
    ];
    const plain = new Validator();
    plain.registerConflicts(['instance-type'], ['mem', 'arch']);
    const ec2 = createEc2Validator({ instanceTypes: catalogue });
    fc.assert(
      fc.property(constraintText, constraintText, (a, b) => {
        const x = returnsOrThrowsTyped(() => parseConstraints(a)) ?? {};
        const y = returnsOrThrowsTyped(() => parseConstraints(b)) ?? {};
        for (const v of [plain, ec2]) {
          returnsOrThrowsTyped(() => v.validate(x));
          returnsOrThrowsTyped(() => v.merge(x, y));
        }
        const merged = returnsOrThrowsTyped(() => mergeConstraints(x, y));
        if (merged !== undefined) {
          returnsOrThrowsTyped(() => matchingInstanceTypes('r', catalogue, merged));
        }
      }),
      { numRuns: RUNS },
    );
  });
});

// ---------------------------------------------------------------------------
// parse(toString(x)) equals x for every value the parser can produce.

const GO_SPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/u;

/** Text the parser can return as a value: no NUL, no trailing space or backslash. */
function isValueText(s: string): boolean {
  return !s.includes('\0') && !GO_SPACE.test(s) && !s.endsWith('\\');
}

const valueText = anyText.filter(isValueText);
const listItem = anyText.filter((s) => !s.includes(',') && !s.includes('\0'));
const list = fc
  .array(listItem, { maxLength: 4 })
  .filter((items) => isValueText(items.join(',')) && !(items.length === 1 && items[0] === ''));
const spaceName = fc.stringMatching(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
const spaces = fc.array(
  fc.tuple(fc.boolean(), spaceName).map(([exclude, name]) => (exclude ? `^${name}` : name)),
  { maxLength: 4 },
);
const count = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });

const constraintsValue: fc.Arbitrary<Constraints> = fc.record(
  {
    arch: fc.constantFrom('', ...ARCHES),
    container: fc.constantFrom('', 'none', 'lxd'),
    cores: count,
    cpuPower: count,
    instanceRole: valueText,
    instanceType: valueText,
    mem: count,
    rootDisk: count,
    rootDiskSource: valueText,
    tags: list,
    spaces,
    virtType: valueText,
    zones: list,
    allocatePublicIp: fc.boolean(),
    imageId: valueText,
  },
  { requiredKeys: [], noNullPrototype: true },
);

describe('property: parse(toString(x)) equals x', () => {
  test('for random constraint values', () => {
    fc.assert(
      fc.property(constraintsValue, (value) => {
        expect(parseConstraints(constraintsToString(value))).toStrictEqual(value);
      }),
      { numRuns: 5000 },
    );
  });

  test('merging with itself is the identity, with any validator', () => {
    fc.assert(
      fc.property(constraintsValue, (value) => {
        const v = new Validator();
        expect(v.merge(value, value)).toStrictEqual(value);
        expect(v.merge({}, value)).toStrictEqual(value);
        expect(v.merge(value, {})).toStrictEqual(value);
      }),
      { numRuns: 1000 },
    );
  });
});
