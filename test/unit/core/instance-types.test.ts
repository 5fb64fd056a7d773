import {
  compareInstanceTypes,
  type InstanceTypeInfo,
  matchingInstanceTypes,
  NoMatchingInstanceTypeError,
  parseConstraints,
} from '../../../core';
import { expectThrows } from './helpers';

// Juju's instanceTypes (environs/instances/instancetype_test.go), less the
// OCI flexible shape, which EC2 does not have.
const jujuTypes: InstanceTypeInfo[] = [
  {
    name: 'm1.small',
    arches: ['amd64'],
    cores: 1,
    cpuPower: 100,
    mem: 1740,
    cost: 60,
    rootDisk: 8192,
  },
  {
    name: 'm1.medium',
    arches: ['amd64'],
    cores: 1,
    cpuPower: 200,
    mem: 3840,
    cost: 120,
    rootDisk: 16384,
  },
  {
    name: 'm1.large',
    arches: ['amd64'],
    cores: 2,
    cpuPower: 400,
    mem: 7680,
    cost: 240,
    rootDisk: 32768,
  },
  { name: 'm1.xlarge', arches: ['amd64'], cores: 4, cpuPower: 800, mem: 15360, cost: 480 },
  {
    name: 't1.micro',
    arches: ['amd64'],
    cores: 1,
    cpuPower: 20,
    mem: 613,
    cost: 20,
    rootDisk: 4096,
  },
  {
    name: 'c1.medium',
    arches: ['amd64'],
    cores: 2,
    cpuPower: 500,
    mem: 1740,
    cost: 145,
    rootDisk: 8192,
  },
  {
    name: 'c1.large',
    arches: ['arm64'],
    cores: 2,
    cpuPower: 500,
    mem: 3264,
    cost: 520,
    rootDisk: 8192,
  },
  { name: 'c1.xlarge', arches: ['amd64'], cores: 8, cpuPower: 2000, mem: 7168, cost: 580 },
  {
    name: 'cc1.4xlarge',
    arches: ['amd64'],
    cores: 8,
    cpuPower: 3350,
    mem: 23552,
    cost: 1300,
  },
  {
    name: 'cc2.8xlarge',
    arches: ['amd64'],
    cores: 16,
    cpuPower: 8800,
    mem: 61952,
    cost: 2400,
  },
];

const it = (
  name: string,
  mem: number,
  cores: number,
  extra: Partial<InstanceTypeInfo> = {},
): InstanceTypeInfo => ({
  name,
  arches: ['amd64'],
  mem,
  cores,
  ...extra,
});

function names(types: readonly InstanceTypeInfo[]): string[] {
  return types.map((t) => t.name);
}

describe('matchingInstanceTypes (Juju getInstanceTypesTest)', () => {
  test.each<[string, string, string[], InstanceTypeInfo[]?]>([
    // Juju also lists c1.large (arm64) for cores=2; our default arch is amd64.
    ['cores', 'cores=2', ['m1.large', 'm1.xlarge', 'c1.xlarge', 'cc1.4xlarge', 'cc2.8xlarge']],
    ['cpu-power', 'cpu-power=2000', ['c1.xlarge', 'cc1.4xlarge', 'cc2.8xlarge']],
    ['mem', 'mem=4G', ['m1.large', 'm1.xlarge', 'c1.xlarge', 'cc1.4xlarge', 'cc2.8xlarge']],
    [
      'root-disk',
      'root-disk=16G',
      ['m1.medium', 'm1.large', 'm1.xlarge', 'c1.xlarge', 'cc1.4xlarge', 'cc2.8xlarge'],
    ],
    ['arches filtered by constraint', 'cpu-power=100 arch=arm64', ['c1.large']],
    [
      'enough memory for mongodb if mem not specified',
      'cores=4',
      ['it-3', 'it-4'],
      [
        it('it-5', 1024, 2),
        it('it-4', 4096, 4),
        it('it-3', 2048, 4),
        it('it-2', 256, 4),
        it('it-1', 512, 4),
      ],
    ],
    [
      'small mem specified, use that even though less than needed for mongodb',
      'mem=300M',
      ['it-1', 'it-3'],
      [it('it-3', 2048, 1), it('it-2', 256, 1), it('it-1', 512, 1)],
    ],
    [
      'mem specified and match found',
      'mem=4G arch=amd64',
      ['it-3'],
      [
        it('it-4', 8096, 1, { arches: ['arm64'] }),
        it('it-3', 4096, 1),
        it('it-2', 2048, 1),
        it('it-1', 512, 1),
      ],
    ],
    [
      'instance-type specified and match found',
      'instance-type=it-3',
      ['it-3'],
      [it('it-4', 8096, 0), it('it-3', 4096, 0), it('it-2', 2048, 0), it('it-1', 512, 0)],
    ],
    [
      'largest mem available matching other constraints if mem not specified',
      'cores=4',
      ['it-1'],
      [it('it-3', 1024, 2), it('it-2', 256, 4), it('it-1', 512, 4)],
    ],
    [
      'largest mem available matching other constraints if mem not specified, cost is tie breaker',
      'cores=4',
      ['it-2'],
      [
        it('it-4', 1024, 2),
        it('it-3', 256, 4),
        it('it-2', 512, 4, { cost: 50 }),
        it('it-1', 512, 4, { cost: 100 }),
      ],
    ],
  ])('%s', (_about, cons, expected, catalogue = jujuTypes) => {
    expect(names(matchingInstanceTypes('test', catalogue, parseConstraints(cons)))).toStrictEqual(
      expected,
    );
  });

  test('matches carry only the acceptable arches', () => {
    const both = it('x1', 4096, 2, { arches: ['amd64', 'arm64'] });
    expect(
      matchingInstanceTypes('test', [both], parseConstraints('arch=arm64'))[0]?.arches,
    ).toStrictEqual(['arm64']);
    expect(matchingInstanceTypes('test', [both], {})[0]?.arches).toStrictEqual(['amd64']);
    expect(
      matchingInstanceTypes('test', [both], parseConstraints('instance-type=x1'))[0]?.arches,
    ).toStrictEqual(['amd64', 'arm64']);
  });

  test.each<[string, InstanceTypeInfo[], string]>([
    // Juju's TestGetMatchingInstanceTypesErrors
    ['cpu-power=9001', [], 'no instance types in test matching constraints "cpu-power=9001"'],
    [
      'arch=arm64 mem=8G',
      jujuTypes,
      'no instance types in test matching constraints "arch=arm64 mem=8192M"',
    ],
    ['cores=9000', jujuTypes, 'no instance types in test matching constraints "cores=9000"'],
    ['mem=900000M', jujuTypes, 'no instance types in test matching constraints "mem=900000M"'],
    [
      'instance-type=dep.medium mem=8G',
      jujuTypes,
      'no instance types in test matching constraints "instance-type=dep.medium mem=8192M"',
    ],
    [
      'instance-type=cc2.8xlarge arch=arm64',
      jujuTypes,
      'no instance types in test matching constraints "arch=arm64 instance-type=cc2.8xlarge"',
    ],
  ])('%j matches nothing', (cons, catalogue, message) => {
    expectThrows(
      () => matchingInstanceTypes('test', catalogue, parseConstraints(cons)),
      NoMatchingInstanceTypeError,
      message,
    );
  });
});

describe('matchingInstanceTypes (DESIGN.md rules)', () => {
  // A small EC2-like catalogue, no prices.
  const ec2: InstanceTypeInfo[] = [
    it('t3.micro', 1024, 2),
    it('t3.small', 2048, 2),
    it('t3.medium', 4096, 2),
    it('m5.large', 8192, 2),
    it('c5.xlarge', 8192, 4),
    it('r5.large', 16384, 2),
    it('m5.xlarge', 16384, 4),
    it('m5.2xlarge', 32768, 8),
    it('m4.large', 8192, 2, { currentGeneration: false }),
    it('m3.medium', 3840, 1, { deprecated: true }),
    it('m6g.large', 8192, 2, { arches: ['arm64'] }),
    it('m6g.xlarge', 16384, 4, { arches: ['arm64'] }),
    it('x.3g', 3072, 2),
    it('x.6g', 6144, 2),
  ];
  const first = (cons: string): string | undefined =>
    matchingInstanceTypes('us-east-1', ec2, parseConstraints(cons))[0]?.name;

  test('defaults: at least 1 core and 2 GiB, amd64', () => {
    expect(first('')).toBe('t3.small');
    expect(names(matchingInstanceTypes('us-east-1', ec2, {}))).toStrictEqual([
      't3.small',
      'x.3g',
      't3.medium',
      'x.6g',
      'm5.large',
      'c5.xlarge',
      'r5.large',
      'm5.xlarge',
      'm5.2xlarge',
    ]);
  });

  test('mem=3G with types of 4G and 6G picks the 4G one', () => {
    const types = [it('six', 6144, 2), it('four', 4096, 2)];
    expect(
      names(matchingInstanceTypes('us-east-1', types, parseConstraints('mem=3G'))),
    ).toStrictEqual(['four', 'six']);
  });

  test('0 or key= does not filter: mem=0 lifts the 2 GiB default', () => {
    expect(first('mem=0')).toBe('t3.micro');
    expect(first('mem=')).toBe('t3.micro');
    expect(first('cores=')).toBe('t3.small');
  });

  test('arch= is the default arch', () => {
    expect(first('arch=')).toBe('t3.small');
    expect(first('arch=arm64')).toBe('m6g.large');
  });

  test('previous-generation types only when named', () => {
    expect(first('instance-type=m4.large')).toBe('m4.large');
    expect(first('instance-type=m3.medium')).toBe('m3.medium');
    expect(
      names(matchingInstanceTypes('us-east-1', ec2, parseConstraints('mem=8G cores=2'))),
    ).not.toContain('m4.large');
  });

  test('mem=8G instance-type=m5.large: m5.large already has 8 GiB', () => {
    expect(
      names(
        matchingInstanceTypes('us-east-1', ec2, parseConstraints('mem=8G instance-type=m5.large')),
      ),
    ).toStrictEqual(['m5.large']);
  });

  test('cores=1 instance-type=m5.large gives m5.large', () => {
    expect(
      names(
        matchingInstanceTypes('us-east-1', ec2, parseConstraints('cores=1 instance-type=m5.large')),
      ),
    ).toStrictEqual(['m5.large']);
  });

  test('a tighter mem than the named type: the smallest type with that mem and the type’s cores', () => {
    expect(
      names(
        matchingInstanceTypes('us-east-1', ec2, parseConstraints('mem=16G instance-type=m5.large')),
      ),
    ).toStrictEqual(['r5.large', 'm5.xlarge', 'm5.2xlarge']);
    // The named type's mem still counts when cores are tighter.
    expect(first('cores=4 instance-type=t3.medium')).toBe('c5.xlarge');
    expect(first('cores=4 instance-type=r5.large')).toBe('m5.xlarge');
  });

  test('a different arch than the named type: the same size in that arch', () => {
    expect(first('arch=arm64 instance-type=m5.large')).toBe('m6g.large');
  });

  test('an unknown named type matches nothing', () => {
    expectThrows(
      () => matchingInstanceTypes('us-east-1', ec2, parseConstraints('instance-type=z9.huge')),
      NoMatchingInstanceTypeError,
      'no instance types in us-east-1 matching constraints "instance-type=z9.huge"',
    );
  });

  test('the result does not depend on the catalogue’s order', () => {
    const shuffled = [...ec2].reverse();
    for (const cons of ['', 'mem=4G', 'cores=4', 'arch=arm64', 'mem=16G instance-type=m5.large']) {
      expect(matchingInstanceTypes('r', shuffled, parseConstraints(cons))).toStrictEqual(
        matchingInstanceTypes('r', ec2, parseConstraints(cons)),
      );
    }
  });
});

describe('compareInstanceTypes (Juju byCostTests, and ties)', () => {
  test.each<[string, InstanceTypeInfo[], string[]]>([
    [
      'default to lowest cost',
      [it('it-2', 4096, 2, { cost: 240 }), it('it-1', 2048, 1, { cost: 241 })],
      ['it-2', 'it-1'],
    ],
    [
      'when no cost associated, pick lowest ram',
      [it('it-2', 4096, 2), it('it-1', 2048, 1)],
      ['it-1', 'it-2'],
    ],
    [
      'when cost is the same, pick lowest ram',
      [it('it-2', 4096, 2, { cost: 240 }), it('it-1', 2048, 1, { cost: 240 })],
      ['it-1', 'it-2'],
    ],
    [
      'when cost and ram is the same, pick lowest cpu power',
      [it('it-2', 0, 2, { cpuPower: 200 }), it('it-1', 0, 1, { cpuPower: 100 })],
      ['it-1', 'it-2'],
    ],
    [
      'when cpu power is the same, pick the lowest cores',
      [it('it-2', 0, 2, { cpuPower: 200 }), it('it-1', 0, 1, { cpuPower: 200 })],
      ['it-1', 'it-2'],
    ],
    [
      'when cpu power is missing in side a, pick the lowest cores',
      [it('it-2', 0, 2, { cpuPower: 200 }), it('it-1', 0, 1)],
      ['it-1', 'it-2'],
    ],
    [
      'when cpu power is missing in side b, pick the lowest cores',
      [it('it-2', 0, 2), it('it-1', 0, 1, { cpuPower: 200 })],
      ['it-1', 'it-2'],
    ],
    [
      'when cpu cores is the same, pick the lowest root disk size',
      [it('it-2', 0, 1, { rootDisk: 8192 }), it('it-1', 0, 1, { rootDisk: 4096 })],
      ['it-1', 'it-2'],
    ],
    [
      'cores before cpu-power (our order)',
      [it('b', 0, 1, { cpuPower: 900 }), it('a', 0, 2, { cpuPower: 100 })],
      ['b', 'a'],
    ],
    [
      'known cost before unknown',
      [it('priceless', 512, 1), it('priced', 4096, 4, { cost: 999 })],
      ['priced', 'priceless'],
    ],
    ['everything equal: by name', [it('b', 1, 1), it('a', 1, 1)], ['a', 'b']],
  ])('%s', (_about, types, expected) => {
    expect(names([...types].sort(compareInstanceTypes))).toStrictEqual(expected);
  });
});

describe('unsupported keys take no part in matching (issue 11, finding 5)', () => {
  // EC2 reports virt-type, tags and allocate-public-ip as unsupported: kept and
  // shown, never a filter.
  const withVirt = [...jujuTypes.slice(0, 3), it('x.large', 8192, 2, { cost: 300 })];
  test.each<[string]>([
    ['virt-type=hvm'],
    ['virt-type=pv'],
    ['virt-type=kvm mem=4G'],
    ['tags=a,b'],
    ['allocate-public-ip=true'],
    ['virt-type=hvm tags=x allocate-public-ip=false cores=2'],
  ])('%s matches what the supported keys alone match', (cons) => {
    const supportedOnly = cons.replace(/(virt-type|tags|allocate-public-ip)=\S*/g, '');
    const withUnsupported = matchingInstanceTypes('test', withVirt, parseConstraints(cons));
    const without = matchingInstanceTypes('test', withVirt, parseConstraints(supportedOnly));
    expect(names(withUnsupported)).toStrictEqual(names(without));
    expect(withUnsupported.length).toBeGreaterThan(0);
  });

  test('virt-type=hvm on a catalogue without virtualization types still chooses the default', () => {
    expect(
      matchingInstanceTypes('us-east-1', jujuTypes, parseConstraints('virt-type=hvm'))[0]?.name,
    ).toBe('m1.medium');
  });

  test('the no-match message names only the keys that were matched', () => {
    expectThrows(
      () => matchingInstanceTypes('test', jujuTypes, parseConstraints('virt-type=pv cores=9000')),
      NoMatchingInstanceTypeError,
      'no instance types in test matching constraints "cores=9000"',
    );
  });
});

describe('price orders what fits; it never decides what fits (issue 14)', () => {
  // Prices (cost, USD per hour) unlike size: the burstable t-types are cheap,
  // the compute-optimised ones dear, one type has no known price.
  const priced: InstanceTypeInfo[] = [
    it('t3.micro', 1024, 2, { cost: 0.0104 }),
    it('t3.small', 2048, 2, { cost: 0.0208 }),
    it('c7a.medium', 2048, 1, { cost: 0.0513 }),
    it('t3.medium', 4096, 2, { cost: 0.0416 }),
    it('m7a.medium', 4096, 1, { cost: 0.058 }),
    it('m5.large', 8192, 2, { cost: 0.096 }),
    it('c5.xlarge', 8192, 4, { cost: 0.17 }),
    it('r5.large', 16384, 2, { cost: 0.126 }),
    it('m6g.large', 8192, 2, { arches: ['arm64'], cost: 0.077 }),
    it('t4g.small', 2048, 2, { arches: ['arm64'], cost: 0.0168 }),
    it('unpriced.small', 2048, 1),
    it('unpriced.large', 8192, 2),
    it('m4.large', 8192, 2, { currentGeneration: false, cost: 0.1 }),
    it('z.dear', 3072, 1, { cost: 5 }),
    { ...it('disk.large', 8192, 2, { cost: 0.05 }), rootDisk: 50 * 1024 },
    { ...it('tiny.disk', 8192, 2, { cost: 0.045 }), rootDisk: 4 * 1024 },
  ];
  const pick = (cons: string): string[] =>
    names(matchingInstanceTypes('us-east-1', priced, parseConstraints(cons)));

  test.each<[string, string, string]>([
    ['no constraints: the cheapest fitting type, not the smallest', '', 't3.small'],
    ['mem=3G: t3.medium is cheaper than m7a.medium', 'mem=3G', 't3.medium'],
    ['cores=4 is a hard floor: c5.xlarge however dear', 'cores=4', 'c5.xlarge'],
    ['mem=16G is a hard floor', 'mem=16G', 'r5.large'],
    ['arch=arm64: the cheapest arm64 type', 'arch=arm64', 't4g.small'],
    ['arch=arm64 mem=4G', 'arch=arm64 mem=4G', 'm6g.large'],
    ['instance-type names a dear type: that type', 'instance-type=z.dear', 'z.dear'],
    [
      'instance-type names an unpriced type: that type',
      'instance-type=unpriced.large',
      'unpriced.large',
    ],
    ['instance-type names a previous-generation type', 'instance-type=m4.large', 'm4.large'],
    [
      'instance-type with a tighter mem: the cheapest with both',
      'instance-type=t3.medium mem=8G',
      'tiny.disk',
    ],
    ['root-disk=20G rules out a smaller instance store', 'root-disk=20G mem=8G', 'disk.large'],
    ['root-disk=60G: neither fixed disk, an EBS type', 'root-disk=60G mem=8G', 'm5.large'],
    ['virt-type=hvm no longer filters', 'virt-type=hvm', 't3.small'],
  ])('%s', (_about, cons, expected) => {
    expect(pick(cons)[0]).toBe(expected);
  });

  test('unpriced types sort after every priced type, however small', () => {
    expect(pick('')).toStrictEqual([
      't3.small',
      't3.medium',
      'tiny.disk',
      'disk.large',
      'c7a.medium',
      'm7a.medium',
      'm5.large',
      'r5.large',
      'c5.xlarge',
      'z.dear',
      'unpriced.small',
      'unpriced.large',
    ]);
  });

  test('a previous-generation type is never chosen for being cheap', () => {
    expect(pick('mem=8G')).not.toContain('m4.large');
  });

  test('with no prices at all the order is the least wasteful (today’s order)', () => {
    const unpriced = priced.map(({ cost: _cost, ...rest }) => rest);
    expect(
      names(matchingInstanceTypes('us-east-1', unpriced, parseConstraints('mem=3G'))).slice(0, 3),
    ).toStrictEqual(['z.dear', 'm7a.medium', 't3.medium']);
  });
});
