import {
  checkAddMachine,
  ConstraintsError,
  isContainerMachineId,
  isJujuMachineId,
  isValidMachineId,
  MACHINE_SCOPE,
  parentMachineId,
  parseConstraints,
  type Placement,
  PlacementError,
  parsePlacement,
  parseRawPlacement,
  placementToString,
} from '../../../core';
import { expectThrows } from './helpers';

describe('parseRawPlacement (Juju TestParsePlacement)', () => {
  test.each<[string, { scope: string; directive: string } | undefined]>([
    ['', undefined],
    ['0', { scope: MACHINE_SCOPE, directive: '0' }],
    ['0/lxd/0', { scope: MACHINE_SCOPE, directive: '0/lxd/0' }],
    ['lxd:0', { scope: 'lxd', directive: '0' }],
    ['lxd', { scope: 'lxd', directive: '' }],
    ['non:standard', { scope: 'non', directive: 'standard' }],
    ['#:3', { scope: MACHINE_SCOPE, directive: '3' }],
    ['model:zone=a:b', { scope: 'model', directive: 'zone=a:b' }],
  ])('%j', (text, expected) => {
    expect(parseRawPlacement(text)).toStrictEqual(expected);
  });

  test.each<[string, string]>([
    ['#:x', 'invalid value "x" for "#" scope: expected machine-id'],
    ['lxd:x', 'invalid value "x" for "lxd" scope: expected machine-id'],
    ['lxd:', 'invalid value "" for "lxd" scope: expected machine-id'],
    ['lxd:01', 'invalid value "01" for "lxd" scope: expected machine-id'],
    ['non-standard', 'placement scope missing'],
    [':non-standard', 'placement scope missing'],
    ['kvm', 'placement scope missing'],
  ])('%j is refused', (text, message) => {
    expectThrows(() => parseRawPlacement(text), PlacementError, message);
  });
});

describe('parsePlacement', () => {
  test.each<[string, Placement | undefined]>([
    ['', undefined],
    ['3', { kind: 'machine', machineId: '3' }],
    ['0/lxd/0', { kind: 'machine', machineId: '0/lxd/0' }],
    ['lxd:3', { kind: 'container', containerType: 'lxd', machineId: '3' }],
    ['lxd', { kind: 'container', containerType: 'lxd' }],
    ['zone=us-east-1a', { kind: 'zone', zone: 'us-east-1a' }],
    ['subnet=subnet-0abc', { kind: 'subnet', subnet: 'subnet-0abc' }],
    ['subnet=10.0.0.0/24', { kind: 'subnet', subnet: '10.0.0.0/24' }],
    ['ssh:ubuntu@10.0.0.5', { kind: 'ssh', host: 'ubuntu@10.0.0.5' }],
    ['ssh:host.example.com', { kind: 'ssh', host: 'host.example.com' }],
    ['ssh:ubuntu@[::1]', { kind: 'ssh', host: 'ubuntu@[::1]' }],
  ])('%j', (text, expected) => {
    expect(parsePlacement(text)).toStrictEqual(expected);
  });

  test('a directive scoped to the model is the provider’s', () => {
    expect(parsePlacement('demo:zone=us-east-1b', { modelName: 'demo' })).toStrictEqual({
      kind: 'zone',
      zone: 'us-east-1b',
    });
  });

  test.each<[string, string]>([
    ['lxd:x', 'invalid value "x" for "lxd" scope: expected machine-id'],
    ['#:x', 'invalid value "x" for "#" scope: expected machine-id'],
    [':zone=a', 'placement scope missing'],
    ['zone=', 'invalid availability zone ""'],
    ['subnet=', 'unable to find subnet ""'],
    ['non-standard', 'unknown placement directive: non-standard'],
    ['region=us-east-1', 'unknown placement directive: region=us-east-1'],
    ['kvm', 'unknown placement directive: kvm'],
    ['-1', 'unknown placement directive: -1'],
    ['non:standard', 'invalid model name "non"'],
    ['zone=a:b', 'invalid model name "zone=a"'],
    ['ssh:', 'invalid value "" for "ssh" scope: expected [user@]host'],
    ['ssh:ubuntu@', 'invalid value "ubuntu@" for "ssh" scope: expected [user@]host'],
  ])('%j is refused', (text, message) => {
    expectThrows(() => parsePlacement(text), PlacementError, message);
  });

  test('errors carry the invalid-placement code', () => {
    expect(() => parsePlacement('lxd:x')).toThrow(
      expect.objectContaining({ code: 'invalid-placement', name: 'PlacementError' }),
    );
  });

  test.each<Placement>([
    { kind: 'machine', machineId: '12' },
    { kind: 'machine', machineId: '1/lxd/4' },
    { kind: 'container', containerType: 'lxd', machineId: '7' },
    { kind: 'container', containerType: 'lxd' },
    { kind: 'zone', zone: 'eu-west-2c' },
    { kind: 'subnet', subnet: '172.31.0.0/20' },
    { kind: 'ssh', host: 'me@box:2222' },
  ])('placementToString round trip %j', (placement) => {
    expect(parsePlacement(placementToString(placement))).toStrictEqual(placement);
  });
});

describe('machine ids', () => {
  test.each<[string, boolean, boolean]>([
    // id, ours (N or N/lxd/M), Juju's grammar
    ['0', true, true],
    ['42', true, true],
    ['1/lxd/0', true, true],
    ['1/lxd/12', true, true],
    ['01', false, false],
    ['-1', false, false],
    ['', false, false],
    ['1/lxd', false, false],
    ['1/lxd/01', false, false],
    ['1/kvm/0', false, true],
    ['1/lxd/0/lxd/1', false, true],
    ['1/LXD/0', false, false],
    ['a', false, false],
    ['1 ', false, false],
  ])('%j', (id, ours, juju) => {
    expect(isValidMachineId(id)).toBe(ours);
    expect(isJujuMachineId(id)).toBe(juju);
  });

  test('containers and their hosts', () => {
    expect(isContainerMachineId('3')).toBe(false);
    expect(isContainerMachineId('3/lxd/1')).toBe(true);
    expect(parentMachineId('3')).toBeUndefined();
    expect(parentMachineId('3/lxd/1')).toBe('3');
    expect(parentMachineId('3/lxd/1/lxd/0')).toBe('3/lxd/1');
    expect(parentMachineId('x/y/z')).toBeUndefined();
  });
});

describe('checkAddMachine (Juju add-machine rules)', () => {
  const place = (text: string): Placement => parsePlacement(text)!;

  test.each<[string, number | undefined, string | undefined]>([
    ['no placement', 1, undefined],
    ['no placement, -n 5', 5, undefined],
    ['new container on a new machine', 1, 'lxd'],
    ['new containers on new machines, -n 2', 2, 'lxd'],
    ['container on machine 3', 1, 'lxd:3'],
    ['zone', 1, 'zone=us-east-1a'],
    ['subnet', undefined, 'subnet=subnet-1'],
    ['manual machine', 1, 'ssh:ubuntu@host'],
  ])('%s is allowed', (_desc, count, placement) => {
    expect(() =>
      checkAddMachine({ count, placement: placement === undefined ? undefined : place(placement) }),
    ).not.toThrow();
  });

  test.each<[number, string, string]>([
    [2, 'zone=us-east-1a', 'cannot use -n when specifying a placement directive'],
    [3, 'lxd:3', 'cannot use -n when specifying a placement directive'],
    [2, 'ssh:ubuntu@host', 'cannot use -n when specifying a placement directive'],
    [2, '3', 'cannot use -n when specifying a placement directive'],
    [1, '3', 'machine-id cannot be specified when adding machines'],
    [1, '0/lxd/0', 'machine-id cannot be specified when adding machines'],
  ])('-n %d with %j is refused', (count, placement, message) => {
    expectThrows(
      () => checkAddMachine({ count, placement: place(placement) }),
      PlacementError,
      message,
    );
  });

  test.each<[string, string]>([
    ['container=lxd', 'container constraint "lxd" not allowed when adding a machine'],
    ['container=', 'container constraint "" not allowed when adding a machine'],
  ])('constraint %j is refused', (text, message) => {
    expectThrows(
      () => checkAddMachine({ constraints: parseConstraints(text) }),
      ConstraintsError,
      message,
    );
  });
});
