import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { CancelledFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Coalescer } from '../../../activities/coalescer';
import { FIRST_TASK_LAUNCH_BUDGET_MS } from '../../../activities/launch';
import type { LaunchRequest } from '../../../activities/launch-batcher';
import { activityLog } from '../../../activities/log';
import { runningCatchUpsSettled } from '../../../activities/running-catch-up';
import type {
  FirstLaunch,
  LaunchPlan,
  MachineSnapshot,
  StartedInstance,
} from '../../../activities/types';
import { METRIC } from '../../../config/metrics';
import { workerMetrics } from '../../../config/worker-metrics';
import type { InstanceTypeInfo } from '../../../core';
import { FAILURE } from '../../../temporal/failures';
import { claimantOf, launchTokenSeed } from '../../../temporal/launch-token';
import { firstReadFakes, localActivityOf, RUN } from '../../support/first-read';
import { fakeLaunchBatches } from '../../support/launch-batches';
import { machineItem as itemOf } from '../../support/machines';
import { TokenBucket } from '../../../ec2/token-bucket';
import { tokenEc2 } from '../../support/token-ec2';

/**
 * Issue 26, LAUNCH_IN_READ (workflows/patches.ts): a machine's first read,
 * told the pass and attempt its launch is for, plans, claims and launches in
 * one step, and answers the instance (`prepared.launched`, recorded on the
 * machine). The token seed is the one the workflow would make, so a first
 * read run again for the same run (its workflow task lost) keeps its zone
 * and finds the same instance; a failure the launch would not retry comes
 * back as data, any other leaves the launch to the workflow; a cancellation
 * (a destroy) cuts the step short only before its launch went out.
 */

const FIRST: FirstLaunch = { pass: 1, attempt: 1 };
const catalogue: InstanceTypeInfo[] = [
  { name: 't3.small', arches: ['amd64'], cores: 2, mem: 2048 },
];

/**
 * A machine's first read over fakes: the table holds `item`, zone claims
 * answer their first choice, EC2 is idempotent by token (and throws `fail`
 * once, when set), launches are batched in memory.
 */
function setup(
  item: Record<string, unknown>,
  options: {
    batches?: ReturnType<typeof fakeLaunchBatches>;
    ec2?: ReturnType<typeof tokenEc2>;
    fail?: Error;
    /** Thrown by RunInstances after EC2 made the launch (its answer lost), once each, in order. */
    lost?: Error[];
    read?: Promise<void>;
    /** The launch batch window (idle and max), ms. */
    window?: number;
    /** The first read's launch budget (PROVISIONER_FIRST_LAUNCH_BUDGET), ms. */
    budget?: number;
    /**
     * The first read's budget as the test drives it (deps `firstLaunchBudget`): runs out when
     * the test aborts it, whatever the clock says; `left` gets what the read had left of it.
     */
    budgetEnds?: { signal: AbortSignal; left?: (ms: number) => void };
    /** RunInstances waits for `released` before it answers (`reached` once it is sent). */
    hold?: { reached: () => void; released: Promise<void> };
    /** The worker's own RunInstances bucket (local pacing: no shared record here). */
    pacing?: { burst: number; perSecond: number };
  } = {},
) {
  const ec2 = options.ec2 ?? tokenEc2();
  const batches = options.batches ?? fakeLaunchBatches();
  const recorded: Array<{ machineId: string; instanceId: string }> = [];
  let fail = options.fail;
  const lost = [...(options.lost ?? [])];
  const {
    claims,
    launch: { startInstance },
    records,
  } = firstReadFakes({
    item,
    catalogue,
    read: options.read,
    // an EC2Client to the SDK's paginator: the running catch-up of a recorded launch describes it
    ec2: Object.assign(Object.create(EC2Client.prototype) as object, {
      send: (cmd: { input: { ClientToken?: string; MaxCount?: number } }) => {
        // EC2 lists no instance yet: the catch-up leaves the launch to its event, quietly
        if (cmd instanceof DescribeInstancesCommand) return Promise.resolve({ Reservations: [] });
        if (fail !== undefined) {
          const err = fail;
          fail = undefined;
          ec2.calls.push(cmd.input.ClientToken ?? '');
          return Promise.reject(err);
        }
        const hold = options.hold;
        if (hold) {
          hold.reached();
          return hold.released.then(() => ec2.send(cmd));
        }
        const answer = ec2.send(cmd);
        const gone = lost.shift();
        return gone === undefined ? answer : answer.then(() => Promise.reject(gone));
      },
    }),
    store: {
      batches: batches.store,
      recordRunning: (_model: string, machineId: string, run: { instanceId: string }) => {
        recorded.push({ machineId, instanceId: run.instanceId });
        return Promise.resolve('alive');
      },
    },
    tuning: {
      launchBurst: options.pacing?.burst ?? 100,
      launchRatePerSecond: options.pacing?.perSecond ?? 100,
      launchBatchIdleMs: options.window ?? 5,
      launchBatchMaxMs: options.window ?? 20,
      ...(options.budget !== undefined ? { firstLaunchBudgetMs: options.budget } : {}),
    },
    ...(options.budgetEnds
      ? {
          deps: {
            firstLaunchBudget: (leftMs: number) => {
              options.budgetEnds!.left?.(leftMs);
              return options.budgetEnds!.signal;
            },
          },
        }
      : {}),
  });
  /**
   * The first read, as the run's local activity runs it (`launch`: what the workflow passes;
   * `scheduledAgoMs`: how long before now the workflow scheduled it).
   */
  const firstRead = (launch: FirstLaunch | undefined = FIRST, scheduledAgoMs = 0) => {
    const env = localActivityOf(RUN, 120_000, scheduledAgoMs);
    const read = () =>
      records.loadMachine({
        model: 'm',
        machineId: '0',
        prepare: true,
        ...(launch ? { launch } : {}),
      });
    const answer = env.run<[], MachineSnapshot | null, typeof read>(read);
    return { env, answer };
  };
  /** The workflow's own launch step (local), for attempt 1 of pass 1 in `zone`. */
  const launchStep = (zone: string, plan: LaunchPlan) =>
    localActivityOf(RUN, 120_000).run(startInstance, {
      model: 'm',
      machineId: '0',
      zone,
      plan,
      tokenSeed: launchTokenSeed(RUN, 1, 1, zone),
      record: true,
    });
  /**
   * The workflow's launch step as the activity it schedules when the first read left its
   * launch to it (`launchInTask: false`: LAUNCH_OPTIONS, not local), same seed as the read's.
   */
  const launchActivity = (zone: string, plan: LaunchPlan) =>
    new MockActivityEnvironment({
      attempt: 1,
      workflowExecution: RUN,
      startToCloseTimeoutMs: 120_000,
      heartbeatTimeoutMs: 60_000,
      currentAttemptScheduledTimestampMs: Date.now(),
    }).run(startInstance, {
      model: 'm',
      machineId: '0',
      zone,
      plan,
      tokenSeed: launchTokenSeed(RUN, 1, 1, zone),
      record: true,
    });
  return {
    ec2,
    batches,
    claims,
    recorded,
    firstRead,
    records,
    launch: { startInstance },
    launchStep,
    launchActivity,
  };
}

// A launch recorded here opens its running catch-up's window (a describe 1–3 s later): waited
// out before the next file (the unit project's guard, test/support/settled-catch-ups.ts, runs
// before this top-level hook and already waits; this says so where the launches are made).
afterAll(() => runningCatchUpsSettled());

/** A first read (over `options`) cancelled by a destroy while its launch's batch is being committed. */
async function cancelledWhileCommitting(options: Parameters<typeof setup>[1] = {}) {
  const batches = fakeLaunchBatches({ commit: true });
  const t = setup(itemOf(), { ...options, batches });
  const { env, answer } = t.firstRead();
  await batches.firstCommit;
  env.cancel();
  batches.releaseCommit();
  return { t, read: await answer };
}

describe("a machine's first read told its launch (LAUNCH_IN_READ)", () => {
  it('plans, claims and launches in one step, with the seed the workflow would make, and records the instance', async () => {
    const t = setup(itemOf());
    const answer = await t.firstRead().answer;
    expect(t.claims).toHaveLength(1);
    const zone = answer!.prepared!.zone!;
    expect(zone).toBe('us-east-1a');
    expect(answer!.prepared).toMatchObject({
      launchInTask: true,
      launched: { instanceId: 'i-1', zone: 'us-east-1a', adopted: false, recorded: 'alive' },
    });
    expect(answer!.prepared!.launchFailure).toBeUndefined();
    // one RunInstances; the machine's batch marked with the workflow's own seed for pass 1, attempt 1
    expect(t.ec2.calls).toHaveLength(1);
    expect(t.batches.markers.get('0')?.tokenSeed).toBe(launchTokenSeed(RUN, 1, 1, zone));
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });

  it('seeds the launch with the pass and attempt it is told', async () => {
    const t = setup(itemOf());
    const answer = await t.firstRead({ pass: 3, attempt: 1 }).answer;
    expect(t.batches.markers.get('0')?.tokenSeed).toBe(
      launchTokenSeed(RUN, 3, 1, answer!.prepared!.zone!),
    );
  });

  it('launches nothing when not told (a worker of older code asks no launch)', async () => {
    const t = setup(itemOf());
    const answer = await t.firstRead(null as unknown as undefined).answer;
    expect(answer!.prepared).toMatchObject({ zone: 'us-east-1a', launchInTask: true });
    expect(answer!.prepared!.launched).toBeUndefined();
    expect(t.ec2.calls).toEqual([]);
  });

  it('launches nothing outside a run (no run to seed the launch with)', async () => {
    const t = setup(itemOf());
    const answer = await t.records.loadMachine({
      model: 'm',
      machineId: '0',
      prepare: true,
      launch: FIRST,
    });
    expect(answer!.prepared?.zone).toBe('us-east-1a');
    expect(answer!.prepared?.launched).toBeUndefined();
    expect(t.ec2.calls).toEqual([]);
  });

  it('run again for the same run (its workflow task lost), keeps the zone and answers the same instance', async () => {
    // one EC2 and one table (the batches' records) for both workers
    const batches = fakeLaunchBatches();
    const ec2 = tokenEc2();
    const first = await setup(itemOf(), { batches, ec2 }).firstRead().answer;
    const zone = first!.prepared!.zone!;
    // another worker, the machine as the lost task left it: claimed by this run, marked
    const again = setup(
      itemOf({ status: 'allocating', zoneClaim: zone, claimedBy: claimantOf(RUN, 1) }),
      { batches, ec2 },
    );
    const answer = await again.firstRead().answer;
    expect(again.claims).toEqual([]);
    expect(answer!.prepared).toMatchObject({ zone, launched: { instanceId: 'i-1' } });
    // its mark was refused (same seed, another batch): it took that batch's instance (asking
    // EC2 again with the batch's token answers the same reservation), one batch sent, one instance
    expect([...batches.batches.values()].filter((b) => b.state === 'sent')).toHaveLength(1);
    expect([...ec2.reservations.values()]).toEqual([['i-1']]);
  });

  it('answers a failure the launch would not retry as data, for the pass to handle', async () => {
    const capacity = Object.assign(new Error('We currently do not have sufficient capacity'), {
      name: 'InsufficientInstanceCapacity',
      $metadata: { httpStatusCode: 500 },
    });
    const t = setup(itemOf(), { fail: capacity });
    const answer = await t.firstRead().answer;
    expect(answer!.prepared).toMatchObject({
      zone: 'us-east-1a',
      launchInTask: true,
      launchFailure: { type: FAILURE.zoneUnavailable, message: expect.any(String) },
    });
    expect(answer!.prepared!.launched).toBeUndefined();
    expect(t.recorded).toEqual([]);
  });

  it('repeats the batch once after a failure the launch would retry (recover, same token): the launch EC2 never got is made then', async () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const t = setup(itemOf(), { fail: reset });
    const answer = await t.firstRead().answer;
    expect(answer!.prepared).toMatchObject({
      zone: 'us-east-1a',
      launchInTask: true,
      launched: { instanceId: 'i-1', recorded: 'alive' },
    });
    expect(answer!.prepared!.launchFailure).toBeUndefined();
    // the repeat is the batch's own call (its token), not a new batch: one instance
    expect(t.ec2.calls).toHaveLength(2);
    expect(t.ec2.calls[1]).toBe(t.ec2.calls[0]);
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
  });
});

describe("a first read's launch whose batch went out but whose answer was lost", () => {
  const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

  it('asks recover once: the instance is answered and recorded, one instance in all', async () => {
    const t = setup(itemOf(), { lost: [reset()] });
    const answer = await t.firstRead().answer;
    expect(answer!.prepared).toMatchObject({
      zone: 'us-east-1a',
      launched: { instanceId: 'i-1', recorded: 'alive' },
    });
    expect(answer!.prepared!.launchFailure).toBeUndefined();
    // the batch's call repeated with its token: EC2 answered the same reservation
    expect(t.ec2.calls).toHaveLength(2);
    expect(t.ec2.calls[1]).toBe(t.ec2.calls[0]);
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });

  it('cancelled by a destroy meanwhile: still answers the instance, so the workflow keeps it', async () => {
    const { t, read } = await cancelledWhileCommitting({ lost: [reset()] });
    expect(read!.prepared?.launched).toMatchObject({ instanceId: 'i-1', recorded: 'alive' });
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });

  it("the repeat's answer lost too: no launched; the workflow's launch step (same seed) takes the same instance", async () => {
    const t = setup(itemOf(), { lost: [reset(), reset()] });
    const answer = await t.firstRead().answer;
    expect(answer!.prepared!.launched).toBeUndefined();
    expect(answer!.prepared!.launchFailure).toBeUndefined();
    const { zone, plan } = answer!.prepared!;
    const started = await t.launchStep(zone!, plan!);
    // its mark is refused (same seed, another batch): it waits for that batch and repeats its
    // call with the batch's token, and EC2 answers the same reservation
    expect(started).toMatchObject({ instanceId: 'i-1', recorded: 'alive' });
    expect(new Set(t.ec2.calls).size).toBe(1);
    expect(t.ec2.calls).toHaveLength(3);
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
    expect([...t.batches.batches.values()].filter((b) => b.state === 'sent')).toHaveLength(1);
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });
});

describe('a destroy cancels the first read that launches', () => {
  /**
   * A try its batch left out: nothing launched or recorded, and not the warning a first read
   * logs when it leaves its launch to the workflow (`warn`, a spy on it, is restored).
   */
  function expectLeftOutQuietly(t: ReturnType<typeof setup>, warn: jest.SpyInstance) {
    expect(t.ec2.calls).toEqual([]);
    expect(t.recorded).toEqual([]);
    expect(warn.mock.calls.map(([message]) => message as unknown)).not.toContain(
      'launch with the first read failed; the workflow launches on its own',
    );
    warn.mockRestore();
  }

  it('before its launch began: answered as cancelled, nothing launched', async () => {
    // the machine's read waits: the step has not planned yet when the cancellation comes
    let read!: () => void;
    const t = setup(itemOf(), { read: new Promise<void>((r) => (read = r)) });
    const { env, answer } = t.firstRead();
    env.cancel();
    read();
    await expect(answer).rejects.toThrow();
    // give a launch every chance to go out
    await new Promise((r) => setTimeout(r, 200));
    expect(t.ec2.calls).toEqual([]);
  });

  it('while its launch waits in its batch: withdrawn and answered cancelled at once, no warning, the batch leaves it out', async () => {
    // a batch window of 20 s: the answer must not wait for it
    const t = setup(itemOf(), { window: 20_000 });
    const warn = jest.spyOn(activityLog, 'warn');
    let submitted!: () => void;
    const inBatch = new Promise<void>((r) => (submitted = r));
    const original = Coalescer.prototype.submit;
    const submit = jest.spyOn(Coalescer.prototype, 'submit');
    submit.mockImplementation(function (this: Coalescer<unknown, unknown>, ...args) {
      if ((args[1] as { tokenSeed?: unknown }).tokenSeed !== undefined) submitted();
      return original.apply(this, args);
    });
    try {
      const { env, answer } = t.firstRead();
      await inBatch;
      env.cancel();
      await expect(answer).rejects.toThrow();
    } finally {
      submit.mockRestore();
    }
    expect(t.batches.markers.size).toBe(0);
    expectLeftOutQuietly(t, warn);
  });

  it('while its batch is being marked: the batch leaves it out, answered cancelled, no warning', async () => {
    const batches = fakeLaunchBatches({ mark: true });
    const t = setup(itemOf(), { batches });
    const warn = jest.spyOn(activityLog, 'warn');
    const { env, answer } = t.firstRead();
    await batches.firstMark;
    env.cancel();
    batches.releaseMark();
    await expect(answer).rejects.toThrow();
    expectLeftOutQuietly(t, warn);
  });

  it('once its batch went out: not given up, the answer carries the instance, recorded', async () => {
    // the batch is marked and being committed: past the point where it could leave the try out
    const { t, read } = await cancelledWhileCommitting();
    expect(read!.prepared?.launched).toMatchObject({ instanceId: 'i-1', recorded: 'alive' });
    expect(t.ec2.calls).toHaveLength(1);
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });
});

/**
 * Reads of the machine's launch marker, which `recover` begins with (and
 * nothing else on these paths makes): none means the first read recovered
 * nothing.
 */
function countRecoveries(batches: ReturnType<typeof fakeLaunchBatches>) {
  const seen = { markerReads: 0 };
  const marker = batches.store.marker;
  batches.store.marker = (model: string, machineId: string) => {
    seen.markerReads += 1;
    return marker(model, machineId);
  };
  return seen;
}

/** A promise resolved from outside, and whether it was. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A first read's budget the test ends itself (setup's `budgetEnds`), and what the read had left. */
function budgetControl() {
  const ends = new AbortController();
  const left: number[] = [];
  return {
    ends: () => ends.abort(),
    budgetEnds: { signal: ends.signal, left: (ms: number) => left.push(ms) },
    left,
  };
}

/**
 * Calls to `submit` of every coalescer from now on: `first` resolves with the first launch
 * request (one with a token seed) a batch is given. `restore` puts `submit` back.
 */
function watchSubmits() {
  let submitted!: (request: LaunchRequest) => void;
  const first = new Promise<LaunchRequest>((r) => (submitted = r));
  const original = Coalescer.prototype.submit;
  const submit = jest.spyOn(Coalescer.prototype, 'submit');
  submit.mockImplementation(function (this: Coalescer<unknown, unknown>, ...args) {
    const request = args[1] as Partial<LaunchRequest>;
    if (request.tokenSeed !== undefined) submitted(request as LaunchRequest);
    return original.apply(this, args);
  });
  return { first, restore: () => submit.mockRestore() };
}

/** The debug lines, warnings and metric counts logged while `work` runs. */
async function watched<T>(work: () => Promise<T>) {
  const debug = jest.spyOn(activityLog, 'debug');
  const warn = jest.spyOn(activityLog, 'warn');
  const count = jest.spyOn(workerMetrics, 'count');
  try {
    const value = await work();
    return {
      value,
      debugged: debug.mock.calls.map(([message, attrs]) => ({ message, attrs })),
      warned: warn.mock.calls.map(([message]) => message),
      deferredCounts: count.mock.calls.filter(([name]) => name === METRIC.firstLaunchesDeferred),
    };
  } finally {
    debug.mockRestore();
    warn.mockRestore();
    count.mockRestore();
  }
}

const DEFERRED = 'first read left its launch to an activity: its budget ran out';

describe("a first read's launch past its budget (LAUNCH_OUT_OF_TASK)", () => {
  it('has 12 s unless the worker says otherwise, counted from when the workflow scheduled the read', async () => {
    const byDefault = budgetControl();
    await setup(itemOf(), { budgetEnds: byDefault.budgetEnds }).firstRead().answer;
    expect(byDefault.left).toHaveLength(1);
    expect(byDefault.left[0]).toBeLessThanOrEqual(FIRST_TASK_LAUNCH_BUDGET_MS);
    expect(byDefault.left[0]).toBeGreaterThan(FIRST_TASK_LAUNCH_BUDGET_MS - 5_000);
    // scheduled 3 s before it ran (a starved worker): those 3 s are spent already
    const late = budgetControl();
    const t = setup(itemOf(), { budgetEnds: late.budgetEnds, budget: 8_000 });
    await t.firstRead(FIRST, 3_000).answer;
    expect(late.left[0]).toBeLessThanOrEqual(5_000);
    expect(late.left[0]).toBeGreaterThan(0);
  });

  it('spent before the launch (the read scheduled long before it ran): answered launchInTask false, nothing batched or sent; the activity then launches the one instance', async () => {
    const batches = fakeLaunchBatches();
    const seen = countRecoveries(batches);
    const t = setup(itemOf(), { batches });
    const submits = watchSubmits();
    let outcome;
    try {
      // scheduled 20 s ago: the default 12 s are gone when the step runs
      outcome = await watched(() => t.firstRead(FIRST, 20_000).answer);
    } finally {
      submits.restore();
    }
    const { value: answer, debugged, warned, deferredCounts } = outcome;
    expect(answer!.prepared).toMatchObject({ zone: 'us-east-1a', launchInTask: false });
    expect(answer!.prepared!.launched).toBeUndefined();
    expect(debugged).toEqual([
      {
        message: DEFERRED,
        attrs: expect.objectContaining({ when: 'before the launch', budgetMs: 12_000 }) as unknown,
      },
    ]);
    expect(warned).toEqual([]);
    expect(deferredCounts).toHaveLength(1);
    expect(t.ec2.calls).toEqual([]);
    expect(t.batches.markers.size).toBe(0);
    expect(seen.markerReads).toBe(0);
    const { zone, plan } = answer!.prepared!;
    await expect(t.launchActivity(zone!, plan!)).resolves.toMatchObject({
      instanceId: 'i-1',
      recorded: 'alive',
    });
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
  });

  it('whose batch still gathers: withdrawn, answered without launched and launchInTask false, nothing sent, nothing recovered, counted once; the activity then launches the one instance', async () => {
    // a window of 3 s: the batch still gathers when the test ends the budget
    const batches = fakeLaunchBatches();
    const seen = countRecoveries(batches);
    const budget = budgetControl();
    const t = setup(itemOf(), { batches, window: 3_000, budgetEnds: budget.budgetEnds });
    const submits = watchSubmits();
    let outcome;
    try {
      outcome = await watched(async () => {
        const { answer } = t.firstRead();
        await submits.first;
        budget.ends();
        return answer;
      });
    } finally {
      submits.restore();
    }
    const { value: answer, debugged, warned, deferredCounts } = outcome;
    expect(answer!.prepared).toMatchObject({ zone: 'us-east-1a', launchInTask: false });
    expect(answer!.prepared!.launched).toBeUndefined();
    expect(answer!.prepared!.launchFailure).toBeUndefined();
    expect(t.ec2.calls).toEqual([]);
    expect(t.batches.markers.size).toBe(0);
    expect(t.recorded).toEqual([]);
    expect(seen.markerReads).toBe(0);
    // one debug line, saying the try was withdrawn from its batch; no warning (nothing failed)
    expect(debugged).toEqual([
      {
        message: DEFERRED,
        attrs: expect.objectContaining({
          model: 'm',
          machineId: '0',
          zone: 'us-east-1a',
          when: 'withdrawn from its batch',
        }) as unknown,
      },
    ]);
    expect(warned).toEqual([]);
    expect(deferredCounts).toEqual([[METRIC.firstLaunchesDeferred]]);
    // nothing of the withdrawn try goes out later either: its batch was dropped
    await sleep(3_500);
    expect(t.ec2.calls).toEqual([]);
    // the workflow's launch activity, same seed: the one instance, recorded
    const { zone, plan } = answer!.prepared!;
    const started = await t.launchActivity(zone!, plan!);
    expect(started).toMatchObject({ instanceId: 'i-1', recorded: 'alive' });
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
    expect(t.batches.markers.get('0')?.tokenSeed).toBe(launchTokenSeed(RUN, 1, 1, zone!));
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });

  it('made within the budget: answered launched, in the task, as before, nothing deferred', async () => {
    const budget = budgetControl();
    const t = setup(itemOf(), { budgetEnds: budget.budgetEnds });
    const { value: answer, debugged, deferredCounts } = await watched(() => t.firstRead().answer);
    expect(answer!.prepared).toMatchObject({
      launchInTask: true,
      launched: { instanceId: 'i-1', recorded: 'alive' },
    });
    expect(t.ec2.calls).toHaveLength(1);
    expect(debugged).toEqual([]);
    expect(deferredCounts).toEqual([]);
  });

  it('whose batch went out before the budget and answers after it: waited for, its instance answered', async () => {
    const batches = fakeLaunchBatches();
    const seen = countRecoveries(batches);
    const sent = gate();
    const answered = gate();
    const budget = budgetControl();
    const t = setup(itemOf(), {
      batches,
      budgetEnds: budget.budgetEnds,
      hold: { reached: sent.open, released: answered.opened },
    });
    const { answer } = t.firstRead();
    await sent.opened;
    // the budget ends while EC2 has not answered
    budget.ends();
    await sleep(200);
    answered.open();
    const read = await answer;
    expect(read!.prepared).toMatchObject({
      launchInTask: true,
      launched: { instanceId: 'i-1', recorded: 'alive' },
    });
    expect(t.ec2.calls).toHaveLength(1);
    expect(seen.markerReads).toBe(0);
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  });

  it('whose batch was being committed when the budget ended: not given up, its instance answered', async () => {
    const batches = fakeLaunchBatches({ commit: true });
    const budget = budgetControl();
    const t = setup(itemOf(), { batches, budgetEnds: budget.budgetEnds });
    const { answer } = t.firstRead();
    await batches.firstCommit;
    budget.ends();
    await sleep(200);
    batches.releaseCommit();
    const read = await answer;
    expect(read!.prepared).toMatchObject({ launchInTask: true, launched: { instanceId: 'i-1' } });
    expect(t.ec2.calls).toHaveLength(1);
  });

  it('whose batch was being marked when the budget ended: still its member (the batch is waited for anyway), its instance answered, nothing recovered', async () => {
    const batches = fakeLaunchBatches({ mark: true });
    const seen = countRecoveries(batches);
    const budget = budgetControl();
    const t = setup(itemOf(), { batches, budgetEnds: budget.budgetEnds });
    const { answer } = t.firstRead();
    await batches.firstMark;
    budget.ends();
    await sleep(200);
    batches.releaseMark();
    const read = await answer;
    expect(read!.prepared).toMatchObject({
      launchInTask: true,
      launched: { instanceId: 'i-1', recorded: 'alive' },
    });
    expect(t.ec2.calls).toHaveLength(1);
    expect(seen.markerReads).toBe(0);
    const marker = t.batches.markers.get('0');
    expect(t.batches.batches.get(marker!.batchId)).toMatchObject({ state: 'sent', members: ['0'] });
  });

  it('whose batch of two was being marked when the budget ended: both launched in its one call, the read answered its instance', async () => {
    const batches = fakeLaunchBatches({ mark: true });
    const budget = budgetControl();
    // a window of 3 s: machine 1's launch joins the read's batch
    const t = setup(itemOf(), { batches, window: 3_000, budgetEnds: budget.budgetEnds });
    const submits = watchSubmits();
    let other: Promise<StartedInstance>;
    let read: MachineSnapshot | null;
    try {
      const { answer } = t.firstRead();
      const request = await submits.first;
      other = new MockActivityEnvironment({
        attempt: 1,
        startToCloseTimeoutMs: 120_000,
        currentAttemptScheduledTimestampMs: Date.now(),
      }).run(t.launch.startInstance, {
        model: 'm',
        machineId: '1',
        zone: request.zone,
        plan: request.plan,
        tokenSeed: 'machine-1-seed',
      });
      // the read's mark (the batch's first) waits; the budget ends meanwhile
      await batches.firstMark;
      budget.ends();
      await sleep(200);
      batches.releaseMark();
      read = await answer;
    } finally {
      submits.restore();
    }
    expect(read!.prepared).toMatchObject({
      launchInTask: true,
      launched: { instanceId: 'i-1', recorded: 'alive' },
    });
    await expect(other).resolves.toMatchObject({ instanceId: 'i-2' });
    expect(t.ec2.calls).toHaveLength(1);
    expect([...t.ec2.reservations.values()]).toEqual([['i-1', 'i-2']]);
    const marker = t.batches.markers.get('0');
    expect(t.batches.batches.get(marker!.batchId)).toMatchObject({
      state: 'sent',
      members: ['0', '1'],
    });
  });

  it('ending while the read waits for another batch of its attempt (a first read run again): given up, answered launchInTask false; the activity settles that batch and launches one instance', async () => {
    const batches = fakeLaunchBatches();
    const seen = countRecoveries(batches);
    const seed = launchTokenSeed(RUN, 1, 1, 'us-east-1a');
    // the lost first task's read marked the machine for a batch that never recorded itself
    batches.markers.set('0', { batchId: 'lost-batch', tokenSeed: seed });
    let waiting!: () => void;
    const waits = new Promise<void>((r) => (waiting = r));
    const written = batches.store.written;
    batches.store.written = (model: string, id: string) => {
      if (id === 'lost-batch') waiting();
      return written(model, id);
    };
    const budget = budgetControl();
    const t = setup(itemOf(), { batches, budgetEnds: budget.budgetEnds });
    const { value: answer, debugged } = await watched(async () => {
      const { answer } = t.firstRead();
      await waits;
      budget.ends();
      return answer;
    });
    expect(answer!.prepared).toMatchObject({ zone: 'us-east-1a', launchInTask: false });
    expect(answer!.prepared!.launched).toBeUndefined();
    expect(debugged).toEqual([
      {
        message: DEFERRED,
        attrs: expect.objectContaining({ when: 'withdrawn from its batch' }) as unknown,
      },
    ]);
    // the read left that batch alone: not settled, nothing recovered, nothing sent
    expect(t.batches.batches.has('lost-batch')).toBe(false);
    expect(seen.markerReads).toBe(0);
    expect(t.ec2.calls).toEqual([]);
    // the activity waits for that batch (HELD_BATCH_WAIT_MS), then settles and replaces it
    const started = await t.launchActivity('us-east-1a', answer!.prepared!.plan!);
    expect(started).toMatchObject({ instanceId: 'i-1', recorded: 'alive' });
    expect(t.batches.batches.get('lost-batch')?.state).toBe('abandoned');
    expect([...t.ec2.reservations.values()]).toEqual([['i-1']]);
    expect(t.batches.markers.get('0')).toMatchObject({ tokenSeed: seed });
    expect(t.recorded).toEqual([{ machineId: '0', instanceId: 'i-1' }]);
  }, 60_000);

  it('a destroy before the budget ends is a cancellation, as before: answered cancelled, not deferred', async () => {
    const budget = budgetControl();
    const t = setup(itemOf(), { window: 20_000, budgetEnds: budget.budgetEnds });
    const submits = watchSubmits();
    let outcome;
    try {
      outcome = await watched(async () => {
        const { env, answer } = t.firstRead();
        await submits.first;
        env.cancel();
        return answer.then(
          () => 'answered',
          (err: unknown) => err,
        );
      });
    } finally {
      submits.restore();
    }
    expect(outcome.value).toBeInstanceOf(CancelledFailure);
    expect(outcome.debugged).toEqual([]);
    expect(outcome.deferredCounts).toEqual([]);
    expect(t.ec2.calls).toEqual([]);
    expect(t.batches.markers.size).toBe(0);
  });

  describe('withdrawn while its batch waits at the gate for a token (local pacing)', () => {
    /**
     * A bucket of one token, a token every 4 s: a launch of machine 1 spends it, so the read's
     * batch then waits at the gate seconds (ample time to end the budget there). `atGate`:
     * the bucket and the gate's take once the read's batch waits there (the second take).
     */
    async function atTheGate() {
      const budget = budgetControl();
      const t = setup(itemOf(), {
        window: 20,
        budgetEnds: budget.budgetEnds,
        pacing: { burst: 1, perSecond: 0.25 },
      });
      const original = TokenBucket.prototype.take;
      let reached!: (at: { bucket: TokenBucket; taken: Promise<void> }) => void;
      const atGate = new Promise<{ bucket: TokenBucket; taken: Promise<void> }>(
        (r) => (reached = r),
      );
      let takes = 0;
      const take = jest.spyOn(TokenBucket.prototype, 'take').mockImplementation(function (
        this: TokenBucket,
      ) {
        const taken = original.call(this);
        takes += 1;
        if (takes === 2) reached({ bucket: this, taken });
        return taken;
      });
      // the plan and zone (a read told no launch), for the other machines' launches
      const { zone, plan } = (await t.firstRead(null as unknown as undefined).answer)!.prepared!;
      const launchOf = (machineId: string) =>
        new MockActivityEnvironment({
          attempt: 1,
          startToCloseTimeoutMs: 120_000,
          currentAttemptScheduledTimestampMs: Date.now(),
        }).run(t.launch.startInstance, {
          model: 'm',
          machineId,
          zone: zone!,
          plan: plan!,
          tokenSeed: `machine-${machineId}-seed`,
        });
      await expect(launchOf('1')).resolves.toMatchObject({ instanceId: 'i-1' });
      const { answer } = t.firstRead();
      const gate = await atGate;
      expect(gate.bucket.waiting).toBe(1);
      return {
        t,
        budget,
        answer,
        gate,
        launchOf,
        takes: () => takes,
        restore: () => take.mockRestore(),
      };
    }

    /** Whether the bucket has a token now: a take served without waiting for a refill. */
    async function hasToken(bucket: TokenBucket): Promise<boolean> {
      let served = false;
      void bucket.take().then(() => (served = true));
      await new Promise((r) => setImmediate(r));
      return served;
    }

    it('alone in it: answered launchInTask false, the batch dropped when the gate lets it through, nothing marked or sent, its token given back', async () => {
      const { t, budget, answer, gate, restore } = await atTheGate();
      try {
        budget.ends();
        const read = await answer;
        expect(read!.prepared).toMatchObject({ launchInTask: false });
        expect(read!.prepared!.launched).toBeUndefined();
        // the token comes (seconds later) and goes back at once: the next take is served now
        await gate.taken;
        await new Promise((r) => setImmediate(r));
        expect(await hasToken(gate.bucket)).toBe(true);
      } finally {
        restore();
      }
      // machine 1's call only; the read's try marked nothing
      expect(t.ec2.calls).toHaveLength(1);
      expect(t.batches.markers.has('0')).toBe(false);
      expect([...t.batches.batches.values()].filter((b) => b.state === 'sent')).toHaveLength(1);
    });

    it('with another launch in it: the batch still goes, with that one member, on its token', async () => {
      const { t, budget, answer, gate, launchOf, takes, restore } = await atTheGate();
      let other: ReturnType<typeof launchOf>;
      try {
        // machine 2 joins the batch while it waits at the gate; the read's budget then ends
        const joined = watchSubmits();
        other = launchOf('2');
        await joined.first;
        joined.restore();
        budget.ends();
        expect((await answer)!.prepared).toMatchObject({ launchInTask: false });
        await expect(other).resolves.toMatchObject({ instanceId: 'i-2' });
        // machine 2 joined the read's batch (no gate of its own), whose token went on its call:
        // none is left
        await gate.taken;
        expect(takes()).toBe(2);
        expect(await hasToken(gate.bucket)).toBe(false);
      } finally {
        restore();
      }
      expect(t.ec2.calls).toHaveLength(2);
      expect([...t.ec2.reservations.values()]).toEqual([['i-1'], ['i-2']]);
      expect(t.batches.markers.has('0')).toBe(false);
      const marker = t.batches.markers.get('2');
      expect(t.batches.batches.get(marker!.batchId)).toMatchObject({
        state: 'sent',
        members: ['2'],
      });
    });
  });

  it('a destroy while its batch is committed, past the budget: still answers the instance', async () => {
    const batches = fakeLaunchBatches({ commit: true });
    const budget = budgetControl();
    const t = setup(itemOf(), { batches, budgetEnds: budget.budgetEnds });
    const { env, answer } = t.firstRead();
    await batches.firstCommit;
    budget.ends();
    env.cancel();
    batches.releaseCommit();
    const read = await answer;
    expect(read!.prepared?.launched).toMatchObject({ instanceId: 'i-1', recorded: 'alive' });
    expect(t.ec2.calls).toHaveLength(1);
  });
});
