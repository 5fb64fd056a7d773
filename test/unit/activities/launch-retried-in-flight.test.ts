import { MockActivityEnvironment } from '@temporalio/testing';
import { launchActivities, type StartInstanceInput } from '../../../activities/launch';
import type { ActivityDeps } from '../../../activities/deps';
import type { StartedInstance } from '../../../activities/types';
import type { LaunchBatch, LaunchBatchCall, LaunchMarker } from '../../../state/launch-batches';

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

interface Ec2 {
  /** RunInstances calls, by ClientToken. */
  calls: string[];
  /** Reservations EC2 made (one per distinct token): instance ids. */
  reservations: Map<string, string[]>;
  send: (cmd: { input: { ClientToken?: string; MaxCount?: number } }) => Promise<unknown>;
}

/** EC2's RunInstances, idempotent by ClientToken as EC2 is. */
function fakeEc2(): Ec2 {
  let next = 0;
  const calls: string[] = [];
  const reservations = new Map<string, string[]>();
  return {
    calls,
    reservations,
    send: (cmd) => {
      const token = cmd.input.ClientToken ?? '';
      calls.push(token);
      let ids = reservations.get(token);
      if (!ids) {
        ids = Array.from({ length: cmd.input.MaxCount ?? 1 }, () => `i-${(next += 1)}`);
        reservations.set(token, ids);
      }
      return Promise.resolve({
        Instances: ids.map((InstanceId, AmiLaunchIndex) => ({
          InstanceId,
          AmiLaunchIndex,
          State: { Name: 'pending' },
          Placement: { AvailabilityZone: 'us-east-1a' },
        })),
      });
    },
  };
}

/** The launch batches' records (state/launch-batches.ts) in memory; the first mark waits for `release`. */
function fakeBatches() {
  const markers = new Map<string, LaunchMarker>();
  const batches = new Map<string, LaunchBatch>();
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let firstMarkSeen!: () => void;
  const firstMark = new Promise<void>((r) => (firstMarkSeen = r));
  let marks = 0;
  return {
    markers,
    batches,
    release,
    firstMark,
    store: {
      async mark(_model: string, machineId: string, marker: LaunchMarker) {
        marks += 1;
        if (marks === 1) {
          firstMarkSeen();
          await released;
        }
        markers.set(machineId, marker);
        return true;
      },
      marker: (_model: string, machineId: string) => Promise.resolve(markers.get(machineId)),
      commit(_model: string, b: { id: string; members: string[]; call: LaunchBatchCall }) {
        if (batches.has(b.id)) return Promise.resolve(false);
        batches.set(b.id, { id: b.id, state: 'sent', members: b.members, call: b.call });
        return Promise.resolve(true);
      },
      settle(_model: string, id: string) {
        const held = batches.get(id);
        if (held) return Promise.resolve(held);
        const abandoned: LaunchBatch = { id, state: 'abandoned', members: [] };
        batches.set(id, abandoned);
        return Promise.resolve(abandoned);
      },
    },
  };
}

const INPUT: StartInstanceInput = {
  model: 'bench',
  machineId: '7',
  zone: 'us-east-1a',
  tokenSeed: 'machine:bench:7/run-1/1/1/us-east-1a',
  plan: {
    region: 'us-east-1',
    instanceType: 'm5.large',
    imageId: 'ami-1',
    hardware: { arch: 'amd64', cores: 2, mem: 8192, rootDisk: 8192 },
    zonesConstraint: [],
    applications: [],
  },
};

function setup() {
  const ec2 = fakeEc2();
  const batches = fakeBatches();
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
): Promise<StartedInstance> {
  const env = new MockActivityEnvironment({ attempt });
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
    batches.release();
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
    batches.release();
    const [a, b] = await Promise.all([first, next]);
    expect(a.instanceId).toBe('i-1');
    expect(b).toMatchObject({ instanceId: 'i-1', adopted: true });
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  });
});
