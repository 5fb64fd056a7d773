import {
  type AvailabilityZone,
  checkPlacementZone,
  NoSuitableZoneError,
  orderZones,
  PlacementError,
} from '../../../core';
import { expectThrows } from './helpers';

const zones: AvailabilityZone[] = [
  { name: 'us-east-1c', state: 'available' },
  { name: 'us-east-1a', state: 'available' },
  { name: 'us-east-1b', state: 'available' },
  { name: 'us-east-1d', state: 'impaired' },
  { name: 'us-east-1e', state: 'unavailable' },
];

describe('orderZones', () => {
  test('least populous first, ties by name, only available zones', () => {
    expect(orderZones({ machineId: '0', zones, population: {} })).toStrictEqual([
      'us-east-1a',
      'us-east-1b',
      'us-east-1c',
    ]);
    expect(
      orderZones({
        machineId: '0',
        zones,
        population: { 'us-east-1a': 2, 'us-east-1b': 1, 'us-east-1d': 0 },
      }),
    ).toStrictEqual(['us-east-1c', 'us-east-1b', 'us-east-1a']);
  });

  test('population may be a Map; names like __proto__ are just zone names', () => {
    const population = new Map([
      ['us-east-1c', 3],
      ['us-east-1a', 1],
    ]);
    expect(orderZones({ machineId: '0', zones, population })).toStrictEqual([
      'us-east-1b',
      'us-east-1a',
      'us-east-1c',
    ]);
    const odd: AvailabilityZone[] = [
      { name: 'constructor', state: 'available' },
      { name: '__proto__', state: 'available' },
    ];
    expect(orderZones({ machineId: '0', zones: odd, population: {} })).toStrictEqual([
      '__proto__',
      'constructor',
    ]);
  });

  test('zones the machine failed in are left out', () => {
    expect(
      orderZones({
        machineId: '4',
        zones,
        population: {},
        failedZones: ['us-east-1a', 'us-east-1c'],
      }),
    ).toStrictEqual(['us-east-1b']);
  });

  test('a zones constraint narrows the choice; an empty one does not', () => {
    expect(
      orderZones({
        machineId: '4',
        zones,
        population: { 'us-east-1c': 5 },
        zonesConstraint: ['us-east-1c', 'us-east-1b', 'us-east-1d'],
      }),
    ).toStrictEqual(['us-east-1b', 'us-east-1c']);
    expect(orderZones({ machineId: '4', zones, population: {}, zonesConstraint: [] })).toHaveLength(
      3,
    );
  });

  test('a zone= placement allows only that zone', () => {
    expect(
      orderZones({
        machineId: '4',
        zones,
        population: { 'us-east-1b': 9 },
        placementZone: 'us-east-1b',
      }),
    ).toStrictEqual(['us-east-1b']);
  });

  test('nine machines of one group placed one after another end 3/3/3', () => {
    const population: Record<string, number> = {};
    for (let i = 0; i < 9; i++) {
      const zone = orderZones({ machineId: String(i), zones, population })[0]!;
      population[zone] = (population[zone] ?? 0) + 1;
    }
    expect(population).toStrictEqual({ 'us-east-1a': 3, 'us-east-1b': 3, 'us-east-1c': 3 });
  });

  test.each<[string, Parameters<typeof orderZones>[0]]>([
    ['no zones at all', { machineId: '0', zones: [], population: {} }],
    [
      'every zone failed',
      {
        machineId: '0',
        zones,
        population: {},
        failedZones: ['us-east-1a', 'us-east-1b', 'us-east-1c'],
      },
    ],
    [
      'a zones constraint naming no known zone (Juju: zones=az9)',
      { machineId: '0', zones, population: {}, zonesConstraint: ['az9'] },
    ],
    [
      'placement in an impaired zone',
      { machineId: '0', zones, population: {}, placementZone: 'us-east-1d' },
    ],
    [
      'placement outside the zones constraint',
      {
        machineId: '0',
        zones,
        population: {},
        placementZone: 'us-east-1a',
        zonesConstraint: ['us-east-1b'],
      },
    ],
    ['a container id', { machineId: '2/lxd/0', zones: [], population: {} }],
  ])('%s: no suitable zone', (_desc, choice) => {
    expectThrows(
      () => orderZones(choice),
      NoSuitableZoneError,
      `suitable availability zone for machine ${choice.machineId} not found`,
    );
  });
});

describe('checkPlacementZone', () => {
  test('an available zone passes', () => {
    expect(() => checkPlacementZone('us-east-1a', zones)).not.toThrow();
  });

  test.each<[string, string]>([
    ['us-east-1z', 'invalid availability zone "us-east-1z"'],
    ['us-east-1d', 'availability zone "us-east-1d" is "impaired"'],
    ['us-east-1e', 'availability zone "us-east-1e" is "unavailable"'],
  ])('%j is refused', (zone, message) => {
    expectThrows(() => checkPlacementZone(zone, zones), PlacementError, message);
  });
});
