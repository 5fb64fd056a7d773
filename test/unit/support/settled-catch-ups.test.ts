import { RunningCatchUp, type CatchUpPorts } from '../../../activities/running-catch-up';
import { runningCatchUpsPending } from '../../../activities/running-catch-up-in-flight';
import { catchUpsSettledWithin } from '../../support/settled-catch-ups';

/**
 * The guard every unit file ends with (jest.config.js, setupFilesAfterEnv):
 * a running catch-up that settles is waited for, one that does not within the
 * bound fails the file naming its launches; the bound runs on the real clock
 * even while the file's fake timers are installed.
 */

const WINDOWS = { idleMs: 20, maxMs: 100, maxSize: 1_000 };
const UNPACED = { burst: 1_000, perSecond: 1_000 };
const LAUNCH = { region: 'eu-west-1', model: 'm', machineId: '7', instanceId: 'i-0777' };

/** Ports whose describe waits until `release` (then lists nothing). */
function heldPorts() {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const ports: CatchUpPorts = {
    statesOf: async () => {
      await held;
      return new Map();
    },
    recordRunningAll: () => Promise.resolve([]),
  };
  return { ports, release };
}

afterEach(() => jest.useRealTimers());

describe('catchUpsSettledWithin: no unit file leaves a running catch-up for the next', () => {
  it('resolves at once when nothing is in flight', async () => {
    expect(runningCatchUpsPending()).toEqual([]);
    await expect(catchUpsSettledWithin(50)).resolves.toBeUndefined();
  });

  it('waits for a window that settles within the bound', async () => {
    const { ports, release } = heldPorts();
    const asked = new RunningCatchUp(ports, WINDOWS, UNPACED).recorded(LAUNCH);
    expect(runningCatchUpsPending()).toEqual([LAUNCH]);
    setTimeout(release, 300);
    await expect(catchUpsSettledWithin(30_000)).resolves.toBeUndefined();
    await asked;
    expect(runningCatchUpsPending()).toEqual([]);
  });

  it('rejects naming the launches left when they do not settle within the bound', async () => {
    const { ports, release } = heldPorts();
    const asked = new RunningCatchUp(ports, WINDOWS, UNPACED).recorded(LAUNCH);
    await expect(catchUpsSettledWithin(300)).rejects.toThrow(
      "running catch-ups of 1 recorded launch(es) not settled 300 ms after the file's tests: eu-west-1 m/7 i-0777",
    );
    release();
    await asked;
    expect(runningCatchUpsPending()).toEqual([]);
  });

  it('bounds the wait on the real clock while fake timers hold the window', async () => {
    jest.useFakeTimers();
    const { ports, release } = heldPorts();
    const asked = new RunningCatchUp(ports, WINDOWS, UNPACED).recorded({
      ...LAUNCH,
      machineId: '8',
    });
    // the window's timers are fake and never advanced: only a real bound ends the wait
    await expect(catchUpsSettledWithin(300)).rejects.toThrow('eu-west-1 m/8 i-0777');
    // closed here, so that the file's own guard finds nothing left
    release();
    jest.advanceTimersByTime(WINDOWS.maxMs);
    jest.useRealTimers();
    await asked;
    expect(runningCatchUpsPending()).toEqual([]);
  });
});
