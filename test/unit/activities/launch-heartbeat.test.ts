import { MockActivityEnvironment } from '@temporalio/testing';
import {
  heartbeating,
  LAUNCH_HEARTBEAT_EVERY_MS,
  launchActivities,
  thisTry,
  type StartInstanceInput,
} from '../../../activities/launch';
import type { ActivityDeps } from '../../../activities/deps';
import type { LaunchBatch, LaunchBatchCall, LaunchMarker } from '../../../state/launch-batches';
import { LAUNCH_OPTIONS, LOCAL_LAUNCH_OPTIONS } from '../../../workflows/proxies';
import { M5_LARGE_PLAN } from '../../support/launch-plan';

/**
 * A launch that waits in the coalescer (behind the RunInstances bucket, on
 * a busy worker) must not be taken for a dead one: issue 26's duplicate
 * began with launches heartbeat-timed-out at 15 s while still queued. The
 * launch heartbeats while it waits, the first time after
 * LAUNCH_HEARTBEAT_EVERY_MS (none for a launch answered sooner: each
 * heartbeat that reaches Temporal is a billed action), and its heartbeat
 * timeout leaves room for a worker whose timers run late.
 */

const INPUT: StartInstanceInput = {
  model: 'bench',
  machineId: '7',
  zone: 'us-east-1a',
  tokenSeed: 'machine:bench:7/run-1/1/1/us-east-1a',
  plan: M5_LARGE_PLAN,
};

/**
 * Batch records in memory; every mark waits for `release` when `held`. The
 * launch runs as an activity, or as a local activity (`local`: LAUNCH_IN_TASK).
 */
function setup(held: boolean, local = false) {
  let release!: () => void;
  const released = held ? new Promise<void>((r) => (release = r)) : Promise.resolve();
  let marked = 0;
  const markers = new Map<string, LaunchMarker>();
  const batches = new Map<string, LaunchBatch>();
  const store = {
    async mark(_model: string, machineId: string, marker: LaunchMarker) {
      marked += 1;
      await released;
      markers.set(machineId, marker);
      return { marked: true };
    },
    marker: (_model: string, machineId: string) => Promise.resolve(markers.get(machineId)),
    commit(_model: string, b: { id: string; members: string[]; call: LaunchBatchCall }) {
      batches.set(b.id, { id: b.id, state: 'sent', members: b.members, call: b.call });
      return Promise.resolve(true);
    },
    written: (_model: string, id: string) => Promise.resolve(batches.has(id)),
  };
  const send = () =>
    Promise.resolve({
      Instances: [
        {
          InstanceId: 'i-1',
          AmiLaunchIndex: 0,
          State: { Name: 'pending' },
          Placement: { AvailabilityZone: 'us-east-1a' },
        },
      ],
    });
  const deps = {
    store: { batches: store },
    ec2ForRegion: () => ({ ec2: { send } }),
    tuning: {
      launchBurst: 100,
      launchRatePerSecond: 100,
      launchBatchIdleMs: 5,
      launchBatchMaxMs: 50,
      capacityMemoryMs: 0,
    },
    deployment: 'test',
  } as unknown as ActivityDeps;
  const env = new MockActivityEnvironment({
    isLocal: local,
    heartbeatTimeoutMs: local ? 0 : 60_000,
    startToCloseTimeoutMs: 120_000,
    // scheduled now (the mock's default is the epoch: the try would be long over)
    currentAttemptScheduledTimestampMs: Date.now(),
    scheduledTimestampMs: Date.now(),
    scheduleToCloseTimeoutMs: local ? 211_000 : 0,
  });
  const beats: number[] = [];
  const start = Date.now();
  env.on('heartbeat', () => beats.push(Date.now() - start));
  const activities = launchActivities(deps);
  return {
    beats,
    release: () => release(),
    marks: () => marked,
    run: () => env.run(() => activities.startInstance(INPUT)),
  };
}

describe('startInstance heartbeats while its launch waits in the coalescer', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  test('the launch heartbeat timeout is 60 s, and the first heartbeat comes at 10 s', () => {
    expect(LAUNCH_OPTIONS.heartbeatTimeout).toBe('60 seconds');
    expect(LAUNCH_HEARTBEAT_EVERY_MS).toBe(10_000);
  });

  test('a launch held 65 s in its batch heartbeats every 10 s, the first at 10 s, and then answers', async () => {
    const t = setup(true);
    const running = t.run();
    // the batch's window closes (50 ms at most) and it waits at its marks
    await jest.advanceTimersByTimeAsync(100);
    expect(t.marks()).toBe(1);
    await jest.advanceTimersByTimeAsync(LAUNCH_HEARTBEAT_EVERY_MS - 101);
    expect(t.beats).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(t.beats).toEqual([10_000]);
    await jest.advanceTimersByTimeAsync(55_000);
    expect(t.beats).toEqual([10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
    t.release();
    await jest.advanceTimersByTimeAsync(100);
    await expect(running).resolves.toMatchObject({ instanceId: 'i-1', adopted: false });
    // and no heartbeat after the answer
    await jest.advanceTimersByTimeAsync(30_000);
    expect(t.beats).toHaveLength(6);
  });

  test('a launch answered within 10 s sends no heartbeat at all', async () => {
    const t = setup(false);
    const running = t.run();
    await jest.advanceTimersByTimeAsync(200);
    await expect(running).resolves.toMatchObject({ instanceId: 'i-1' });
    await jest.advanceTimersByTimeAsync(60_000);
    expect(t.beats).toEqual([]);
  });
});

/**
 * A local activity cannot heartbeat (LAUNCH_IN_TASK: the first launch runs in
 * its workflow task, which is what Temporal watches): its waits send none.
 */
describe('heartbeating in a local activity', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  /** Work that answers after `ms`, run in an activity context (local or not); the heartbeats it sent. */
  async function beatsOf(local: boolean, ms: number): Promise<{ answer: string; beats: number }> {
    const env = new MockActivityEnvironment({
      isLocal: local,
      scheduledTimestampMs: Date.now(),
      scheduleToCloseTimeoutMs: 0,
    });
    let beats = 0;
    env.on('heartbeat', () => (beats += 1));
    const work = () =>
      heartbeating(() => new Promise<string>((r) => setTimeout(() => r('done'), ms)), 1_000);
    const running = env.run<[], Awaited<ReturnType<typeof work>>, typeof work>(work);
    await jest.advanceTimersByTimeAsync(ms + 1);
    return { answer: await running, beats };
  }

  test('a local activity that waits 10 s sends no heartbeat; an activity sends one a second', async () => {
    expect(await beatsOf(true, 10_000)).toEqual({ answer: 'done', beats: 0 });
    expect(await beatsOf(false, 10_000)).toEqual({ answer: 'done', beats: 10 });
  });

  test('a launch held 65 s in its batch as a local activity sends no heartbeat, and answers', async () => {
    const t = setup(true, true);
    const running = t.run();
    await jest.advanceTimersByTimeAsync(100);
    expect(t.marks()).toBe(1);
    await jest.advanceTimersByTimeAsync(65_000);
    t.release();
    await jest.advanceTimersByTimeAsync(100);
    await expect(running).resolves.toMatchObject({ instanceId: 'i-1', adopted: false });
    expect(t.beats).toEqual([]);
  });
});

/**
 * A try's end, for its batch (`thisTry`): counted from when Temporal
 * scheduled an activity's try, but from now for a local activity, whose
 * retries the SDK's core gives the first try's schedule time (a retry after
 * a slow first try would otherwise count as over on arrival, leave its
 * batch, and every retry after it too).
 */
describe('thisTry', () => {
  const FIRST_SCHEDULED_AGO_MS = 110_000;
  const run = (
    isLocal: boolean,
    startToCloseTimeoutMs = 120_000,
    step: { scheduledAgoMs: number; scheduleToCloseTimeoutMs: number } = {
      scheduledAgoMs: FIRST_SCHEDULED_AGO_MS,
      scheduleToCloseTimeoutMs: 0,
    },
  ) => {
    const scheduled = Date.now() - FIRST_SCHEDULED_AGO_MS;
    const stepScheduled = Date.now() - step.scheduledAgoMs;
    const env = new MockActivityEnvironment({
      isLocal,
      attempt: 2,
      startToCloseTimeoutMs,
      currentAttemptScheduledTimestampMs: scheduled,
      scheduledTimestampMs: stepScheduled,
      scheduleToCloseTimeoutMs: step.scheduleToCloseTimeoutMs,
    });
    const before = Date.now();
    const measure = () => Promise.resolve({ before, scheduled, stepScheduled, tried: thisTry() });
    return env.run<[], Awaited<ReturnType<typeof measure>>, typeof measure>(measure);
  };

  it("a local activity's retry lives its start-to-close from now (7/8 of it)", async () => {
    const { before, tried } = await run(true);
    expect(tried.signal).toBeDefined();
    expect(tried.liveUntil).toBeGreaterThanOrEqual(before + 105_000);
    expect(tried.liveUntil).toBeLessThanOrEqual(Date.now() + 105_000);
  });

  it("a local launch whose start-to-close spans its retries: a try still lives 7/8 of a launch try's time", async () => {
    // LOCAL_LAUNCH_OPTIONS' 211 s would give 184.6 s
    const { before, tried } = await run(true, LOCAL_LAUNCH_OPTIONS.startToCloseTimeout);
    expect(tried.liveUntil).toBeGreaterThanOrEqual(before + 105_000);
    expect(tried.liveUntil).toBeLessThanOrEqual(Date.now() + 105_000);
    // and a shorter start-to-close is its own bound
    const short = await run(true, 40_000);
    expect(short.tried.liveUntil).toBeLessThanOrEqual(Date.now() + 35_000);
    expect(short.tried.liveUntil).toBeGreaterThanOrEqual(short.before + 35_000);
  });

  it("a late try of a local launch lives no later than its step's end, less 1/8 of a launch try", async () => {
    // the step began 190 s ago and ends at 211 s: 21 s left, of which 15 s for the call to answer
    const step = { scheduledAgoMs: 190_000, scheduleToCloseTimeoutMs: 211_000 };
    const { stepScheduled, tried } = await run(
      true,
      LOCAL_LAUNCH_OPTIONS.startToCloseTimeout,
      step,
    );
    // from the step's own schedule time (a clock read before `before`: off by a millisecond once)
    expect(tried.liveUntil).toBe(stepScheduled + 211_000 - 15_000);
    // early in the step, a launch try's own 105 s is the bound
    const early = await run(true, LOCAL_LAUNCH_OPTIONS.startToCloseTimeout, {
      scheduledAgoMs: 10_000,
      scheduleToCloseTimeoutMs: 211_000,
    });
    expect(early.tried.liveUntil).toBeGreaterThanOrEqual(early.before + 105_000);
    // an activity (not local) is Temporal's to time out: its schedule-to-close is not used
    const remote = await run(false, 120_000, step);
    expect(remote.tried.liveUntil).toBe(remote.scheduled + 105_000);
  });

  it("an activity's try lives from when Temporal scheduled it", async () => {
    const { scheduled, tried } = await run(false);
    expect(tried.liveUntil).toBe(scheduled + 105_000);
    // 110 s after its schedule: already over (its retry is Temporal's to make)
    expect(tried.liveUntil!).toBeLessThan(Date.now());
  });
});
