import {
  type Base,
  BaseMismatchError,
  basesEqual,
  baseToString,
  checkUnitMachineAssignment,
  checkContainerOnHostBase,
  checkUnitOnMachineBase,
  compareBases,
  InvalidBaseError,
  isCompatibleBase,
  parseBase,
  parseRequestBase,
  PlacementError,
  ubuntuCodename,
  ubuntuImageNamePattern,
} from '../../../core';
import { expectThrows } from './helpers';

describe('parseBase', () => {
  test.each<[string, Base, string]>([
    ['ubuntu@22.04', { os: 'ubuntu', track: '22.04', risk: 'stable' }, 'ubuntu@22.04'],
    ['ubuntu@22.04/stable', { os: 'ubuntu', track: '22.04', risk: 'stable' }, 'ubuntu@22.04'],
    ['ubuntu@22.04/edge', { os: 'ubuntu', track: '22.04', risk: 'edge' }, 'ubuntu@22.04/edge'],
    [
      'ubuntu@24.04/candidate',
      { os: 'ubuntu', track: '24.04', risk: 'candidate' },
      'ubuntu@24.04/candidate',
    ],
    ['Ubuntu@20.04', { os: 'ubuntu', track: '20.04', risk: 'stable' }, 'ubuntu@20.04'],
    ['centos@9/beta', { os: 'centos', track: '9', risk: 'beta' }, 'centos@9/beta'],
    [
      'ubuntu@22.04-blah',
      { os: 'ubuntu', track: '22.04-blah', risk: 'stable' },
      'ubuntu@22.04-blah',
    ],
  ])('%j', (text, base, display) => {
    expect(parseBase(text)).toStrictEqual(base);
    expect(baseToString(parseBase(text))).toBe(display);
    expect(parseBase(baseToString(base))).toStrictEqual(base);
  });

  test.each<[string, string]>([
    ['foo', "expected base string to contain os and channel separated by '@'"],
    ['', "expected base string to contain os and channel separated by '@'"],
    ['ubuntu@22.04@x', "expected base string to contain os and channel separated by '@'"],
    ['ubuntu@', 'empty channel not valid'],
    ['ubuntu@22.04/stable/x', 'channel is malformed and has too many components "22.04/stable/x"'],
    ['ubuntu@22.04/foo', 'risk in channel "22.04/foo" not valid'],
    ['ubuntu@/stable', 'track in channel "/stable" not valid'],
    ['@22.04', 'missing base os or channel not valid'],
  ])('%j is refused', (text, message) => {
    expectThrows(() => parseBase(text), InvalidBaseError, message);
  });
});

describe('parseRequestBase: what a request may give', () => {
  // Juju's own vectors stay accepted (core/base base_test.go: 22.04-blah, 22.04.1234, centos@7, …)
  test.each<[string, Base]>([
    ['ubuntu@22.04', { os: 'ubuntu', track: '22.04', risk: 'stable' }],
    ['ubuntu@22.04-blah', { os: 'ubuntu', track: '22.04-blah', risk: 'stable' }],
    ['ubuntu@22.04.1234', { os: 'ubuntu', track: '22.04.1234', risk: 'stable' }],
    ['ubuntu@all', { os: 'ubuntu', track: 'all', risk: 'stable' }],
    ['ubuntu@24.04/edge', { os: 'ubuntu', track: '24.04', risk: 'edge' }],
    ['Ubuntu@20.04', { os: 'ubuntu', track: '20.04', risk: 'stable' }],
    ['centos@7', { os: 'centos', track: '7', risk: 'stable' }],
    ['centos@9/candidate', { os: 'centos', track: '9', risk: 'candidate' }],
    ['genericlinux@x_1', { os: 'genericlinux', track: 'x_1', risk: 'stable' }],
    ['windows@2022', { os: 'windows', track: '2022', risk: 'stable' }],
  ])('%j', (text, base) => {
    expect(parseRequestBase(text)).toStrictEqual(base);
  });

  test.each<[string, string]>([
    // the injection: a track that is a shell fragment
    [
      'ubuntu@22.04 || touch pwned;#',
      'parsing base "ubuntu@22.04 || touch pwned;#": track in channel "22.04 || touch pwned;#" not valid',
    ],
    [
      'ubuntu@22.04;reboot',
      'parsing base "ubuntu@22.04;reboot": track in channel "22.04;reboot" not valid',
    ],
    [
      'ubuntu@$(id)/edge',
      'parsing base "ubuntu@$(id)/edge": track in channel "$(id)/edge" not valid',
    ],
    ['ubuntu@`id`', 'parsing base "ubuntu@`id`": track in channel "`id`" not valid'],
    ["ubuntu@22.04'", 'parsing base "ubuntu@22.04\'": track in channel "22.04\'" not valid'],
    [
      'ubuntu@22.04\n\u0000',
      'parsing base "ubuntu@22.04\\n\\x00": track in channel "22.04\\n\\x00" not valid',
    ],
    ['ubuntu@ 22.04', 'parsing base "ubuntu@ 22.04": track in channel " 22.04" not valid'],
    // OS names Juju does not know (core/os/ostype), and kubernetes, which names no machine
    ['kubuntu@20.04', 'parsing base "kubuntu@20.04": unknown os type "kubuntu" not valid'],
    ['kubernetes@1.30', 'parsing base "kubernetes@1.30": unknown os type "kubernetes" not valid'],
    ['ubuntu;id@22.04', 'parsing base "ubuntu;id@22.04": unknown os type "ubuntu;id" not valid'],
    // parse errors stay Juju's own
    ['ubuntu@22.04/foo', 'risk in channel "22.04/foo" not valid'],
    ['ubuntu', "expected base string to contain os and channel separated by '@'"],
  ])('%j is refused', (text, message) => {
    expectThrows(() => parseRequestBase(text), InvalidBaseError, message);
    expect(() => parseRequestBase(text)).toThrow(expect.objectContaining({ code: 'bad-request' }));
  });
});

describe('container on host', () => {
  test.each<[string, string]>([
    ['ubuntu@22.04', 'ubuntu@22.04'],
    // tracks may differ, as Juju launches containers of other releases
    ['ubuntu@22.04', 'ubuntu@24.04'],
    ['ubuntu@24.04/edge', 'ubuntu@20.04'],
    // Linux on Linux (Juju's OSType.EquivalentTo)
    ['ubuntu@22.04', 'centos@9'],
  ])('%j on %j is allowed', (container, host) => {
    expect(() => checkContainerOnHostBase(container, host)).not.toThrow();
  });

  test.each<[string, string, string]>([
    [
      'ubuntu@22.04',
      'windows@2022',
      'base does not match: container has "ubuntu@22.04", machine has "windows@2022"',
    ],
    [
      'windows@2022',
      'ubuntu@22.04',
      'base does not match: container has "windows@2022", machine has "ubuntu@22.04"',
    ],
  ])('%j on %j is refused', (container, host, message) => {
    expectThrows(() => checkContainerOnHostBase(container, host), BaseMismatchError, message);
  });
});

describe('comparing bases', () => {
  test('equality and compatibility', () => {
    expect(basesEqual('ubuntu@22.04', 'ubuntu@22.04/stable')).toBe(true);
    expect(basesEqual('ubuntu@22.04', 'ubuntu@22.04/edge')).toBe(false);
    expect(isCompatibleBase('ubuntu@22.04', 'ubuntu@22.04/edge')).toBe(true);
    expect(isCompatibleBase('ubuntu@22.04', 'ubuntu@24.04')).toBe(false);
    expect(isCompatibleBase('ubuntu@22.04', 'centos@22.04')).toBe(false);
  });

  test('order: os, then version numerically, then risk', () => {
    const sorted = [
      'ubuntu@24.04',
      'ubuntu@22.10',
      'centos@9',
      'ubuntu@22.04/edge',
      'ubuntu@20.04',
      'ubuntu@22.04',
      'ubuntu@9.10',
    ].sort(compareBases);
    expect(sorted).toStrictEqual([
      'centos@9',
      'ubuntu@9.10',
      'ubuntu@20.04',
      'ubuntu@22.04',
      'ubuntu@22.04/edge',
      'ubuntu@22.10',
      'ubuntu@24.04',
    ]);
    expect(compareBases('ubuntu@22.04', 'ubuntu@22.04/stable')).toBe(0);
  });
});

describe('Ubuntu codenames and image names', () => {
  test.each<[string, string | undefined]>([
    ['ubuntu@20.04', 'focal'],
    ['ubuntu@22.04', 'jammy'],
    ['ubuntu@24.04', 'noble'],
    ['ubuntu@24.04/edge', 'noble'],
    ['ubuntu@18.04', undefined],
    ['centos@22.04', undefined],
  ])('%j', (base, codename) => {
    expect(ubuntuCodename(base)).toBe(codename);
  });

  test('image name pattern', () => {
    expect(ubuntuImageNamePattern('ubuntu@22.04', 'amd64')).toBe(
      'ubuntu/images/*/ubuntu-jammy-22.04-amd64-server-*',
    );
    expect(ubuntuImageNamePattern(parseBase('ubuntu@24.04'), 'arm64')).toBe(
      'ubuntu/images/*/ubuntu-noble-24.04-arm64-server-*',
    );
    expect(ubuntuImageNamePattern('ubuntu@16.04', 'amd64')).toBeUndefined();
  });
});

describe('unit on machine', () => {
  test('compatible bases pass', () => {
    expect(() => checkUnitOnMachineBase('ubuntu@22.04', 'ubuntu@22.04')).not.toThrow();
    expect(() =>
      checkUnitOnMachineBase('ubuntu@22.04/edge', parseBase('ubuntu@22.04')),
    ).not.toThrow();
  });

  test.each<[string, string, string]>([
    [
      'ubuntu@22.04',
      'ubuntu@20.04',
      'base does not match: unit has "ubuntu@22.04", machine has "ubuntu@20.04"',
    ],
    [
      'ubuntu@24.04/edge',
      'centos@24.04',
      'base does not match: unit has "ubuntu@24.04/edge", machine has "centos@24.04"',
    ],
  ])('%j on %j is refused', (unit, machine, message) => {
    expectThrows(() => checkUnitOnMachineBase(unit, machine), BaseMismatchError, message);
    expect(() => checkUnitOnMachineBase(unit, machine)).toThrow(
      expect.objectContaining({ code: 'base-mismatch' }),
    );
  });

  test('a subordinate is never placed directly', () => {
    expectThrows(
      () =>
        checkUnitMachineAssignment({
          subordinate: true,
          unitBase: 'ubuntu@22.04',
          machineBase: 'ubuntu@22.04',
        }),
      PlacementError,
      'unit is a subordinate',
    );
    expectThrows(
      () =>
        checkUnitMachineAssignment({
          subordinate: false,
          unitBase: 'ubuntu@22.04',
          machineBase: 'ubuntu@24.04',
        }),
      BaseMismatchError,
      'base does not match: unit has "ubuntu@22.04", machine has "ubuntu@24.04"',
    );
  });
});
