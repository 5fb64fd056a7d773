import {
  harvestsStrays,
  inLanes,
  instancesToAsk,
  selectReprovisions,
  selectStrays,
  watchedMachines,
  type SweptMachine,
} from '../../../activities/sweep';
import {
  batches,
  instanceChanges,
  instanceStateMessage,
  isLost,
  observedState,
  UNLISTED_GRACE_MS,
  type InstanceState,
} from '../../../core/liveness';

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

describe('watchedMachines', () => {
  it('keeps machines launched by us with an instance recorded, not Dead; drops manual, containers, no instance', () => {
    const machines: SweptMachine[] = [
      { id: '0', life: 'alive', status: 'running', instanceId: 'i-0' },
      { id: '1', life: 'dying', status: 'running', instanceId: 'i-1' },
      { id: '2', life: 'dead', status: 'stopping', instanceId: 'i-2' },
      { id: '3', life: 'alive', status: 'running', instanceId: 'i-3', manual: true },
      { id: '3/lxd/0', life: 'alive', status: 'running', instanceId: 'i-c' },
      { id: '4', life: 'alive', status: 'pending' },
      { id: '5', life: 'alive', status: 'down', instanceId: 'i-5', instanceStatus: 'unknown' },
    ];
    expect(watchedMachines(machines).map((m) => m.id)).toEqual(['0', '1', '5']);
  });
});

describe('instancesToAsk', () => {
  const m = (id: string, instanceStatus?: InstanceState): SweptMachine => ({
    id,
    life: 'alive',
    status: 'running',
    instanceId: `i-${id}`,
    ...(instanceStatus ? { instanceStatus } : {}),
  });
  const watched = [
    m('same', 'running'),
    m('changed', 'pending'),
    m('missing', 'running'),
    m('gone', 'unknown'),
  ];

  it('with a listing: takes an unchanged state as listed, asks by id a change or an instance missing, not one already gone', () => {
    const listed = new Map<string, InstanceState>([
      ['i-same', 'running'],
      ['i-changed', 'running'],
    ]);
    const { observed, ask } = instancesToAsk(watched, listed);
    expect([...observed]).toEqual([['i-same', 'running']]);
    expect(ask).toEqual(['i-changed', 'i-missing']);
  });

  it('without a listing: asks every watched instance by id, the ones recorded gone included', () => {
    const { observed, ask } = instancesToAsk(watched, undefined);
    expect(observed.size).toBe(0);
    expect(ask).toEqual(['i-same', 'i-changed', 'i-missing', 'i-gone']);
  });
});

describe('liveness', () => {
  const NOW = Date.parse('2026-01-01T00:10:00Z');
  const machines: SweptMachine[] = [
    { id: '0', life: 'alive', status: 'running', instanceId: 'i-run', instanceStatus: 'running' },
    { id: '1', life: 'alive', status: 'running', instanceId: 'i-new', instanceStatus: 'pending' },
    { id: '2', life: 'alive', status: 'running', instanceId: 'i-term', instanceStatus: 'running' },
    { id: '3', life: 'alive', status: 'running', instanceId: 'i-gone', instanceStatus: 'running' },
    { id: '4', life: 'alive', status: 'down', instanceId: 'i-down', instanceStatus: 'terminated' },
    { id: '5', life: 'alive', status: 'running', instanceId: 'i-stop', instanceStatus: 'running' },
    { id: '6', life: 'dead', status: 'stopping', instanceId: 'i-dead', instanceStatus: 'running' },
    {
      id: '7',
      life: 'alive',
      status: 'running',
      instanceId: 'i-unlisted',
      instanceStatus: 'pending',
      instanceRecordedAt: new Date(NOW - 60_000).toISOString(),
    },
    {
      // recorded pending 11 minutes ago and never listed: EC2 lost it before liveness saw it
      id: '8',
      life: 'alive',
      status: 'running',
      instanceId: 'i-lost-young',
      instanceStatus: 'pending',
      instanceRecordedAt: new Date(NOW - 11 * 60_000).toISOString(),
    },
  ];
  const observed = new Map<string, InstanceState>([
    ['i-run', 'running'],
    ['i-new', 'running'],
    ['i-term', 'terminated'],
    ['i-down', 'terminated'],
    ['i-stop', 'stopped'],
    ['i-dead', 'terminated'],
  ]);

  it('signals only the machines whose instance state changed; an unlisted id is unknown', () => {
    expect(instanceChanges(machines, observed, NOW)).toEqual([
      { machineId: '1', instanceId: 'i-new', state: 'running' },
      { machineId: '2', instanceId: 'i-term', state: 'terminated' },
      { machineId: '3', instanceId: 'i-gone', state: 'unknown' },
      { machineId: '5', instanceId: 'i-stop', state: 'stopped' },
      // past UNLISTED_GRACE_MS an unlisted pending instance is gone, not "not known yet"
      { machineId: '8', instanceId: 'i-lost-young', state: 'unknown' },
    ]);
  });

  it('takes an unlisted pending instance as not known yet only within UNLISTED_GRACE_MS of its recording', () => {
    const at = (ago: number) => new Date(NOW - ago).toISOString();
    expect(UNLISTED_GRACE_MS).toBe(600_000);
    const pending = (ago: number) => ({
      instanceStatus: 'pending' as const,
      instanceRecordedAt: at(ago),
    });
    expect(observedState(pending(1_000), undefined, NOW)).toBeUndefined();
    expect(observedState(pending(UNLISTED_GRACE_MS - 1), undefined, NOW)).toBeUndefined();
    expect(observedState(pending(UNLISTED_GRACE_MS), undefined, NOW)).toBe('unknown');
    // a record from before instanceRecordedAt: its last write stands for the recording
    expect(
      observedState({ instanceStatus: 'pending', updatedAt: at(5_000) }, undefined, NOW),
    ).toBeUndefined();
    expect(
      observedState({ instanceStatus: 'pending', updatedAt: at(3_600_000) }, undefined, NOW),
    ).toBe('unknown');
    // no date at all: gone (never stuck for want of one)
    expect(observedState({ instanceStatus: 'pending' }, undefined, NOW)).toBe('unknown');
    // listed: EC2's state, whatever the age; seen before (not pending): unlisted is gone
    expect(observedState(pending(1_000), 'terminated', NOW)).toBe('terminated');
    expect(
      observedState({ instanceStatus: 'running', instanceRecordedAt: at(1_000) }, undefined, NOW),
    ).toBe('unknown');
  });

  it('reprovisions alive machines whose instance is confirmed gone, up to the cap', () => {
    expect(selectReprovisions({ machines, observed, cap: 20, now: NOW })).toEqual([
      { machineId: '2', instanceId: 'i-term' },
      { machineId: '3', instanceId: 'i-gone' },
      { machineId: '4', instanceId: 'i-down' },
      // not 7: a just-launched instance EC2 does not list yet is not gone (eventual consistency)
      // 8: recorded pending 11 minutes ago and still not listed is (it was stuck for ever)
      { machineId: '8', instanceId: 'i-lost-young' },
    ]);
    expect(selectReprovisions({ machines, observed, cap: 1, now: NOW })).toHaveLength(1);
  });

  it.each<[InstanceState, boolean, string]>([
    ['terminated', true, 'instance "i-1" is terminated'],
    ['shutting-down', true, 'instance "i-1" is shutting-down'],
    ['unknown', true, 'instance "i-1" is no longer listed by EC2'],
    ['stopped', false, 'instance "i-1" is stopped'],
    ['running', false, ''],
    ['pending', false, ''],
  ])('%s → lost %s, message %j', (state, lost, message) => {
    expect(isLost(state)).toBe(lost);
    expect(instanceStateMessage('i-1', state)).toBe(message);
  });

  it('batches ids by 1,000', () => {
    const ids = Array.from({ length: 2500 }, (_, i) => `i-${i}`);
    expect(batches(ids).map((b) => b.length)).toEqual([1000, 1000, 500]);
  });
});

describe('inLanes', () => {
  it('runs every item, never more than the lanes at once', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await inLanes([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5 * (n % 3)));
      done.push(n);
      running--;
    });
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it('begins no new item after a failure, and throws the first failure', async () => {
    const begun: number[] = [];
    const done: number[] = [];
    await expect(
      inLanes([1, 2, 3, 4], 1, async (n) => {
        begun.push(n);
        await Promise.resolve();
        if (n === 2) throw new Error('Temporal unavailable');
        done.push(n);
      }),
    ).rejects.toThrow('Temporal unavailable');
    expect(begun).toEqual([1, 2]);
    expect(done).toEqual([1]);
  });

  it('lets the items already begun end before it throws', async () => {
    const done: number[] = [];
    await expect(
      inLanes([1, 2], 2, async (n) => {
        if (n === 1) throw new Error('first');
        await new Promise((r) => setTimeout(r, 10));
        done.push(n);
      }),
    ).rejects.toThrow('first');
    expect(done).toEqual([2]);
  });

  it('does nothing for no items', async () => {
    const work = jest.fn(() => Promise.resolve());
    await inLanes([], 8, work);
    expect(work).not.toHaveBeenCalled();
  });
});
