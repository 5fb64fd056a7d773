import {
  leastPopulousPartition,
  MAX_PLACEMENT_GROUP_NAME,
  orderZones,
  PARTITION_COUNT,
  placementGroupName,
} from '../../../core';

describe('leastPopulousPartition', () => {
  test.each<[string, Record<number, number>, number, number]>([
    ['empty: the first partition', {}, 7, 1],
    ['the least populous', { 1: 2, 2: 1, 3: 0, 4: 2, 5: 2, 6: 2, 7: 2 }, 7, 3],
    ['ties go to the lowest number', { 1: 1, 2: 1, 3: 0, 4: 0 }, 7, 3],
    ['a partition missing counts as empty', { 1: 1, 2: 1 }, 7, 3],
    ['every partition full once: the first again', { 1: 1, 2: 1, 3: 1 }, 3, 1],
    ['partitions outside 1..count are ignored', { 0: -5, 1: 1, 8: -1 }, 2, 2],
    ['a single partition', { 1: 9 }, 1, 1],
  ])('%s', (_name, counts, count, expected) => {
    expect(leastPopulousPartition(counts, count)).toBe(expected);
  });

  test('defaults to seven partitions', () => {
    expect(PARTITION_COUNT).toBe(7);
    expect(leastPopulousPartition({ 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1 })).toBe(7);
    expect(leastPopulousPartition({ 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1 })).toBe(1);
  });

  test('a count that is not a positive integer is refused', () => {
    expect(() => leastPopulousPartition({}, 0)).toThrow(RangeError);
    expect(() => leastPopulousPartition({}, 1.5)).toThrow(RangeError);
  });

  test('machines placed one after the other spread within ±1 per zone and over zones', () => {
    const zones = ['us-east-1a', 'us-east-1b', 'us-east-1c'].map((name) => ({
      name,
      state: 'available',
    }));
    const perZone: Record<string, number> = {};
    const perPartition: Record<string, Record<number, number>> = {};
    for (let i = 0; i < 14; i++) {
      const zone = orderZones({ machineId: String(i), zones, population: perZone })[0]!;
      const counts = (perPartition[zone] ??= {});
      const p = leastPopulousPartition(counts);
      counts[p] = (counts[p] ?? 0) + 1;
      perZone[zone] = (perZone[zone] ?? 0) + 1;
    }
    expect(perZone).toStrictEqual({ 'us-east-1a': 5, 'us-east-1b': 5, 'us-east-1c': 4 });
    for (const counts of Object.values(perPartition)) {
      const filled = Array.from({ length: PARTITION_COUNT }, (_, k) => counts[k + 1] ?? 0);
      expect(Math.max(...filled) - Math.min(...filled)).toBeLessThanOrEqual(1);
    }
  });
});

describe('placementGroupName', () => {
  test('names the model uid and the application', () => {
    expect(placementGroupName('1f0c-uid', 'wordpress')).toBe('juju-1f0c-uid-wordpress');
  });

  test('stays within EC2 limit and distinct for long names', () => {
    const long = 'a'.repeat(300);
    const a = placementGroupName('uid', `${long}x`);
    const b = placementGroupName('uid', `${long}y`);
    expect(a.length).toBe(MAX_PLACEMENT_GROUP_NAME);
    expect(b.length).toBe(MAX_PLACEMENT_GROUP_NAME);
    expect(a).not.toBe(b);
    expect(a.startsWith('juju-uid-aaa')).toBe(true);
  });

  test('one model and application always get the same name', () => {
    expect(placementGroupName('u', 'x'.repeat(400))).toBe(placementGroupName('u', 'x'.repeat(400)));
  });
});
