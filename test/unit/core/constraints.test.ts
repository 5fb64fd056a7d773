import {
  type Constraints,
  ConstraintsError,
  constraintsToString,
  excludedSpaces,
  hasAnyConstraints,
  hasContainer,
  hasInstanceType,
  hasZones,
  includedSpaces,
  isEmptyConstraints,
  parseConstraints,
  withoutConstraints,
} from '../../../core';
import { expectThrows } from './helpers';

// Juju's parseConstraintsTests (core/constraints/constraints_test.go), with
// the value each one parses to.
const parseCases: { summary: string; args: string[]; result?: Constraints; err?: string }[] = [
  // Simple errors.
  { summary: 'nothing at all', args: [], result: {} },
  { summary: 'empty', args: ['     '], result: {} },
  { summary: 'complete nonsense', args: ['cheese'], err: 'malformed constraint "cheese"' },
  { summary: 'missing name', args: ['=cheese'], err: 'malformed constraint "=cheese"' },
  { summary: 'unknown constraint', args: ['cheese=edam'], err: 'unknown constraint "cheese"' },

  // "container" in detail.
  { summary: 'set container empty', args: ['container='], result: { container: '' } },
  { summary: 'set container to none', args: ['container=none'], result: { container: 'none' } },
  { summary: 'set container lxd', args: ['container=lxd'], result: { container: 'lxd' } },
  {
    summary: 'set nonsense container',
    args: ['container=foo'],
    err: 'bad "container" constraint: invalid container type "foo"',
  },
  {
    summary: 'double set container together',
    args: ['container=lxd container=lxd'],
    err: 'bad "container" constraint: already set',
  },
  {
    summary: 'double set container separately',
    args: ['container=lxd', 'container='],
    err: 'bad "container" constraint: already set',
  },

  // "arch" in detail.
  { summary: 'set arch empty', args: ['arch='], result: { arch: '' } },
  { summary: 'set arch amd64', args: ['arch=amd64'], result: { arch: 'amd64' } },
  { summary: 'set arch arm64', args: ['arch=arm64'], result: { arch: 'arm64' } },
  { summary: 'set arch ppc64el', args: ['arch=ppc64el'], result: { arch: 'ppc64el' } },
  { summary: 'set arch s390x', args: ['arch=s390x'], result: { arch: 's390x' } },
  { summary: 'set arch riscv64', args: ['arch=riscv64'], result: { arch: 'riscv64' } },
  {
    summary: 'set nonsense arch 1',
    args: ['arch=cheese'],
    err: 'bad "arch" constraint: "cheese" not recognized',
  },
  {
    summary: 'set nonsense arch 2',
    args: ['arch=123.45'],
    err: 'bad "arch" constraint: "123.45" not recognized',
  },
  {
    summary: 'double set arch together',
    args: ['arch=amd64 arch=amd64'],
    err: 'bad "arch" constraint: already set',
  },
  {
    summary: 'double set arch separately',
    args: ['arch=arm64', 'arch='],
    err: 'bad "arch" constraint: already set',
  },

  // "cores" in detail.
  { summary: 'set cores empty', args: ['cores='], result: { cores: 0 } },
  { summary: 'set cores zero', args: ['cores=0'], result: { cores: 0 } },
  { summary: 'set cores', args: ['cores=4'], result: { cores: 4 } },
  {
    summary: 'set nonsense cores 1',
    args: ['cores=cheese'],
    err: 'bad "cores" constraint: must be a non-negative integer',
  },
  {
    summary: 'set nonsense cores 2',
    args: ['cores=-1'],
    err: 'bad "cores" constraint: must be a non-negative integer',
  },
  {
    summary: 'set nonsense cores 3',
    args: ['cores=123.45'],
    err: 'bad "cores" constraint: must be a non-negative integer',
  },
  {
    summary: 'double set cores together',
    args: ['cores=128 cores=1'],
    err: 'bad "cores" constraint: already set',
  },
  {
    summary: 'double set cores separately',
    args: ['cores=128', 'cores=1'],
    err: 'bad "cores" constraint: already set',
  },

  // "cpu-cores"
  { summary: 'set cpu-cores', args: ['cpu-cores=4'], result: { cores: 4 } },
  {
    summary: 'cpu-cores and cores',
    args: ['cpu-cores=4 cores=4'],
    err: 'bad "cores" constraint: already set',
  },
  {
    summary: 'nonsense cpu-cores is reported under its key',
    args: ['cpu-cores=x'],
    err: 'bad "cores" constraint: must be a non-negative integer',
  },

  // "cpu-power" in detail.
  { summary: 'set cpu-power empty', args: ['cpu-power='], result: { cpuPower: 0 } },
  { summary: 'set cpu-power zero', args: ['cpu-power=0'], result: { cpuPower: 0 } },
  { summary: 'set cpu-power', args: ['cpu-power=44'], result: { cpuPower: 44 } },
  {
    summary: 'set nonsense cpu-power 1',
    args: ['cpu-power=cheese'],
    err: 'bad "cpu-power" constraint: must be a non-negative integer',
  },
  {
    summary: 'set nonsense cpu-power 2',
    args: ['cpu-power=-1'],
    err: 'bad "cpu-power" constraint: must be a non-negative integer',
  },
  {
    summary: 'double set cpu-power together',
    args: ['  cpu-power=300 cpu-power=1700 '],
    err: 'bad "cpu-power" constraint: already set',
  },
  {
    summary: 'double set cpu-power separately',
    args: ['cpu-power=300  ', '  cpu-power=1700'],
    err: 'bad "cpu-power" constraint: already set',
  },

  // "mem" in detail.
  { summary: 'set mem empty', args: ['mem='], result: { mem: 0 } },
  { summary: 'set mem zero', args: ['mem=0'], result: { mem: 0 } },
  { summary: 'set mem without suffix', args: ['mem=512'], result: { mem: 512 } },
  { summary: 'set mem with M suffix', args: ['mem=512M'], result: { mem: 512 } },
  { summary: 'set mem with G suffix', args: ['mem=1.5G'], result: { mem: 1536 } },
  { summary: 'set mem with T suffix', args: ['mem=36.2T'], result: { mem: 37958452 } },
  { summary: 'set mem with P suffix', args: ['mem=18.9P'], result: { mem: 20293720474 } },
  {
    summary: 'set nonsense mem 1',
    args: ['mem=cheese'],
    err: 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    summary: 'set nonsense mem 2',
    args: ['mem=-1'],
    err: 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    summary: 'set nonsense mem 3',
    args: ['mem=32Y'],
    err: 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    summary: 'double set mem together',
    args: ['mem=1G  mem=2G'],
    err: 'bad "mem" constraint: already set',
  },
  {
    summary: 'double set mem separately',
    args: ['mem=1G', 'mem=2G'],
    err: 'bad "mem" constraint: already set',
  },

  // "root-disk" in detail.
  { summary: 'set root-disk empty', args: ['root-disk='], result: { rootDisk: 0 } },
  { summary: 'set root-disk zero', args: ['root-disk=0'], result: { rootDisk: 0 } },
  { summary: 'set root-disk without suffix', args: ['root-disk=512'], result: { rootDisk: 512 } },
  { summary: 'set root-disk with M suffix', args: ['root-disk=512M'], result: { rootDisk: 512 } },
  { summary: 'set root-disk with G suffix', args: ['root-disk=1.5G'], result: { rootDisk: 1536 } },
  {
    summary: 'set root-disk with T suffix',
    args: ['root-disk=36.2T'],
    result: { rootDisk: 37958452 },
  },
  {
    summary: 'set root-disk with P suffix',
    args: ['root-disk=18.9P'],
    result: { rootDisk: 20293720474 },
  },
  {
    summary: 'set nonsense root-disk 1',
    args: ['root-disk=cheese'],
    err: 'bad "root-disk" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    summary: 'set nonsense root-disk 2',
    args: ['root-disk=-1'],
    err: 'bad "root-disk" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    summary: 'set nonsense root-disk 3',
    args: ['root-disk=32Y'],
    err: 'bad "root-disk" constraint: must be a non-negative float with optional M/G/T/P suffix',
  },
  {
    summary: 'double set root-disk together',
    args: ['root-disk=1G  root-disk=2G'],
    err: 'bad "root-disk" constraint: already set',
  },
  {
    summary: 'double set root-disk separately',
    args: ['root-disk=1G', 'root-disk=2G'],
    err: 'bad "root-disk" constraint: already set',
  },

  // root-disk-source in detail.
  {
    summary: 'set root-disk-source empty',
    args: ['root-disk-source='],
    result: { rootDiskSource: '' },
  },
  {
    summary: 'set root-disk-source to a value',
    args: ['root-disk-source=sourcename'],
    result: { rootDiskSource: 'sourcename' },
  },
  {
    summary: 'double set root-disk-source together',
    args: ['root-disk-source=sourcename root-disk-source=somethingelse'],
    err: 'bad "root-disk-source" constraint: already set',
  },
  {
    summary: 'double set root-disk-source separately',
    args: ['root-disk-source=sourcename', 'root-disk-source=somethingelse'],
    err: 'bad "root-disk-source" constraint: already set',
  },

  // tags
  { summary: 'single tag', args: ['tags=foo'], result: { tags: ['foo'] } },
  { summary: 'multiple tags', args: ['tags=foo,bar'], result: { tags: ['foo', 'bar'] } },
  { summary: 'no tags', args: ['tags='], result: { tags: [] } },

  // spaces
  { summary: 'single space', args: ['spaces=space1'], result: { spaces: ['space1'] } },
  {
    summary: 'multiple spaces - positive',
    args: ['spaces=space1,space2'],
    result: { spaces: ['space1', 'space2'] },
  },
  {
    summary: 'multiple spaces - negative',
    args: ['spaces=^dmz,^public'],
    result: { spaces: ['^dmz', '^public'] },
  },
  {
    summary: 'multiple spaces - positive and negative',
    args: ['spaces=admin,^area52,dmz,^public'],
    result: { spaces: ['admin', '^area52', 'dmz', '^public'] },
  },
  { summary: 'no spaces', args: ['spaces='], result: { spaces: [] } },

  // instance roles
  {
    summary: 'set instance role',
    args: ['instance-role=foobarir'],
    result: { instanceRole: 'foobarir' },
  },
  { summary: 'instance role empty', args: ['instance-role='], result: { instanceRole: '' } },
  { summary: 'instance role auto', args: ['instance-role=auto'], result: { instanceRole: 'auto' } },

  // instance type
  { summary: 'set instance type', args: ['instance-type=foo'], result: { instanceType: 'foo' } },
  { summary: 'instance type empty', args: ['instance-type='], result: { instanceType: '' } },
  {
    summary: 'instance type with slash-escaped spaces',
    args: ['instance-type=something\\ with\\ spaces'],
    result: { instanceType: 'something with spaces' },
  },

  // "virt-type" in detail.
  { summary: 'set virt-type empty', args: ['virt-type='], result: { virtType: '' } },
  { summary: 'set virt-type kvm', args: ['virt-type=kvm'], result: { virtType: 'kvm' } },
  { summary: 'set virt-type lxd', args: ['virt-type=lxd'], result: { virtType: 'lxd' } },
  {
    summary: 'double set virt-type together',
    args: ['virt-type=kvm virt-type=kvm'],
    err: 'bad "virt-type" constraint: already set',
  },
  {
    summary: 'double set virt-type separately',
    args: ['virt-type=kvm', 'virt-type='],
    err: 'bad "virt-type" constraint: already set',
  },

  // Zones
  { summary: 'single zone', args: ['zones=az1'], result: { zones: ['az1'] } },
  { summary: 'multiple zones', args: ['zones=az1,az2'], result: { zones: ['az1', 'az2'] } },
  {
    summary: 'zones with slash-escaped spaces',
    args: ['zones=Availability\\ zone\\ 1'],
    result: { zones: ['Availability zone 1'] },
  },
  {
    summary: 'Multiple zones with slash-escaped spaces',
    args: ['zones=Availability\\ zone\\ 1,Availability\\ zone\\ 2,az2'],
    result: { zones: ['Availability zone 1', 'Availability zone 2', 'az2'] },
  },
  { summary: 'no zones', args: ['zones='], result: { zones: [] } },

  // AllocatePublicIP
  {
    summary: 'set allocate-public-ip',
    args: ['allocate-public-ip=true'],
    result: { allocatePublicIp: true },
  },
  {
    summary: 'set nonsense allocate-public-ip',
    args: ['allocate-public-ip=fred'],
    err: `bad "allocate-public-ip" constraint: must be 'true' or 'false'`,
  },
  {
    summary: 'try to set allocate-public-ip twice',
    args: ['allocate-public-ip=true allocate-public-ip=false'],
    err: 'bad "allocate-public-ip" constraint: already set',
  },
  { summary: 'empty allocate-public-ip sets nothing', args: ['allocate-public-ip='], result: {} },
  {
    summary: 'empty allocate-public-ip after a value is not "already set"',
    args: ['allocate-public-ip=false allocate-public-ip='],
    result: { allocatePublicIp: false },
  },

  // ImageID
  { summary: 'set image-id', args: ['image-id=ubuntu-bf2'], result: { imageId: 'ubuntu-bf2' } },
  { summary: 'set empty image-id', args: ['image-id='], result: { imageId: '' } },
  {
    summary: 'set image-id twice',
    args: ['image-id=ubuntu-bf2 image-id=ubuntu-bf1'],
    err: 'bad "image-id" constraint: already set',
  },

  // Everything at once.
  {
    summary: 'kitchen sink together',
    args: [
      'root-disk=8G mem=2T  arch=arm64  cores=4096 cpu-power=9001 container=lxd ' +
        'tags=foo,bar spaces=space1,^space2 instance-type=foo ' +
        'instance-role=foo1',
      'virt-type=kvm zones=az1,az2 allocate-public-ip=true root-disk-source=sourcename image-id=ubuntu-bf2',
    ],
    result: {
      arch: 'arm64',
      container: 'lxd',
      cores: 4096,
      cpuPower: 9001,
      mem: 2 * 1024 * 1024,
      rootDisk: 8192,
      rootDiskSource: 'sourcename',
      tags: ['foo', 'bar'],
      spaces: ['space1', '^space2'],
      instanceRole: 'foo1',
      instanceType: 'foo',
      virtType: 'kvm',
      zones: ['az1', 'az2'],
      allocatePublicIp: true,
      imageId: 'ubuntu-bf2',
    },
  },
  {
    summary: 'kitchen sink separately',
    args: [
      'root-disk=8G',
      'mem=2T',
      'cores=4096',
      'cpu-power=9001',
      'arch=arm64',
      'container=lxd',
      'tags=foo,bar',
      'spaces=space1,^space2',
      'instance-type=foo',
      'virt-type=kvm',
      'zones=az1,az2',
      'allocate-public-ip=false',
      'instance-role=foo2',
    ],
    result: {
      arch: 'arm64',
      container: 'lxd',
      cores: 4096,
      cpuPower: 9001,
      mem: 2 * 1024 * 1024,
      rootDisk: 8192,
      tags: ['foo', 'bar'],
      spaces: ['space1', '^space2'],
      instanceRole: 'foo2',
      instanceType: 'foo',
      virtType: 'kvm',
      zones: ['az1', 'az2'],
      allocatePublicIp: false,
    },
  },
  {
    summary: 'kitchen sink together with spaced zones',
    args: [
      'root-disk=8G mem=2T  arch=arm64  cores=4096 zones=Availability\\ zone\\ 1 cpu-power=9001 container=lxd ' +
        'tags=foo,bar spaces=space1,^space2 instance-type=foo instance-role=foo3',
      'virt-type=kvm',
    ],
    result: {
      arch: 'arm64',
      container: 'lxd',
      cores: 4096,
      cpuPower: 9001,
      mem: 2 * 1024 * 1024,
      rootDisk: 8192,
      tags: ['foo', 'bar'],
      spaces: ['space1', '^space2'],
      instanceRole: 'foo3',
      instanceType: 'foo',
      virtType: 'kvm',
      zones: ['Availability zone 1'],
    },
  },
];

describe('parseConstraints (Juju parseConstraintsTests)', () => {
  const ok = parseCases.filter((t) => t.err === undefined);
  const bad = parseCases.filter((t) => t.err !== undefined);

  test.each(ok)('$summary', ({ args, result }) => {
    const parsed = parseConstraints(...args);
    expect(parsed).toStrictEqual(result);
    // And the string form parses back to the same value.
    expect(parseConstraints(constraintsToString(parsed))).toStrictEqual(parsed);
  });

  test.each(bad)('$summary', ({ args, err }) => {
    expectThrows(() => parseConstraints(...args), ConstraintsError, err!);
  });

  test('errors carry the invalid-constraints code', () => {
    expect(() => parseConstraints('cheese')).toThrow(
      expect.objectContaining({ code: 'invalid-constraints', name: 'ConstraintsError' }),
    );
  });
});

describe('parseConstraints: details beyond Juju’s table', () => {
  test.each([
    ['mem=1.5G', { mem: 1536 }],
    ['mem=0.1', { mem: 1 }],
    ['mem=1.0001G', { mem: 1025 }],
    ['mem=2048.5', { mem: 2049 }],
    ['mem=1e3', { mem: 1000 }],
    ['mem=1_024', { mem: 1024 }], // Go's ParseFloat takes underscores between digits
    ['mem=.5G', { mem: 512 }],
    ['mem=2.G', { mem: 2048 }],
    ['mem=+4G', { mem: 4096 }],
    ['mem=-0', { mem: 0 }],
    ['mem=0x1p10', { mem: 1024 }], // and hexadecimal floats
    ['mem=0x1.8p1G', { mem: 3072 }],
    ['root-disk=0.5T', { rootDisk: 524288 }],
    ['cores=007', { cores: 7 }],
    ['cpu-power=9007199254740991', { cpuPower: Number.MAX_SAFE_INTEGER }],
    ['allocate-public-ip=1', { allocatePublicIp: true }],
    ['allocate-public-ip=F', { allocatePublicIp: false }],
    ['allocate-public-ip=True', { allocatePublicIp: true }],
    ['tags=a,,b', { tags: ['a', '', 'b'] }],
    ['tags=a=b', { tags: ['a=b'] }],
    ['instance-type=\\ leading', { instanceType: ' leading' }],
    ['instance-type=a\\\\ b', { instanceType: 'a\\ b' }],
    ['image-id=ami-1\tmem=2G', { imageId: 'ami-1\tmem=2G' }],
    ['\tmem=2G\n', { mem: 2048 }],
    ['mem=2G\u00a0', { mem: 2048 }], // Go trims every Unicode space
    ['mem=2G\\ ', { mem: 2048 }], // an escaped trailing space is trimmed too
    ['spaces=a-b,^c1', { spaces: ['a-b', '^c1'] }],
  ])('%j', (text, expected) => {
    expect(parseConstraints(text)).toStrictEqual(expected);
  });

  test.each([
    ['mem=G', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    ['mem=4g', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    ['mem=1__0', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    ['mem=_1', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    ['mem=0x10', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    [
      'mem=1e400',
      'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
    ],
    // Go accepts these and produces garbage; we refuse them.
    ['mem=NaN', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    ['mem=Inf', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
    [
      'mem=-Infinity',
      'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
    ],
    [
      'mem=9e15P',
      'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix',
    ],
    ['cores=+1', 'bad "cores" constraint: must be a non-negative integer'],
    ['cores=1_000', 'bad "cores" constraint: must be a non-negative integer'],
    ['cores=9007199254740992', 'bad "cores" constraint: must be a non-negative integer'],
    ['cores=4 cpu-cores=2', 'bad "cores" constraint: already set'],
    ['allocate-public-ip=yes', `bad "allocate-public-ip" constraint: must be 'true' or 'false'`],
    ['container=kvm', 'bad "container" constraint: invalid container type "kvm"'],
    ['arch=i386', 'bad "arch" constraint: "i386" not recognized'],
    ['arch=AMD64', 'bad "arch" constraint: "AMD64" not recognized'],
    ['spaces=a,,b', 'bad "spaces" constraint: "" is not a valid space name'],
    ['spaces=^', 'bad "spaces" constraint: "" is not a valid space name'],
    ['mem', 'malformed constraint "mem"'],
    ['mem =2G', 'malformed constraint "mem"'],
    ['a\\ b', 'malformed constraint "a b"'],
    ['"x"', 'malformed constraint "\\"x\\""'],
    ['bell\u0007', 'malformed constraint "bell\\a"'],
    ['nul\u0000x', 'malformed constraint "nul x"'],
    ['zero\u200bwidth', 'malformed constraint "zero\\u200bwidth"'],
    ['MEM=2G', 'unknown constraint "MEM"'],
    ['mem\t=2G', 'unknown constraint "mem\\t"'],
    ['networks=foo', 'unknown constraint "networks"'],
    ['nested-virtualization=true', 'unknown constraint "nested-virtualization"'],
    ['mem=1G bogus', 'malformed constraint "bogus"'],
    // Deviation: a value ending in a backslash would not survive the string form.
    ['image-id=foo\\', 'bad "image-id" constraint: must not end with a backslash'],
    ['tags=a,b\\', 'bad "tags" constraint: must not end with a backslash'],
  ])('%j is refused', (text, message) => {
    expectThrows(() => parseConstraints(text), ConstraintsError, message);
  });

  test.each([
    // Juju's TestInvalidSpaces
    '%$pace',
    '^foo#2',
    '+',
    'tcp:ip',
    '^^myspace',
    '^^^^^^^^',
    'space^x',
    '&-foo',
    'space/3',
    '^bar=4',
    '&#!',
  ])('invalid space name %j', (name) => {
    const expectName = name.startsWith('^') ? name.slice(1) : name;
    expectThrows(
      () => parseConstraints(`spaces=${name}`),
      ConstraintsError,
      `bad "spaces" constraint: ${JSON.stringify(expectName)} is not a valid space name`,
    );
  });

  test('instance-type with spaces (Juju TestParseInstanceTypeWithSpaces)', () => {
    expect(parseConstraints('arch=amd64 instance-type=with\\ spaces cores=1')).toStrictEqual({
      arch: 'amd64',
      instanceType: 'with spaces',
      cores: 1,
    });
  });

  test('missing tags and spaces stay unset; empty ones are set (Juju)', () => {
    const missing = parseConstraints('arch=amd64 mem=4G cores=1 root-disk=8G');
    expect(missing.tags).toBeUndefined();
    expect(missing.spaces).toBeUndefined();
    const empty = parseConstraints('arch=amd64 mem=4G cores=1 root-disk=8G tags= spaces=');
    expect(empty.tags).toStrictEqual([]);
    expect(empty.spaces).toStrictEqual([]);
  });
});

describe('constraintsToString', () => {
  test.each<[string, Constraints, string]>([
    ['empty', {}, ''],
    ['mem in M', { mem: 2048 }, 'mem=2048M'],
    ['root-disk in M', { rootDisk: 8192 }, 'root-disk=8192M'],
    [
      'zero is key=',
      { mem: 0, cores: 0, cpuPower: 0, rootDisk: 0 },
      'cores= cpu-power= mem= root-disk=',
    ],
    ['empty text and lists', { arch: '', tags: [], zones: [] }, 'arch= tags= zones='],
    ['bools', { allocatePublicIp: false }, 'allocate-public-ip=false'],
    [
      'spaces escaped',
      { instanceType: 'a b', zones: ['x y', 'z'] },
      'instance-type=a\\ b zones=x\\ y,z',
    ],
    [
      "Juju's order",
      {
        imageId: 'ami-1',
        allocatePublicIp: true,
        zones: ['a', 'b'],
        virtType: 'hvm',
        spaces: ['s', '^t'],
        tags: ['t1'],
        rootDiskSource: 'ssd',
        rootDisk: 8192,
        mem: 4096,
        instanceType: 'm5.large',
        instanceRole: 'auto',
        cpuPower: 100,
        cores: 2,
        container: 'lxd',
        arch: 'amd64',
      },
      'arch=amd64 container=lxd cores=2 cpu-power=100 instance-role=auto instance-type=m5.large ' +
        'mem=4096M root-disk=8192M root-disk-source=ssd tags=t1 spaces=s,^t virt-type=hvm zones=a,b ' +
        'allocate-public-ip=true image-id=ami-1',
    ],
  ])('%s', (_name, value, text) => {
    expect(constraintsToString(value)).toBe(text);
  });

  test('canonical form of parsed input', () => {
    expect(constraintsToString(parseConstraints('cpu-cores=2 mem=2G arch=amd64'))).toBe(
      'arch=amd64 cores=2 mem=2048M',
    );
    expect(constraintsToString(parseConstraints('mem=1.5G root-disk=0.5G'))).toBe(
      'mem=1536M root-disk=512M',
    );
  });
});

// Juju's constraintsRoundtripTests
const roundTrips: [string, Constraints][] = [
  ['empty', {}],
  ['Arch1', { arch: '' }],
  ['Arch2', { arch: 'amd64' }],
  ['Container1', { container: '' }],
  ['Container2', { container: 'lxd' }],
  ['CpuCores2', { cores: 0 }],
  ['CpuCores3', { cores: 128 }],
  ['CpuPower2', { cpuPower: 0 }],
  ['CpuPower3', { cpuPower: 250 }],
  ['Mem2', { mem: 0 }],
  ['Mem3', { mem: 98765 }],
  ['RootDisk2', { rootDisk: 0 }],
  ['RootDisk3', { rootDisk: 109876 }],
  ['RootDiskSource2', { rootDiskSource: 'identikit' }],
  ['Tags2', { tags: [] }],
  ['Tags3', { tags: ['foo', 'bar'] }],
  ['Spaces2', { spaces: [] }],
  ['Spaces3', { spaces: ['space1', '^space2'] }],
  ['InstanceRole1', { instanceRole: '' }],
  ['InstanceRole2', { instanceRole: 'foo' }],
  ['InstanceType1', { instanceType: '' }],
  ['InstanceType2', { instanceType: 'foo' }],
  ['Zones2', { zones: [] }],
  ['Zones3', { zones: ['az1', 'az2'] }],
  ['AllocatePublicIP2', { allocatePublicIp: true }],
  ['ImageID1', { imageId: '' }],
  ['ImageID2', { imageId: 'ubuntu-bf2' }],
  [
    'All',
    {
      arch: 'arm64',
      container: 'lxd',
      cores: 4096,
      cpuPower: 9001,
      mem: 18000000000,
      rootDisk: 24000000000,
      rootDiskSource: 'cave',
      tags: ['foo', 'bar'],
      spaces: ['space1', '^space2'],
      instanceType: 'foo',
      zones: ['az1', 'az2'],
      allocatePublicIp: true,
      imageId: 'ubuntu-bf2',
    },
  ],
];

describe('round trip (Juju constraintsRoundtripTests)', () => {
  test.each(roundTrips)('%s', (_name, value) => {
    expect(parseConstraints(constraintsToString(value))).toStrictEqual(value);
  });

  test('JSON round trip keeps the value', () => {
    for (const [, value] of roundTrips) {
      expect(JSON.parse(JSON.stringify(value))).toStrictEqual(value);
    }
  });
});

describe('helpers', () => {
  // Juju's withoutTests
  const initial =
    'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4 spaces=space1,^space2 tags=foo ' +
    'container=lxd instance-type=bar zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2';
  test.each<[string[], string]>([
    [
      ['root-disk'],
      'mem=4G arch=amd64 cpu-power=1000 cores=4 tags=foo spaces=space1,^space2 container=lxd instance-type=bar  zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2',
    ],
    [
      ['mem'],
      'root-disk=8G arch=amd64 cpu-power=1000 cores=4 tags=foo spaces=space1,^space2 container=lxd instance-type=bar  zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2',
    ],
    [
      ['arch'],
      'root-disk=8G mem=4G cpu-power=1000 cores=4 tags=foo spaces=space1,^space2 container=lxd instance-type=bar zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2',
    ],
    [
      ['cpu-cores'],
      'root-disk=8G mem=4G arch=amd64 cpu-power=1000 tags=foo spaces=space1,^space2 container=lxd instance-type=bar  zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2',
    ],
    [
      ['root-disk', 'mem', 'arch'],
      'cpu-power=1000 cores=4 tags=foo spaces=space1,^space2 container=lxd instance-type=bar  zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2',
    ],
    [
      ['container'],
      'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4 tags=foo spaces=space1,^space2 instance-type=bar  zones=az1,az2 allocate-public-ip=true image-id=ubuntu-bf2',
    ],
    [
      ['allocate-public-ip', 'image-id', 'zones'],
      'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4 spaces=space1,^space2 tags=foo container=lxd instance-type=bar',
    ],
  ])('without %j (Juju withoutTests)', (keys, expected) => {
    expect(withoutConstraints(parseConstraints(initial), keys)).toStrictEqual(
      parseConstraints(expected),
    );
  });

  test.each<[string, string[], string[]]>([
    // Juju's hasAnyTests
    [
      'root-disk=8G mem=4G arch=amd64 cpu-power=1000 spaces=space1,^space2 cores=4',
      ['root-disk', 'tags', 'mem', 'spaces'],
      ['root-disk', 'mem', 'spaces'],
    ],
    [
      'root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4 image-id=ubuntu-bf2',
      ['root-disk', 'tags', 'mem', 'image-id'],
      ['root-disk', 'mem', 'image-id'],
    ],
    ['root-disk=8G mem=4G arch=amd64 cpu-power=1000 cores=4', ['tags', 'spaces'], []],
    ['cores=', ['cpu-cores', 'nonsense'], ['cpu-cores']],
  ])('hasAny %s %j (Juju hasAnyTests)', (text, keys, expected) => {
    expect(hasAnyConstraints(parseConstraints(text), keys)).toStrictEqual(expected);
  });

  test.each<[string, boolean]>([
    // Juju's TestIsEmpty
    ['', true],
    ['arch=amd64', false],
    ['tags=', false],
    ['spaces=', false],
    ['mem=', false],
    ['arch=', false],
    ['root-disk=', false],
    ['cpu-power=', false],
    ['cores=', false],
    ['container=', false],
    ['instance-role=', false],
    ['instance-type=', false],
    ['zones=', false],
    ['allocate-public-ip=', true],
    ['image-id=', false],
  ])('isEmpty(%j) is %s (Juju TestIsEmpty)', (text, empty) => {
    expect(isEmptyConstraints(parseConstraints(text))).toBe(empty);
  });

  test('spaces, zones, container and instance type (Juju TestIncludeExcludeAndHasSpaces et al.)', () => {
    const c = parseConstraints('spaces=space1,^space2,space3,^space4');
    expect(includedSpaces(c)).toStrictEqual(['space1', 'space3']);
    expect(excludedSpaces(c)).toStrictEqual(['space2', 'space4']);
    expect(hasZones(parseConstraints('zones=az1,az2,az3'))).toBe(true);
    expect(hasZones(parseConstraints('zones='))).toBe(false);
    expect(hasContainer(parseConstraints(''))).toBe(false);
    expect(hasContainer(parseConstraints('container=lxd'))).toBe(true);
    expect(hasContainer(parseConstraints('container=none'))).toBe(false);
    expect(hasInstanceType(parseConstraints('arch=amd64'))).toBe(false);
    expect(hasInstanceType(parseConstraints('arch=amd64 instance-type=foo'))).toBe(true);
    expect(hasInstanceType(parseConstraints('instance-type='))).toBe(false);
  });
});
