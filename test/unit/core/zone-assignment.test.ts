import {
  assignZone,
  bump,
  claimGroups,
  countedGroups,
  partitionKey,
  positiveCounts,
  regroupDelta,
  type CountedMachine,
  type WorkingCounters,
  type ZoneCounts,
} from '../../../core/zone-assignment';

/** Least populous zone first, ties by name: the order a claim's `order` usually gives. */
const leastFirst = (zones: readonly string[]) => (population: ZoneCounts) =>
  [...zones].sort((a, b) => (population[a] ?? 0) - (population[b] ?? 0) || a.localeCompare(b));

const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

function counters(
  entries: Record<string, ZoneCounts>,
  partitions: Record<string, ZoneCounts> = {},
) {
  const working: WorkingCounters = new Map();
  for (const [g, counts] of Object.entries(entries))
    working.set(g, { version: 3, counts: { ...counts }, partitions: { ...partitions[g] } });
  return working;
}

describe('countedGroups / claimGroups', () => {
  test.each<[string, string[], string[]]>([
    ['no application: the bare machines group', [], ['']],
    ['one application', ['wp'], ['wp']],
    ['sorted, without repeats', ['wp', 'db', 'wp'], ['db', 'wp']],
  ])('%s', (_name, apps, expected) => {
    expect(countedGroups(apps)).toEqual(expected);
  });

  test('a claim counts the groups it asks for and those the machine records', () => {
    expect(claimGroups({ groups: ['wp'] }, { applications: ['db'] })).toEqual(['db', 'wp']);
    expect(claimGroups({ groups: [] }, undefined)).toEqual(['']);
    expect(claimGroups({ groups: [] }, { applications: ['db'] })).toEqual(['db']);
  });
});

describe('bump', () => {
  test('adds to a zone and a partition, creating the counter at version 0', () => {
    const working: WorkingCounters = new Map();
    bump(working, 'wp', 'us-east-1a', 1, 2);
    expect(working.get('wp')).toEqual({
      version: 0,
      counts: { 'us-east-1a': 1 },
      partitions: { [partitionKey('us-east-1a', 2)]: 1 },
    });
  });

  test('never goes below zero', () => {
    const working = counters({ wp: { 'us-east-1a': 1 } });
    bump(working, 'wp', 'us-east-1a', -1);
    bump(working, 'wp', 'us-east-1a', -1);
    bump(working, 'wp', 'us-east-1b', -1);
    expect(working.get('wp')!.counts).toEqual({ 'us-east-1a': 0, 'us-east-1b': 0 });
    expect(working.get('wp')!.version).toBe(3);
  });
});

describe('assignZone', () => {
  test.each<{
    name: string;
    counts: Record<string, ZoneCounts>;
    groups: string[];
    machine: CountedMachine;
    zone: string;
    after: Record<string, ZoneCounts>;
    touched: string[];
  }>([
    {
      name: 'a new machine goes to the least populous zone of its group',
      counts: { wp: { 'us-east-1a': 2, 'us-east-1b': 1, 'us-east-1c': 2 } },
      groups: ['wp'],
      machine: {},
      zone: 'us-east-1b',
      after: { wp: { 'us-east-1a': 2, 'us-east-1b': 2, 'us-east-1c': 2 } },
      touched: ['wp'],
    },
    {
      name: 'a machine in two groups sees the sum of their counts',
      counts: {
        db: { 'us-east-1a': 0, 'us-east-1b': 3 },
        wp: { 'us-east-1a': 2, 'us-east-1c': 1 },
      },
      groups: ['wp'],
      machine: { applications: ['db'] },
      zone: 'us-east-1c',
      after: {
        db: { 'us-east-1a': 0, 'us-east-1b': 3, 'us-east-1c': 1 },
        wp: { 'us-east-1a': 2, 'us-east-1c': 2 },
      },
      touched: ['db', 'wp'],
    },
    {
      name: 'a machine counted already moves: its old zone is left first',
      counts: { wp: { 'us-east-1a': 1, 'us-east-1b': 1, 'us-east-1c': 1 } },
      groups: ['wp'],
      machine: { countedZone: 'us-east-1a', countedGroups: ['wp'] },
      zone: 'us-east-1a',
      after: { wp: { 'us-east-1a': 1, 'us-east-1b': 1, 'us-east-1c': 1 } },
      touched: ['wp'],
    },
    {
      name: 'a move out of an old group touches that group too',
      counts: { '': { 'us-east-1a': 1 }, wp: { 'us-east-1a': 1, 'us-east-1b': 0 } },
      groups: ['wp'],
      machine: { countedZone: 'us-east-1a', countedGroups: [''] },
      zone: 'us-east-1b',
      after: { '': { 'us-east-1a': 0 }, wp: { 'us-east-1a': 1, 'us-east-1b': 1 } },
      touched: ['', 'wp'],
    },
  ])('$name', ({ counts, groups, machine, zone, after, touched }) => {
    const working = counters(counts);
    const got = assignZone(working, { groups, order: leastFirst(ZONES) }, machine);
    expect(got).toEqual({
      ok: true,
      zone,
      groups: countedGroups([...groups, ...(machine.applications ?? [])]),
      touched: new Set(touched),
    });
    for (const [g, c] of Object.entries(after)) expect(working.get(g)!.counts).toEqual(c);
  });

  test('availability sets: the least populous partition of the chosen zone over the groups', () => {
    const working = counters(
      { wp: { 'us-east-1a': 3, 'us-east-1b': 5 } },
      {
        wp: {
          [partitionKey('us-east-1a', 1)]: 2,
          [partitionKey('us-east-1a', 2)]: 1,
          [partitionKey('us-east-1b', 3)]: 0,
        },
      },
    );
    const got = assignZone(
      working,
      { groups: ['wp'], order: leastFirst(['us-east-1a', 'us-east-1b']), partitions: 3 },
      {},
    );
    expect(got).toEqual({
      ok: true,
      zone: 'us-east-1a',
      partition: 3,
      groups: ['wp'],
      touched: new Set(['wp']),
    });
    expect(working.get('wp')!.partitions[partitionKey('us-east-1a', 3)]).toBe(1);
    expect(working.get('wp')!.counts['us-east-1a']).toBe(4);
  });

  test('a move in availability-set mode gives its old partition back', () => {
    const working = counters(
      { wp: { 'us-east-1a': 1 } },
      { wp: { [partitionKey('us-east-1a', 2)]: 1 } },
    );
    const got = assignZone(
      working,
      { groups: ['wp'], order: () => ['us-east-1b'], partitions: 7 },
      { countedZone: 'us-east-1a', countedGroups: ['wp'], countedPartition: 2 },
    );
    expect(got).toMatchObject({ ok: true, zone: 'us-east-1b', partition: 1 });
    expect(working.get('wp')!.partitions).toEqual({
      [partitionKey('us-east-1a', 2)]: 0,
      [partitionKey('us-east-1b', 1)]: 1,
    });
    expect(working.get('wp')!.counts).toEqual({ 'us-east-1a': 0, 'us-east-1b': 1 });
  });

  test('an order that throws fails this claim alone and leaves the counts as they were', () => {
    const working = counters({ wp: { 'us-east-1a': 2, 'us-east-1b': 1 } });
    const refusal = new Error('no suitable zone');
    const got = assignZone(
      working,
      {
        groups: ['wp'],
        order: () => {
          throw refusal;
        },
      },
      { countedZone: 'us-east-1a', countedGroups: ['wp'] },
    );
    expect(got).toEqual({ ok: false, error: refusal });
    expect(working.get('wp')!.counts).toEqual({ 'us-east-1a': 2, 'us-east-1b': 1 });
  });

  test('an order with no zone leaves a counted machine counted where it was', () => {
    const working = counters({ wp: { 'us-east-1a': 2, 'us-east-1b': 1 } });
    const got = assignZone(
      working,
      { groups: ['wp'], order: () => [] },
      { countedZone: 'us-east-1a', countedGroups: ['wp'] },
    );
    expect(got).toEqual({ ok: false, error: new Error('no zone to claim') });
    expect(working.get('wp')!.counts).toEqual({ 'us-east-1a': 2, 'us-east-1b': 1 });
  });

  test('an order with no zone is refused with "no zone to claim"', () => {
    const working = counters({});
    const got = assignZone(working, { groups: [], order: () => [] }, {});
    expect(got.ok).toBe(false);
    expect(!got.ok && got.error).toEqual(new Error('no zone to claim'));
    expect(working.size).toBe(0);
  });

  test('machines assigned one after another spread over the zones', () => {
    const working = counters({});
    const zones = Array.from({ length: 6 }, () => {
      const got = assignZone(working, { groups: ['wp'], order: leastFirst(ZONES) }, {});
      return got.ok ? got.zone : 'refused';
    });
    expect(zones).toEqual([...ZONES, ...ZONES]);
    expect(working.get('wp')!.counts).toEqual({
      'us-east-1a': 2,
      'us-east-1b': 2,
      'us-east-1c': 2,
    });
  });
});

describe('regroupDelta', () => {
  test.each<[string, string[], string[], { want: string[]; joined: string[]; left: string[] }]>([
    ['unchanged', ['wp'], ['wp'], { want: ['wp'], joined: [], left: [] }],
    [
      'a bare machine gets its first unit',
      [''],
      ['wp'],
      { want: ['wp'], joined: ['wp'], left: [''] },
    ],
    [
      'a second application joins',
      ['wp'],
      ['wp', 'db'],
      { want: ['db', 'wp'], joined: ['db'], left: [] },
    ],
    ['the last unit goes', ['wp'], [], { want: [''], joined: [''], left: ['wp'] }],
  ])('%s', (_name, have, apps, expected) => {
    expect(regroupDelta(have, apps)).toEqual(expected);
  });
});

test('positiveCounts keeps only the positive entries', () => {
  expect(positiveCounts({ a: 2, b: 0, c: -1 })).toEqual({ a: 2 });
});
