import {
  type ConstraintKey,
  type Constraints,
  ConstraintsError,
  constraintsToString,
  parseConstraints,
  unsupportedConstraintsMessage,
  Validator,
  type VocabularyValue,
} from '../../../core';
import { createEc2Validator, mergeConstraints } from '../../../ec2/validator';
import { expectThrows } from './helpers';

const p = (text: string): Constraints => parseConstraints(text);

// Juju's validationTests (core/constraints/validation_test.go)
const validationCases: {
  desc: string;
  cons: string;
  unsupported?: ConstraintKey[];
  vocab?: Partial<Record<ConstraintKey, VocabularyValue[]>>;
  reds?: ConstraintKey[];
  blues?: ConstraintKey[];
  err?: string;
}[] = [
  { desc: 'base good', cons: 'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4' },
  {
    desc: 'unsupported',
    cons: 'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4 tags=foo',
    unsupported: ['tags'],
  },
  {
    desc: 'multiple unsupported',
    cons: 'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4 instance-type=foo',
    unsupported: ['cpu-power', 'instance-type'],
  },
  {
    desc: 'Ambiguous constraint errors take precedence over unsupported errors.',
    cons: 'root-disk=8G mem=4G cores=4 instance-type=foo',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    unsupported: ['cores'],
    err: 'ambiguous constraints: "instance-type" overlaps with "mem"',
  },
  {
    desc: 'red conflicts',
    cons: 'root-disk=8G mem=4G arch=amd64 cores=4 instance-type=foo',
    reds: ['mem', 'arch'],
  },
  {
    desc: 'blue conflicts',
    cons: 'root-disk=8G mem=4G arch=amd64 cores=4 instance-type=foo',
    blues: ['mem', 'arch'],
  },
  {
    desc: 'red and blue conflicts',
    cons: 'root-disk=8G mem=4G arch=amd64 cores=4 instance-type=foo',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    err: 'ambiguous constraints: "arch" overlaps with "instance-type"',
  },
  {
    desc: 'ambiguous constraints red to blue',
    cons: 'root-disk=8G mem=4G arch=amd64 cores=4 instance-type=foo',
    reds: ['instance-type'],
    blues: ['mem', 'arch'],
    err: 'ambiguous constraints: "arch" overlaps with "instance-type"',
  },
  {
    desc: 'ambiguous constraints blue to red',
    cons: 'root-disk=8G mem=4G cores=4 instance-type=foo',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    err: 'ambiguous constraints: "instance-type" overlaps with "mem"',
  },
  { desc: 'arch vocab', cons: 'arch=amd64 mem=4G cores=4', vocab: { arch: ['amd64', 'arm64'] } },
  { desc: 'cores vocab', cons: 'mem=4G cores=4', vocab: { cores: [2, 4, 8] } },
  {
    desc: 'instance-type vocab',
    cons: 'mem=4G instance-type=foo',
    vocab: { 'instance-type': ['foo', 'bar'] },
  },
  { desc: 'tags vocab', cons: 'mem=4G tags=foo,bar', vocab: { tags: ['foo', 'bar', 'another'] } },
  {
    desc: 'invalid arch vocab',
    cons: 'arch=arm64 mem=4G cores=4',
    vocab: { arch: ['amd64'] },
    err: 'invalid constraint value: arch=arm64\nvalid values are: amd64',
  },
  {
    desc: 'invalid cores vocab',
    cons: 'mem=4G cores=5',
    vocab: { cores: [8, 2, 4] },
    err: 'invalid constraint value: cores=5\nvalid values are: 2 4 8',
  },
  {
    desc: 'invalid instance-type vocab',
    cons: 'mem=4G instance-type=foo',
    vocab: { 'instance-type': ['bar'] },
    err: 'invalid constraint value: instance-type=foo\nvalid values are: bar',
  },
  {
    desc: 'invalid tags vocab',
    cons: 'mem=4G tags=foo,other',
    vocab: { tags: ['foo', 'bar', 'another'] },
    err: 'invalid constraint value: tags=other\nvalid values are: another bar foo',
  },
  {
    desc: 'instance-type and arch',
    cons: 'arch=arm64 mem=4G instance-type=foo',
    vocab: { 'instance-type': ['foo', 'bar'], arch: ['amd64', 'arm64'] },
  },
  { desc: 'virt-type', cons: 'virt-type=bar', vocab: { 'virt-type': ['bar'] } },
  {
    desc: 'valid instance-type',
    cons: 'instance-type=a1.4xlarge',
    vocab: {
      'instance-type': [
        'a1.4xlarge',
        'a1.large',
        'a1.xlarge',
        'a1.medium',
        'a1.metal',
        'c3.2xlarge',
        'c3.xlarge',
      ],
    },
  },
  {
    desc: 'invalid instance-type unique and sorted by closest Levenshtein Distance vocabs',
    cons: 'instance-type=ba',
    vocab: { 'instance-type': ['car', 'bar', 'tar', 'car', 'bar', 'car'] },
    err: 'invalid constraint value: instance-type=ba\nvalid values are: bar car tar',
  },
  {
    desc: 'invalid instance-type return count of extra possible vocabs if length of closest vocabs exceeds limit',
    cons: 'instance-type=1a.4xlarge',
    vocab: {
      'instance-type': [
        'a1.4xlarge',
        'a1.large',
        'a1.xlarge',
        'a1.medium',
        'a1.metal',
        'c3.2xlarge',
        'c3.xlarge',
        'c4.large',
        'c4.8xlarge',
        'c4.4xlarge',
        'c4.2xlarge',
        'c4.xlarge',
        'c5.4xlarge',
      ],
    },
    err:
      'invalid constraint value: instance-type=1a.4xlarge\nvalid values are: ' +
      'a1.4xlarge c4.4xlarge c5.4xlarge a1.xlarge c3.2xlarge c3.xlarge c4.2xlarge c4.8xlarge ' +
      'c4.xlarge a1.large ...(plus 3 more)',
  },
];

function validatorFor(t: (typeof validationCases)[number]): Validator {
  const v = new Validator();
  v.registerUnsupported(t.unsupported ?? []);
  v.registerConflicts(t.reds ?? [], t.blues ?? []);
  for (const [key, values] of Object.entries(t.vocab ?? {})) {
    v.registerVocabulary(key as ConstraintKey, values);
  }
  return v;
}

describe('Validator.validate (Juju validationTests)', () => {
  test.each(validationCases.filter((t) => t.err === undefined))('$desc', (t) => {
    expect(validatorFor(t).validate(p(t.cons))).toStrictEqual(t.unsupported ?? []);
  });

  test.each(validationCases.filter((t) => t.err !== undefined))('$desc', (t) => {
    expectThrows(() => validatorFor(t).validate(p(t.cons)), ConstraintsError, t.err!);
  });

  test('conflict resolver (Juju TestConstraintResolver)', () => {
    const v = new Validator();
    v.registerConflicts(['instance-type'], ['arch']);
    const cons = p('arch=amd64 instance-type=foo-amd64');
    expectThrows(
      () => v.validate(cons),
      ConstraintsError,
      'ambiguous constraints: "arch" overlaps with "instance-type"',
    );
    v.registerConflictResolver('instance-type', 'arch', (c) =>
      c.arch === 'amd64' && c.instanceType === 'foo-amd64'
        ? undefined
        : `instance-type="${c.instanceType}" and arch="${c.arch}" are incompatible`,
    );
    expect(v.validate(cons)).toStrictEqual([]);
    expectThrows(
      () => v.validate(p('arch=arm64 instance-type=foo-s390x')),
      ConstraintsError,
      'ambiguous constraints: "arch" overlaps with "instance-type": instance-type="foo-s390x" and arch="arm64" are incompatible',
    );
  });

  test('update vocabulary (Juju TestUpdateVocabulary)', () => {
    const v = new Validator();
    v.registerVocabulary('arch', ['amd64']);
    expect(v.validate(p('arch=amd64'))).toStrictEqual([]);
    expectThrows(
      () => v.validate(p('arch=ppc64el')),
      ConstraintsError,
      'invalid constraint value: arch=ppc64el\nvalid values are: amd64',
    );
    v.updateVocabulary('arch', ['ppc64el']);
    expect(v.validate(p('arch=amd64'))).toStrictEqual([]);
    expect(v.validate(p('arch=ppc64el'))).toStrictEqual([]);
  });

  test('the default value passes a vocabulary (deviation: Juju refuses arch=)', () => {
    const v = new Validator();
    v.registerVocabulary('arch', ['amd64']);
    v.registerVocabulary('cores', [2, 4]);
    v.registerVocabulary('instance-type', ['m5.large']);
    expect(v.validate(p('arch= cores= instance-type='))).toStrictEqual([]);
  });

  test('a key set to its default still takes part in conflicts, as in Juju', () => {
    const v = new Validator();
    v.registerConflicts(['instance-type'], ['mem']);
    expectThrows(
      () => v.validate(p('instance-type= mem=4G')),
      ConstraintsError,
      'ambiguous constraints: "instance-type" overlaps with "mem"',
    );
  });
});

// Juju's mergeTests
const mergeCases: {
  desc: string;
  fallback?: string;
  cons?: string;
  reds?: ConstraintKey[];
  blues?: ConstraintKey[];
  unsupported?: ConstraintKey[];
  expected?: string;
}[] = [
  { desc: 'empty all round' },
  { desc: 'container with empty fallback', cons: 'container=lxd', expected: 'container=lxd' },
  { desc: 'container from fallback', fallback: 'container=lxd', expected: 'container=lxd' },
  { desc: 'arch with empty fallback', cons: 'arch=amd64', expected: 'arch=amd64' },
  {
    desc: 'arch with ignored fallback',
    cons: 'arch=amd64',
    fallback: 'arch=arm64',
    expected: 'arch=amd64',
  },
  { desc: 'arch from fallback', fallback: 'arch=arm64', expected: 'arch=arm64' },
  {
    desc: 'instance type with empty fallback',
    cons: 'instance-type=foo',
    expected: 'instance-type=foo',
  },
  {
    desc: 'instance type with ignored fallback',
    cons: 'instance-type=foo',
    fallback: 'instance-type=bar',
    expected: 'instance-type=foo',
  },
  {
    desc: 'instance type from fallback',
    fallback: 'instance-type=foo',
    expected: 'instance-type=foo',
  },
  { desc: 'cores with empty fallback', cons: 'cores=2', expected: 'cores=2' },
  {
    desc: 'cores with ignored fallback',
    cons: 'cores=4',
    fallback: 'cores=8',
    expected: 'cores=4',
  },
  { desc: 'cores from fallback', fallback: 'cores=8', expected: 'cores=8' },
  { desc: 'cpu-power with empty fallback', cons: 'cpu-power=100', expected: 'cpu-power=100' },
  {
    desc: 'cpu-power with ignored fallback',
    cons: 'cpu-power=100',
    fallback: 'cpu-power=200',
    expected: 'cpu-power=100',
  },
  { desc: 'cpu-power from fallback', fallback: 'cpu-power=200', expected: 'cpu-power=200' },
  { desc: 'tags with empty fallback', cons: 'tags=foo,bar', expected: 'tags=foo,bar' },
  {
    desc: 'tags with ignored fallback',
    cons: 'tags=foo,bar',
    fallback: 'tags=baz',
    expected: 'tags=foo,bar',
  },
  { desc: 'tags from fallback', fallback: 'tags=foo,bar', expected: 'tags=foo,bar' },
  { desc: 'tags initial empty', cons: 'tags=', fallback: 'tags=foo,bar', expected: 'tags=' },
  { desc: 'mem with empty fallback', cons: 'mem=4G', expected: 'mem=4G' },
  { desc: 'mem with ignored fallback', cons: 'mem=4G', fallback: 'mem=8G', expected: 'mem=4G' },
  { desc: 'mem from fallback', fallback: 'mem=8G', expected: 'mem=8G' },
  { desc: 'root-disk with empty fallback', cons: 'root-disk=4G', expected: 'root-disk=4G' },
  {
    desc: 'root-disk with ignored fallback',
    cons: 'root-disk=4G',
    fallback: 'root-disk=8G',
    expected: 'root-disk=4G',
  },
  { desc: 'root-disk from fallback', fallback: 'root-disk=8G', expected: 'root-disk=8G' },
  {
    desc: 'non-overlapping mix',
    cons: 'root-disk=8G mem=4G arch=amd64',
    fallback: 'cpu-power=1000 cores=4',
    expected: 'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4',
  },
  {
    desc: 'overlapping mix',
    cons: 'root-disk=8G mem=4G arch=amd64',
    fallback: 'cpu-power=1000 cores=4 mem=8G',
    expected: 'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4',
  },
  {
    desc: 'fallback only, no conflicts',
    fallback: 'root-disk=8G cores=4 instance-type=foo',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 instance-type=foo',
  },
  {
    desc: 'no fallback, no conflicts',
    cons: 'root-disk=8G cores=4 instance-type=foo',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 instance-type=foo',
  },
  {
    desc: 'conflict value from override',
    fallback: 'root-disk=8G instance-type=foo',
    cons: 'root-disk=8G cores=4 instance-type=bar',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 instance-type=bar',
  },
  {
    desc: 'unsupported attributes ignored',
    fallback: 'root-disk=8G instance-type=foo',
    cons: 'root-disk=8G cores=4 instance-type=bar',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    unsupported: ['instance-type'],
    expected: 'root-disk=8G cores=4 instance-type=bar',
  },
  {
    desc: 'red conflict masked from fallback',
    fallback: 'root-disk=8G mem=4G',
    cons: 'root-disk=8G cores=4 instance-type=bar',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 instance-type=bar',
  },
  {
    desc: 'second red conflict masked from fallback',
    fallback: 'root-disk=8G arch=amd64',
    cons: 'root-disk=8G cores=4 instance-type=bar',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 instance-type=bar',
  },
  {
    desc: 'blue conflict masked from fallback',
    fallback: 'root-disk=8G cores=4 instance-type=bar',
    cons: 'root-disk=8G mem=4G',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 mem=4G',
  },
  {
    desc: 'both red conflicts used, blue masked from fallback',
    fallback: 'root-disk=8G cores=4 instance-type=bar',
    cons: 'root-disk=8G arch=amd64 mem=4G',
    reds: ['mem', 'arch'],
    blues: ['instance-type'],
    expected: 'root-disk=8G cores=4 arch=amd64 mem=4G',
  },
];

describe('Validator.merge (Juju mergeTests)', () => {
  test.each(mergeCases)('$desc', (t) => {
    const v = new Validator();
    v.registerConflicts(t.reds ?? [], t.blues ?? []);
    v.registerUnsupported(t.unsupported ?? []);
    expect(v.merge(p(t.fallback ?? ''), p(t.cons ?? ''))).toStrictEqual(p(t.expected ?? ''));
  });

  test('the issue’s vector: instance-type masks mem from the fallback', () => {
    const v = new Validator();
    v.registerConflicts(['mem', 'arch'], ['instance-type']);
    const merged = v.merge(p('root-disk=8G mem=4G'), p('root-disk=8G cores=4 instance-type=bar'));
    expect(constraintsToString(merged)).toBe('cores=4 instance-type=bar root-disk=8192M');
    expect(merged).toStrictEqual(p('root-disk=8192M cores=4 instance-type=bar'));
  });

  test('both values must be valid (Juju TestMergeError)', () => {
    const v = new Validator();
    v.registerConflicts(['instance-type'], ['mem']);
    const fallback = p('instance-type=foo mem=4G');
    const cons = p('cores=2');
    expectThrows(
      () => v.merge(fallback, cons),
      ConstraintsError,
      'ambiguous constraints: "instance-type" overlaps with "mem"',
    );
    expectThrows(
      () => v.merge(cons, fallback),
      ConstraintsError,
      'ambiguous constraints: "instance-type" overlaps with "mem"',
    );
  });
});

describe('collapsing model and application constraints into a unit’s', () => {
  // Juju's state constraints tests ("(explicitly) empty constraints override
  // set fallbacks for deployment and provisioning"), with EC2's validator.
  test.each<[string, string, string, string]>([
    [
      'explicitly empty keys override the model',
      'cores=42 arch=amd64 tags=foo mem=4G',
      'cores= arch= cpu-power=',
      'arch= cores= cpu-power= mem=4096M tags=foo',
    ],
    [
      'with spaces, as in Juju’s table',
      'cores=42 arch=amd64 tags=foo spaces=default,^dmz mem=4G',
      'cores= arch= spaces= cpu-power=',
      'arch= cores= cpu-power= mem=4096M tags=foo spaces=',
    ],
    [
      'non-empty constraints always override empty or unset fallbacks',
      'cores= arch= tags=',
      'cores=42 root-disk=20G arch=amd64 tags=foo,bar',
      'arch=amd64 cores=42 root-disk=20480M tags=foo,bar',
    ],
    ['the model alone', 'mem=4G', '', 'mem=4096M'],
    ['the application alone', '', 'cores=2', 'cores=2'],
    [
      'an application instance-type drops the model’s mem, cores, arch and cpu-power',
      'mem=8G cores=4 arch=amd64 cpu-power=100 root-disk=16G zones=a',
      'instance-type=m5.large',
      'instance-type=m5.large root-disk=16384M zones=a',
    ],
    [
      'an application mem drops the model’s instance-type',
      'instance-type=m5.large root-disk=16G',
      'mem=16G',
      'mem=16384M root-disk=16384M',
    ],
  ])('%s', (_desc, model, application, unit) => {
    expect(constraintsToString(mergeConstraints(p(model), p(application)))).toBe(unit);
  });

  test('an invalid value refuses the merge', () => {
    expectThrows(
      () => mergeConstraints(p('arch=s390x'), p('')),
      ConstraintsError,
      'invalid constraint value: arch=s390x\nvalid values are: amd64 arm64',
    );
  });
});

describe('createEc2Validator', () => {
  const catalogue = [
    { name: 'm5.large', arches: ['amd64'] },
    { name: 'm6g.large', arches: ['arm64'] },
    { name: 't3.micro', arches: ['amd64'] },
  ];

  test('reports tags, virt-type and allocate-public-ip as unsupported', () => {
    const unsupported = createEc2Validator().validate(
      p('mem=4G tags=a virt-type=hvm allocate-public-ip=true root-disk-source=ssd spaces=x'),
    );
    expect(unsupported).toStrictEqual(['tags', 'virt-type', 'allocate-public-ip']);
    expect(unsupportedConstraintsMessage(unsupported)).toBe(
      'unsupported constraints: tags,virt-type,allocate-public-ip',
    );
    // Set to the default, they are still reported: the key was given.
    expect(createEc2Validator().validate(p('tags= virt-type='))).toStrictEqual([
      'tags',
      'virt-type',
    ]);
  });

  test('arch vocabulary is amd64 and arm64', () => {
    expect(createEc2Validator().validate(p('arch=arm64'))).toStrictEqual([]);
    expectThrows(
      () => createEc2Validator().validate(p('arch=ppc64el')),
      ConstraintsError,
      'invalid constraint value: arch=ppc64el\nvalid values are: amd64 arm64',
    );
  });

  test('instance-type with mem, cores or cpu-power is allowed (DESIGN: tightest of both)', () => {
    expect(
      createEc2Validator().validate(p('instance-type=m5.large mem=8G cores=1 cpu-power=100')),
    ).toStrictEqual([]);
  });

  test('instance-type with arch: checked against the catalogue when given', () => {
    const v = createEc2Validator({ instanceTypes: catalogue });
    expect(v.validate(p('instance-type=m6g.large arch=arm64'))).toStrictEqual([]);
    expect(v.validate(p('instance-type=m5.large arch='))).toStrictEqual([]);
    expectThrows(
      () => v.validate(p('instance-type=m5.large arch=arm64')),
      ConstraintsError,
      'ambiguous constraints: "arch" overlaps with "instance-type": instance-type="m5.large" expected arch="amd64" not "arm64"',
    );
    expect(createEc2Validator().validate(p('instance-type=m5.large arch=arm64'))).toStrictEqual([]);
  });

  test('instance-type must be in the catalogue when given', () => {
    const v = createEc2Validator({ instanceTypes: catalogue });
    expect(v.validate(p('instance-type=t3.micro'))).toStrictEqual([]);
    expectThrows(
      () => v.validate(p('instance-type=m5.lrge')),
      ConstraintsError,
      'invalid constraint value: instance-type=m5.lrge\nvalid values are: m5.large m6g.large t3.micro',
    );
  });
});
