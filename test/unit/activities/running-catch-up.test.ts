import {
  RunningCatchUp,
  runningCatchUpsSettled,
  type CatchUpPorts,
  type RecordedLaunch,
} from '../../../activities/running-catch-up';
import type { InstanceState } from '../../../core/liveness';
import type { RoutineOutcome } from '../../../state/provisioning';

/** Short windows for the test; the pace is the test's own where it matters. */
const WINDOWS = { idleMs: 20, maxMs: 100, maxSize: 1_000 };
const UNPACED = { burst: 1_000, perSecond: 1_000 };

function launch(machineId: string, region = 'us-east-1'): RecordedLaunch {
  return { region, model: 'm', machineId, instanceId: `i-${machineId}`.padEnd(19, '0') };
}

/**
 * A batched write port from a write of one launch: true written, false
 * refused, a rejection failed with its error (as the store answers).
 */
function eachAlone(
  write: (l: RecordedLaunch) => Promise<boolean>,
): CatchUpPorts['recordRunningAll'] {
  return (writes) =>
    Promise.all(
      writes.map(({ launch }) =>
        write(launch).then(
          (ok): RoutineOutcome => ({ outcome: ok ? 'written' : 'refused' }),
          (error: unknown): RoutineOutcome => ({ outcome: 'failed', error }),
        ),
      ),
    );
}

function fakes(states: Record<string, InstanceState>) {
  const asked: Array<{ region: string; ids: string[] }> = [];
  const written: string[] = [];
  return {
    asked,
    written,
    ports: {
      statesOf(region: string, ids: readonly string[]) {
        asked.push({ region, ids: [...ids] });
        return Promise.resolve(
          new Map(ids.flatMap((id) => (states[id] ? [[id, states[id]] as const] : []))),
        );
      },
      recordRunningAll: eachAlone((l) => {
        written.push(l.instanceId);
        return Promise.resolve(true);
      }),
    },
  };
}

describe('RunningCatchUp: launches just recorded are asked of EC2 once, and those running written', () => {
  it('asks the launches of one window in one call and writes only the instances EC2 says run', async () => {
    const [a, b, c] = [launch('1'), launch('2'), launch('3')];
    // a runs already (its event came before the record); b is still pending; c is not listed yet
    const f = fakes({ [a.instanceId]: 'running', [b.instanceId]: 'pending' });
    const catchUp = new RunningCatchUp(f.ports, WINDOWS, UNPACED);
    await Promise.all([catchUp.recorded(a), catchUp.recorded(b), catchUp.recorded(c)]);
    expect(f.asked).toEqual([
      { region: 'us-east-1', ids: [a.instanceId, b.instanceId, c.instanceId] },
    ]);
    expect(f.written).toEqual([a.instanceId]);
    expect(catchUp.stats).toEqual({ asks: 1, written: 1, refused: 0, failed: 0 });
  });

  it('asks each region with its own call', async () => {
    const [east, west] = [launch('1', 'us-east-1'), launch('2', 'eu-west-1')];
    const f = fakes({ [east.instanceId]: 'running', [west.instanceId]: 'running' });
    const catchUp = new RunningCatchUp(f.ports, WINDOWS, UNPACED);
    await Promise.all([catchUp.recorded(east), catchUp.recorded(west)]);
    expect(f.asked.map((a) => a.region).sort()).toEqual(['eu-west-1', 'us-east-1']);
    expect(f.written.sort()).toEqual([east.instanceId, west.instanceId].sort());
  });

  it('makes launches that arrive while the region waits for its next call join that call (one per pace interval)', async () => {
    // one call at once, then one every 2 s: the second window waits, and keeps taking launches
    const f = fakes({});
    const catchUp = new RunningCatchUp(f.ports, WINDOWS, { burst: 1, perSecond: 0.5 });
    const first = catchUp.recorded(launch('1'));
    await first;
    const later = [catchUp.recorded(launch('2'))];
    await new Promise((r) => setTimeout(r, 300)); // its window closed; it waits for the token
    later.push(catchUp.recorded(launch('3')));
    await Promise.all(later);
    expect(f.asked.map((a) => a.ids)).toEqual([
      [launch('1').instanceId],
      [launch('2').instanceId, launch('3').instanceId],
    ]);
  });

  it('leaves a failed describe to the sweep: the launch is not failed, nothing is written', async () => {
    const written: string[] = [];
    const catchUp = new RunningCatchUp(
      {
        statesOf: () => Promise.reject(new Error('RequestLimitExceeded')),
        recordRunningAll: eachAlone((l) => Promise.resolve(written.push(l.instanceId) > 0)),
      },
      WINDOWS,
      UNPACED,
    );
    await expect(catchUp.recorded(launch('1'))).resolves.toBeUndefined();
    expect(written).toEqual([]);
    expect(catchUp.stats).toEqual({ asks: 1, written: 0, refused: 0, failed: 1 });
  });

  it('writes the other running instances when one write fails', async () => {
    const [a, b, c] = [launch('1'), launch('2'), launch('3')];
    const written: string[] = [];
    const catchUp = new RunningCatchUp(
      {
        statesOf: (_region, ids) =>
          Promise.resolve(new Map(ids.map((id) => [id, 'running' as const]))),
        recordRunningAll: eachAlone((l) =>
          l.instanceId === b.instanceId
            ? Promise.reject(new Error('ProvisionedThroughputExceededException'))
            : Promise.resolve(written.push(l.instanceId) > 0),
        ),
      },
      WINDOWS,
      UNPACED,
    );
    await Promise.all([a, b, c].map((l) => catchUp.recorded(l)));
    expect(written.sort()).toEqual([a.instanceId, c.instanceId]);
    expect(catchUp.stats).toEqual({ asks: 1, written: 2, refused: 0, failed: 1 });
  });

  it('counts a write the table refused (the machine moved on) apart from one written', async () => {
    const [a, b] = [launch('1'), launch('2')];
    const catchUp = new RunningCatchUp(
      {
        statesOf: (_region, ids) =>
          Promise.resolve(new Map(ids.map((id) => [id, 'running' as const]))),
        recordRunningAll: eachAlone((l) => Promise.resolve(l.instanceId === a.instanceId)),
      },
      WINDOWS,
      UNPACED,
    );
    await Promise.all([a, b].map((l) => catchUp.recorded(l)));
    expect(catchUp.stats).toEqual({ asks: 1, written: 1, refused: 1, failed: 0 });
  });

  it('hands the window’s running launches to one batched write, with their addresses, and counts each outcome once', async () => {
    // 60 launches: 1 in 4 still pending; of the 45 running, the port answers 1 in 9 refused and
    // 1 in 15 failed
    // three-digit ids: launch()'s padded instance ids of '1' and '10' would be one id
    const launches = Array.from({ length: 60 }, (_, i) => launch(String(100 + i)));
    const handed: Array<{ machineId: string; addresses: unknown }> = [];
    let calls = 0;
    const catchUp = new RunningCatchUp(
      {
        statesOf: (_region, ids) =>
          Promise.resolve(
            new Map(
              ids.map((id) => {
                const i = launches.findIndex((l) => l.instanceId === id);
                return [
                  id,
                  i % 4 === 3
                    ? ('pending' as const)
                    : { state: 'running' as const, addresses: { privateAddress: `10.0.0.${i}` } },
                ];
              }),
            ),
          ),
        recordRunningAll: (writes) => {
          calls++;
          handed.push(
            ...writes.map((w) => ({ machineId: w.launch.machineId, addresses: w.addresses })),
          );
          return Promise.resolve(
            writes.map((_, i): RoutineOutcome => {
              if (i % 15 === 14) return { outcome: 'failed', error: new Error('ThrottlingError') };
              return { outcome: i % 9 === 8 ? 'refused' : 'written' };
            }),
          );
        },
      },
      WINDOWS,
      UNPACED,
    );
    const lines = captureLog();
    try {
      await Promise.all(launches.map((l) => catchUp.recorded(l)));
    } finally {
      lines.restore();
    }
    const running = launches.filter((_, i) => i % 4 !== 3);
    expect(calls).toBe(1);
    expect(handed).toEqual(
      running.map((l) => ({
        machineId: l.machineId,
        addresses: { privateAddress: `10.0.0.${Number(l.machineId) - 100}` },
      })),
    );
    // 45 running: 3 failed (i = 14, 29, 44), 4 refused (i = 8, 17, 26, 35; 44 failed), 38 written
    expect(catchUp.stats).toEqual({ asks: 1, written: 38, refused: 4, failed: 3 });
    // one line for the refusals and one for the failures: not one a machine
    expect(lines.info).toEqual([
      expect.objectContaining({
        message: 'running not written: the machine no longer records that instance alive',
        refused: 4,
      }),
    ]);
    expect(lines.warn).toEqual([
      {
        level: 'warn',
        message: 'instances running not recorded; the sweep tells them',
        region: 'us-east-1',
        machines: [14, 29, 44].map((i) => `m/${running[i]!.machineId}`),
        failed: 3,
        error: 'Error: ThrottlingError',
      },
    ]);
  });

  it('counts every running launch failed, logged once, when the batched write fails as a whole', async () => {
    const [a, b, c] = [launch('1'), launch('2'), launch('3')];
    const catchUp = new RunningCatchUp(
      {
        statesOf: (_region, ids) =>
          Promise.resolve(
            new Map(ids.map((id) => [id, id === c.instanceId ? 'pending' : 'running'] as const)),
          ),
        recordRunningAll: () => Promise.reject(new Error('socket hang up')),
      },
      WINDOWS,
      UNPACED,
    );
    const lines = captureLog();
    try {
      await expect(Promise.all([a, b, c].map((l) => catchUp.recorded(l)))).resolves.toHaveLength(3);
    } finally {
      lines.restore();
    }
    expect(catchUp.stats).toEqual({ asks: 1, written: 0, refused: 0, failed: 2 });
    expect(lines.warn).toEqual([
      expect.objectContaining({
        machines: ['m/1', 'm/2'],
        failed: 2,
        error: 'Error: socket hang up',
      }),
    ]);
  });

  it('writes nothing, and calls no write, when no launch of the window runs yet', async () => {
    let calls = 0;
    const catchUp = new RunningCatchUp(
      {
        statesOf: (_region, ids) =>
          Promise.resolve(new Map(ids.map((id) => [id, 'pending'] as const))),
        recordRunningAll: (writes) => {
          calls++;
          return Promise.resolve(writes.map((): RoutineOutcome => ({ outcome: 'written' })));
        },
      },
      WINDOWS,
      UNPACED,
    );
    await Promise.all([launch('1'), launch('2')].map((l) => catchUp.recorded(l)));
    expect(calls).toBe(0);
    expect(catchUp.stats).toEqual({ asks: 1, written: 0, refused: 0, failed: 0 });
  });
});

/** The activity log's JSON lines (outside an activity they go to the console), by level. */
function captureLog() {
  const info: unknown[] = [];
  const warn: unknown[] = [];
  const spies = [
    jest
      .spyOn(console, 'log')
      .mockImplementation((line) => void info.push(JSON.parse(String(line)))),
    jest
      .spyOn(console, 'warn')
      .mockImplementation((line) => void warn.push(JSON.parse(String(line)))),
  ];
  return { info, warn, restore: () => spies.forEach((s) => s.mockRestore()) };
}

describe('runningCatchUpsSettled: what a draining worker (and a test before its table goes) waits for', () => {
  it('resolves only once every recorded launch of every catch-up was asked and written, and at once when none waits', async () => {
    await runningCatchUpsSettled();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const written: string[] = [];
    const slow = new RunningCatchUp(
      {
        statesOf: (_region, ids) => held.then(() => new Map(ids.map((id) => [id, 'running']))),
        recordRunningAll: eachAlone((l) => {
          written.push(l.instanceId);
          return Promise.resolve(true);
        }),
      },
      WINDOWS,
      UNPACED,
    );
    const other = new RunningCatchUp(fakes({}).ports, WINDOWS, UNPACED);
    void slow.recorded(launch('1'));
    void other.recorded(launch('2'));
    let settled = false;
    const waiting = runningCatchUpsSettled().then(() => (settled = true));
    // the other's window closes and answers; the slow one's describe is still held
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    expect(written).toEqual([]);
    release();
    await waiting;
    expect(written).toEqual([launch('1').instanceId]);
  });

  it('never rejects: a describe that fails is logged and left to the sweep', async () => {
    const failing = new RunningCatchUp(
      {
        statesOf: () => Promise.reject(new Error('RequestLimitExceeded')),
        recordRunningAll: () => Promise.reject(new Error('not called')),
      },
      WINDOWS,
      UNPACED,
    );
    void failing.recorded(launch('3'));
    await expect(runningCatchUpsSettled()).resolves.toBeUndefined();
    expect(failing.stats.failed).toBe(1);
  });
});
