import {
  type Base,
  BaseMismatchError,
  basesEqual,
  baseToString,
  checkUnitMachineAssignment,
  checkUnitOnMachineBase,
  compareBases,
  InvalidBaseError,
  isCompatibleBase,
  parseBase,
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
