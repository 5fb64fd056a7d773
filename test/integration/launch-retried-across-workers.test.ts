import { MockActivityEnvironment } from '@temporalio/testing';
import { launchActivities, type StartInstanceInput } from '../../activities/launch';
import type { ActivityDeps } from '../../activities/deps';
import type { StartedInstance } from '../../activities/types';
import { LaunchBatchStore, type LaunchMarker } from '../../state/launch-batches';
import { Repository } from '../../state/repository';
import { tokenEc2 } from '../support/token-ec2';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack } from './stack';
import { M5_LARGE_PLAN } from '../support/launch-plan';

/**
 * A launch activity retried on a SECOND worker while its first try still
 * waits in the first worker's batch (a heartbeat timeout under load: the
 * first try is not stopped). One worker keeps one launch per machine in
 * process (launch-retried-in-flight.test.ts); across workers only the table
 * can: one token seed is a member of one live batch (state/launch-batches.ts
 * `mark`). Two LaunchBatchers ("workers" A and B, each its own
 * launchActivities) over the stack's real DynamoDB Local table and one EC2
 * that is idempotent by ClientToken as EC2 is; the first try is held in
 * worker A at each step of its batch in turn, and the retry runs on worker B.
 * Every case ends with one reservation and both tries answering its instance.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);

afterAll(() => ddb.destroy());

/** A gate a worker's step waits at: `reached` once it is there, `open` lets it on. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  return { open, opened, reached, reach };
}
type Gate = ReturnType<typeof gate>;

/** Where a worker's first batch is held: before its marks, before its commit, before its RunInstances. */
interface Holds {
  mark?: Gate;
  commit?: Gate;
  send?: Gate;
}

/** The table's batch store, as one worker uses it, with its first mark / commit held at a gate. */
function heldStore(real: LaunchBatchStore, holds: Holds, seen: { marks: LaunchMarker[] }) {
  let held = { mark: false, commit: false };
  const at = async (step: 'mark' | 'commit') => {
    const g = holds[step];
    if (!g || held[step]) return;
    held = { ...held, [step]: true };
    g.reach();
    await g.opened;
  };
  return {
    async mark(...args: Parameters<LaunchBatchStore['mark']>) {
      seen.marks.push(args[2]);
      await at('mark');
      return real.mark(...args);
    },
    async commit(...args: Parameters<LaunchBatchStore['commit']>) {
      await at('commit');
      return real.commit(...args);
    },
    marker: real.marker.bind(real),
    settle: real.settle.bind(real),
    written: real.written.bind(real),
    members: real.members.bind(real),
  };
}

function worker(ec2: ReturnType<typeof tokenEc2>, holds: Holds = {}) {
  const seen = { marks: [] as LaunchMarker[] };
  const batches = heldStore(new LaunchBatchStore(ddb, stack.tableName), holds, seen);
  let sendHeld = false;
  const send = async (cmd: { input: { ClientToken?: string; MaxCount?: number } }) => {
    if (holds.send && !sendHeld) {
      sendHeld = true;
      holds.send.reach();
      await holds.send.opened;
    }
    return ec2.send(cmd);
  };
  const deps = {
    store: { batches },
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
  return { activities: launchActivities(deps), seen };
}

/** Runs startInstance as try `attempt` of the activity on a worker. */
function tryOn(
  w: ReturnType<typeof worker>,
  attempt: number,
  input: StartInstanceInput,
): Promise<StartedInstance> {
  // a deployed launch's start-to-close timeout (the mock's default is 1 s)
  const env = new MockActivityEnvironment({
    attempt,
    startToCloseTimeoutMs: 120_000,
    currentAttemptScheduledTimestampMs: Date.now(),
  });
  return env.run(() => w.activities.startInstance(input));
}

/** A fresh model with one machine in the table, and the launch input of its attempt 1. */
async function machine(): Promise<StartInstanceInput> {
  const model = await seedModel(repo, 'xw');
  await repo.putNewMachines([pendingMachine(model, '0')]);
  return {
    model,
    machineId: '0',
    zone: 'us-east-1a',
    tokenSeed: `machine:${model}:0/run-1/1/1/us-east-1a`,
    plan: M5_LARGE_PLAN,
  };
}

const store = new LaunchBatchStore(ddb, stack.tableName);

describe('startInstance retried on another worker while its first try waits in its batch', () => {
  test('first try held before its batch marks the machine: the retry launches, the first takes its instance', async () => {
    const input = await machine();
    const ec2 = tokenEc2();
    const hold = gate();
    const a = worker(ec2, { mark: hold });
    const b = worker(ec2);
    const first = tryOn(a, 1, input);
    await hold.reached;
    // the retry on worker B finds no marker: it launches
    const retry = await tryOn(b, 2, input);
    expect(retry.instanceId).toBe('i-1');
    // the first try's batch goes on: the machine is held by B's batch for this attempt
    hold.open();
    const firstAnswer = await first;
    expect(firstAnswer.instanceId).toBe('i-1');
    expect(firstAnswer.adopted).toBe(false);
    // one reservation (A's own batch never went out: only B's token was ever sent)
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
    expect(new Set(ec2.calls).size).toBe(1);
    const aBatch = a.seen.marks[0]!.batchId;
    expect(await store.written(input.model, aBatch)).toBe(false);
    const marker = await store.marker(input.model, '0');
    expect(marker).toEqual({ batchId: b.seen.marks[0]!.batchId, tokenSeed: input.tokenSeed });
    expect(await store.members(input.model, marker!.batchId)).toEqual(['0']);
  }, 60_000);

  test("retry's batch marked first but not yet recorded: the first try waits for it and takes its instance", async () => {
    const input = await machine();
    const ec2 = tokenEc2();
    const holdA = gate();
    const holdB = gate();
    const a = worker(ec2, { mark: holdA });
    const b = worker(ec2, { commit: holdB });
    const first = tryOn(a, 1, input);
    await holdA.reached;
    const retry = tryOn(b, 2, input);
    // B's batch holds the machine (marked) but is not recorded yet
    await holdB.reached;
    holdA.open();
    // give the first try every chance to launch on its own meanwhile
    await new Promise((r) => setTimeout(r, 1_000));
    expect(ec2.calls).toHaveLength(0);
    holdB.open();
    const [x, y] = await Promise.all([first, retry]);
    expect(x.instanceId).toBe('i-1');
    expect(y.instanceId).toBe('i-1');
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  }, 60_000);

  test('first try marked, held before its batch is recorded: the retry abandons it and launches; the first takes that instance', async () => {
    const input = await machine();
    const ec2 = tokenEc2();
    const hold = gate();
    const a = worker(ec2, { commit: hold });
    const b = worker(ec2);
    const first = tryOn(a, 1, input);
    await hold.reached;
    const retry = await tryOn(b, 2, input);
    expect(retry.instanceId).toBe('i-1');
    const aBatch = a.seen.marks[0]!.batchId;
    expect(await store.settle(input.model, aBatch)).toMatchObject({ state: 'abandoned' });
    // A's batch cannot be recorded now (abandoned): the try launches again, finds B's
    // batch holding the machine, and answers its instance
    hold.open();
    expect((await first).instanceId).toBe('i-1');
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
    expect(new Set(ec2.calls).size).toBe(1);
  }, 60_000);

  test("first try's batch recorded, held before its RunInstances: the retry repeats that call, one reservation", async () => {
    const input = await machine();
    const ec2 = tokenEc2();
    const hold = gate();
    const a = worker(ec2, { send: hold });
    const b = worker(ec2);
    const first = tryOn(a, 1, input);
    await hold.reached;
    const retry = await tryOn(b, 2, input);
    expect(retry.instanceId).toBe('i-1');
    hold.open();
    expect((await first).instanceId).toBe('i-1');
    // both calls carried A's batch token: EC2 made one reservation
    expect(ec2.calls).toHaveLength(2);
    expect(new Set(ec2.calls).size).toBe(1);
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  }, 60_000);

  test('first worker dies after marking (its batch never recorded): the retry launches once', async () => {
    const input = await machine();
    const ec2 = tokenEc2();
    const never = gate();
    const a = worker(ec2, { commit: never });
    const b = worker(ec2);
    const first = tryOn(a, 1, input);
    await never.reached;
    // worker A is gone: its batch stays unrecorded for good
    const retry = await tryOn(b, 2, input);
    expect(retry.instanceId).toBe('i-1');
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
    expect(await store.settle(input.model, a.seen.marks[0]!.batchId)).toMatchObject({
      state: 'abandoned',
      members: [],
    });
    // (were it only stalled and came back, it would answer the same instance, launching none)
    never.open();
    expect((await first).instanceId).toBe('i-1');
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  }, 60_000);

  test('a try whose activity is over (cancelled) joins no batch', async () => {
    const input = await machine();
    const ec2 = tokenEc2();
    const a = worker(ec2);
    const env = new MockActivityEnvironment({
      attempt: 1,
      startToCloseTimeoutMs: 120_000,
      currentAttemptScheduledTimestampMs: Date.now(),
    });
    const running = env.run(() => a.activities.startInstance(input));
    env.cancel('TIMED_OUT');
    await expect(running).rejects.toThrow(
      'the launch try ended (cancelled, timed out or out of its budget) before its batch went out',
    );
    expect(ec2.calls).toHaveLength(0);
    expect(await store.marker(input.model, '0')).toBeUndefined();
  }, 60_000);
});
