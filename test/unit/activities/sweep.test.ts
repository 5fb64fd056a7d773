import { harvestsStrays, selectStrays, type SweptMachine } from '../../../activities/sweep';

describe('selectStrays', () => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  const old = new Date(now - 120_000);
  const young = new Date(now - 1_000);
  const machines: SweptMachine[] = [
    { id: '0', life: 'alive', status: 'running', instanceId: 'i-owned' },
    { id: '1', life: 'dead', status: 'stopping', instanceId: 'i-of-dead' },
    { id: '2', life: 'alive', status: 'allocating' },
    { id: '3', life: 'alive', status: 'error' },
    { id: '4', life: 'alive', status: 'pending' },
  ];

  it.each<[string, { instanceId: string; machineId?: string; launchTime?: Date }, boolean]>([
    [
      'the instance a live machine records',
      { instanceId: 'i-owned', machineId: '0', launchTime: old },
      false,
    ],
    [
      'a second instance tagged for a running machine (a duplicate)',
      { instanceId: 'i-dup', machineId: '0', launchTime: old },
      true,
    ],
    [
      'the instance of a Dead machine',
      { instanceId: 'i-of-dead', machineId: '1', launchTime: old },
      true,
    ],
    [
      'an instance tagged for a machine that no longer exists',
      { instanceId: 'i-gone', machineId: '99', launchTime: old },
      true,
    ],
    ['an instance without a machine tag', { instanceId: 'i-untagged', launchTime: old }, true],
    [
      'a young untracked instance',
      { instanceId: 'i-young', machineId: '99', launchTime: young },
      false,
    ],
    ['an instance without a launch time', { instanceId: 'i-unknown' }, false],
    [
      'an instance of a machine whose launch is in flight',
      { instanceId: 'i-inflight', machineId: '2', launchTime: old },
      false,
    ],
    [
      'an instance of a pending machine',
      { instanceId: 'i-pending', machineId: '4', launchTime: old },
      false,
    ],
    [
      'an instance tagged for a machine in error',
      { instanceId: 'i-err', machineId: '3', launchTime: old },
      true,
    ],
  ])('%s → stray: %s', (_label, instance, stray) => {
    expect(selectStrays({ instances: [instance], machines, now, graceMs: 60_000 })).toEqual(
      stray ? [instance.instanceId] : [],
    );
  });
});

describe('harvestsStrays', () => {
  it.each([
    ['none', false],
    ['destroyed', false],
    ['unknown', true],
    ['all', true],
  ])('%s → %s', (mode, expected) => {
    expect(harvestsStrays(mode)).toBe(expected);
  });
});
