import { MockActivityEnvironment } from '@temporalio/testing';
import { launchActivities, type StartInstanceInput } from '../../../activities/launch';
import type { ActivityDeps } from '../../../activities/deps';
import type { StartedInstance } from '../../../activities/types';
import { tokenEc2, type TokenEc2 } from '../../support/token-ec2';
import { fakeLaunchBatches } from '../../support/launch-batches';
import { M5_LARGE_PLAN } from '../../support/launch-plan';

/**
 * A launch activity retried while its first attempt still waits for its
 * batch (under load its heartbeat or start-to-close timeout expires: the
 * first attempt is not stopped, the worker runs both). The retry finds no
 * marker yet (the first attempt's batch has not been recorded), so it
 * launches; before LaunchBatcher kept one launch per machine, its batch and
 * the first attempt's both went out with the machine as a member, and EC2
 * launched two instances for it (bench at N=300, load ~25: duplicates 2,
 * strays 2).
 */

const INPUT: StartInstanceInput = {
  model: 'bench',
  machineId: '7',
  zone: 'us-east-1a',
  tokenSeed: 'machine:bench:7/run-1/1/1/us-east-1a',
  plan: M5_LARGE_PLAN,
};

/** Launch activities over `batches` (by default, their first mark waits for `releaseMark`). */
function setup(
  ec2: TokenEc2 = tokenEc2(),
  batches: ReturnType<typeof fakeLaunchBatches> = fakeLaunchBatches({ mark: true }),
) {
  const deps = {
    store: { batches: batches.store },
    ec2ForRegion: () => ({ ec2: { send: ec2.send } }),
    tuning: {
      launchBurst: 100,
      launchRatePerSecond: 100,
      launchBatchIdleMs: 5,
      launchBatchMaxMs: 50,
      capacityMemoryMs: 0,
    },
    deployment: 'test',
  } as unknown as ActivityDeps;
  return { ec2, batches, activities: launchActivities(deps) };
}

/** Runs startInstance as attempt `attempt` of the activity. */
function attemptOf(
  activities: ReturnType<typeof launchActivities>,
  attempt: number,
  input: StartInstanceInput = INPUT,
  scheduledAgoMs = 0,
): Promise<StartedInstance> {
  // a deployed launch's start-to-close timeout (the mock's default is 1 s), the try
  // scheduled `scheduledAgoMs` ago (the mock's default is the epoch)
  const env = new MockActivityEnvironment({
    attempt,
    startToCloseTimeoutMs: 120_000,
    currentAttemptScheduledTimestampMs: Date.now() - scheduledAgoMs,
  });
  return env.run(() => activities.startInstance(input));
}

describe('startInstance retried while its first attempt still waits for its batch', () => {
  test('one RunInstances, one instance: both attempts answer the same instance', async () => {
    const { ec2, batches, activities } = setup();
    const first = attemptOf(activities, 1);
    // the first attempt's batch is being recorded (its marker not yet written) ...
    await batches.firstMark;
    expect(batches.markers.get('7')).toBeUndefined();
    // ... when the activity times out and its retry runs on the same worker
    const retry = attemptOf(activities, 2);
    // give the retry every chance to launch on its own before the first batch goes on
    await new Promise((r) => setTimeout(r, 200));
    expect(ec2.calls).toHaveLength(0);
    batches.releaseMark();
    const [a, b] = await Promise.all([first, retry]);
    expect(a.instanceId).toBe('i-1');
    expect(b.instanceId).toBe('i-1');
    expect(b.adopted).toBe(false);
    // EC2 made one reservation of one instance, for one batch listing the machine once
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
    const sent = [...batches.batches.values()].filter((x) => x.state === 'sent');
    expect(sent.map((x) => x.members)).toEqual([['7']]);
  });

  test('a next attempt (another token) waits for the earlier one and adopts its instance, launching none', async () => {
    const { ec2, batches, activities } = setup();
    const first = attemptOf(activities, 1);
    await batches.firstMark;
    // the workflow gave up on the first attempt (timed out) and its next attempt looks first
    const next = attemptOf(activities, 1, {
      ...INPUT,
      tokenSeed: 'machine:bench:7/run-1/1/2/us-east-1a',
      mayHaveLaunched: true,
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(ec2.calls).toHaveLength(0);
    batches.releaseMark();
    const [a, b] = await Promise.all([first, next]);
    expect(a.instanceId).toBe('i-1');
    expect(b).toMatchObject({ instanceId: 'i-1', adopted: true });
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  });
});

describe('a stale try of a launch (its deadline passing, or its batch abandoned)', () => {
  const NEXT_SEED = 'machine:bench:7/run-1/1/2/us-east-1a';

  test("a stale try whose batch the next attempt abandoned launches nothing: the next attempt's is the one instance", async () => {
    const ec2 = tokenEc2();
    const batches = fakeLaunchBatches({ commit: true });
    // the first attempt's try on worker A is marked in its batch and waits to record it ...
    const stale = attemptOf(setup(ec2, batches).activities, 8);
    await batches.firstCommit;
    const held = batches.markers.get('7')!;
    // ... while the workflow's next attempt, on worker B, abandons that batch and launches
    const next = await attemptOf(setup(ec2, batches).activities, 1, {
      ...INPUT,
      tokenSeed: NEXT_SEED,
      mayHaveLaunched: true,
    });
    expect(next).toMatchObject({ instanceId: 'i-1', adopted: false });
    expect(batches.batches.get(held.batchId)?.state).toBe('abandoned');
    batches.releaseCommit();
    // the stale try finds its batch abandoned and the machine another attempt's: it gives up
    await expect(stale).rejects.toThrow(`launch batch ${held.batchId} was abandoned`);
    expect(batches.markers.get('7')?.tokenSeed).toBe(NEXT_SEED);
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
    expect(ec2.calls).toHaveLength(1);
  });

  test('a try whose start-to-close is (nearly) spent since Temporal scheduled it joins no batch', async () => {
    const { ec2, batches, activities } = setup(tokenEc2(), fakeLaunchBatches());
    // scheduled 110 s ago (its code ran late on a starved worker): past 7/8 of its 120 s
    await expect(attemptOf(activities, 1, INPUT, 110_000)).rejects.toThrow(
      'the launch try ended (cancelled, timed out or out of its budget) before its batch went out',
    );
    expect(batches.markers.get('7')).toBeUndefined();
    expect(ec2.calls).toHaveLength(0);
  });

  test("a refused try whose own deadline passes stops waiting and leaves the live retry's batch alone", async () => {
    const ec2 = tokenEc2();
    const batches = fakeLaunchBatches({ commit: true });
    // the live retry (worker B) is marked in its batch and is slow to record it
    const live = attemptOf(setup(ec2, batches).activities, 2);
    await batches.firstCommit;
    const held = batches.markers.get('7')!;
    // the stale try (worker A, the same attempt) has 1 s left of its 105 s: refused, it waits
    const began = Date.now();
    await expect(attemptOf(setup(ec2, batches).activities, 1, INPUT, 104_000)).rejects.toThrow(
      `the launch attempt is a member of launch batch ${held.batchId}`,
    );
    // it gave up when its own deadline passed, well before the 10 s wait for a stalled batch
    expect(Date.now() - began).toBeLessThan(9_000);
    // and did not abandon the live retry's batch
    expect(batches.batches.has(held.batchId)).toBe(false);
    batches.releaseCommit();
    await expect(live).resolves.toMatchObject({ instanceId: 'i-1' });
    expect(batches.batches.get(held.batchId)?.state).toBe('sent');
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  });
});
