import { RunningCatchUp, type RecordedLaunch } from '../../../activities/running-catch-up';
import type { InstanceState } from '../../../core/liveness';

/** Short windows for the test; the pace is the test's own where it matters. */
const WINDOWS = { idleMs: 20, maxMs: 100, maxSize: 1_000 };
const UNPACED = { burst: 1_000, perSecond: 1_000 };

function launch(machineId: string, region = 'us-east-1'): RecordedLaunch {
  return { region, model: 'm', machineId, instanceId: `i-${machineId}`.padEnd(19, '0') };
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
      recordRunning(l: RecordedLaunch) {
        written.push(l.instanceId);
        return Promise.resolve(true);
      },
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
        recordRunning: (l) => Promise.resolve(written.push(l.instanceId)),
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
        recordRunning: (l) =>
          l.instanceId === b.instanceId
            ? Promise.reject(new Error('ProvisionedThroughputExceededException'))
            : Promise.resolve(written.push(l.instanceId)),
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
        recordRunning: (l) => Promise.resolve(l.instanceId === a.instanceId ? true : false),
      },
      WINDOWS,
      UNPACED,
    );
    await Promise.all([a, b].map((l) => catchUp.recorded(l)));
    expect(catchUp.stats).toEqual({ asks: 1, written: 1, refused: 1, failed: 0 });
  });
});
