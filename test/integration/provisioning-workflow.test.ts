import type { ClaimZoneInput } from '../../activities/launch';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import type { Activities } from '../../activities';
import type {
  LaunchPlan,
  MachineSnapshot,
  StartedInstance,
  StatusUpdate,
} from '../../activities/types';
import { destroySignal, provisioningStateQuery } from '../../workflows/definitions';
import { FAILURE } from '../../temporal/failures';
import { teardownStatusMessage } from '../../temporal/messages';
import {
  attemptFailedMessage,
  startingMessage,
  zoneFailoverMessage,
} from '../../temporal/messages';
import { uniqueName } from './api-client';
import { recordHistory } from './histories';
import type { MachineTeardown, MachineTornDown } from '../../activities/teardown';
import { loadTestStack } from './stack';
import { temporalConnections } from './temporal-connections';
import { workflowBundlerOptions } from '../../worker/preload';

/**
 * The machine workflow's decisions on the stack's real Temporal server, with
 * injected activities (an in-process worker on a task queue of its own): the
 * exact sequence of zone tries, messages and attempts, a destroy cutting a
 * wait short, and a destroy landing while the machine is being re-read.
 */

const stack = loadTestStack();
const ZONES = ['us-east-1a', 'us-east-1b'];
const PLAN: LaunchPlan = {
  region: 'us-east-1',
  instanceType: 't3.small',
  imageId: 'ami-1',
  hardware: { arch: 'amd64', cores: 2, mem: 2048 },
  zonesConstraint: ZONES,
  applications: [],
};

const conn = temporalConnections(stack);

/** One machine's world as the activities see it, and what the workflow did to it. */
class FakeWorld {
  machine: MachineSnapshot = {
    life: 'alive',
    status: 'pending',
    message: '',
    applications: [],
    manual: false,
    container: false,
    region: 'us-east-1',
    harvestMode: 'destroyed',
  };
  removed = false;
  statuses: Array<Pick<StatusUpdate, 'status' | 'message'>> = [];
  launches: string[] = [];
  terminated: string[] = [];
  releases = 0;
  /** Zone → how many launches there fail before one succeeds. */
  failures: Record<string, number> = {};
  onLoad?: (world: FakeWorld) => Promise<void>;

  constructor(
    readonly tuning: { startAttempts: number; retryDelayMs: number },
    readonly zones: string[] = ZONES,
  ) {}

  activities(): Partial<Activities> {
    return {
      tuning: () => Promise.resolve(this.tuning),
      loadMachine: async () => {
        const snapshot = this.removed ? null : { ...this.machine, tuning: this.tuning };
        await this.onLoad?.(this);
        return snapshot;
      },
      planLaunch: () => Promise.resolve(PLAN),
      claimZone: (input: ClaimZoneInput) => {
        const zone = this.zones.find((z) => !input.exclude.includes(z));
        if (!zone) {
          throw ApplicationFailure.create({
            type: FAILURE.noSuitableZone,
            message: `suitable availability zone for machine ${input.machineId} not found`,
            nonRetryable: true,
          });
        }
        // the claim writes `allocating` with the zone and attempt, as the real one does
        if (input.attempt !== undefined && input.maxAttempts !== undefined) {
          this.statuses.push({
            status: 'allocating',
            message: startingMessage(zone, input.attempt, input.maxAttempts),
          });
        }
        return Promise.resolve(zone);
      },
      releaseZone: () => {
        this.releases += 1;
        return Promise.resolve();
      },
      recordStatus: (u: StatusUpdate) => {
        this.statuses.push({ status: u.status, message: u.message });
        this.machine.status = u.status;
        this.machine.message = u.message;
        return Promise.resolve();
      },
      startInstance: (input: { zone: string }): Promise<StartedInstance> => {
        this.launches.push(input.zone);
        const left = this.failures[input.zone] ?? 0;
        if (left > 0) {
          this.failures[input.zone] = left - 1;
          throw ApplicationFailure.create({
            type: FAILURE.zoneUnavailable,
            message: `InsufficientInstanceCapacity: none in ${input.zone}`,
            nonRetryable: true,
          });
        }
        return Promise.resolve({
          instanceId: `i-${input.zone}`,
          zone: input.zone,
          instanceType: PLAN.instanceType,
          imageId: PLAN.imageId,
          adopted: false,
        });
      },
      recordRunning: (input: { started: StartedInstance }) => {
        Object.assign(this.machine, {
          status: 'running',
          message: '',
          instanceId: input.started.instanceId,
        });
        return Promise.resolve(this.machine.life);
      },
      recordError: (input: { message: string }) => {
        this.statuses.push({ status: 'error', message: input.message });
        Object.assign(this.machine, { status: 'error', message: input.message });
        return Promise.resolve();
      },
      instancesTaggedFor: () =>
        Promise.resolve(this.machine.instanceId ? [this.machine.instanceId] : []),
      terminateInstances: (input: { instanceIds: string[] }) => {
        this.terminated.push(...input.instanceIds);
        // terminated at once: none left for the caller to wait for
        return Promise.resolve<string[]>([]);
      },
      instancesNotTerminated: () => Promise.resolve([]),
      removeMachine: () => {
        this.removed = true;
        return Promise.resolve({ modelRemoved: false });
      },
      // the one-step teardown: the same fakes' effects, in one activity
      tearDownMachine: (input: MachineTeardown): Promise<MachineTornDown> => {
        this.releases += 1;
        const message = teardownStatusMessage(input.known, input.terminate, input.harvestMode);
        this.statuses.push({ status: 'stopping', message });
        Object.assign(this.machine, { status: 'stopping', message });
        const ids = input.terminate ? input.known : [];
        this.terminated.push(...ids);
        return Promise.resolve({ instanceIds: ids, remaining: [] });
      },
    };
  }
}

/** The one-step teardown refused for good: the workflow goes on step by step. */
function oneStepRefused(): Promise<MachineTornDown> {
  throw ApplicationFailure.create({
    type: 'Ec2Refused',
    message: 'UnauthorizedOperation: not authorized (the one-step teardown)',
    nonRetryable: true,
  });
}

/** Runs one machine workflow against `world` until `until` resolves. */
async function withWorker<T>(
  world: FakeWorld,
  body: (taskQueue: string) => Promise<T>,
  activities: Partial<Activities> = world.activities(),
): Promise<T> {
  const taskQueue = `provisioner-wf-${randomUUID().slice(0, 8)}`;
  const worker = await Worker.create({
    connection: conn.native,
    namespace: stack.temporalNamespace,
    taskQueue,
    workflowsPath: require.resolve('../../workflows'),
    // as the worker bundles them (worker/main.ts): the modules preloaded and shared by the runs
    bundlerOptions: workflowBundlerOptions(),
    activities,
  });
  return worker.runUntil(body(taskQueue));
}

function start(taskQueue: string, model: string) {
  return conn.client.workflow.start('machine', {
    taskQueue,
    workflowId: `machine:${model}:0`,
    args: [{ model, machineId: '0' }],
  });
}

/** The workflow's result, or a failure after `ms` (a lost signal would otherwise wait forever). */
async function resultWithin(handle: { result(): Promise<unknown> }, ms = 20_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      handle.result(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`workflow did not finish in ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('machine workflow decisions', () => {
  it('tries zones in order, fails over without spending an attempt, spends one when all failed, then runs', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    // attempt 1: a and b fail; attempt 2: a fails, b runs
    world.failures = { 'us-east-1a': 2, 'us-east-1b': 1 };
    const model = uniqueName('wf');
    const state = await withWorker(world, async (taskQueue) => {
      const handle = await start(taskQueue, model);
      await until(() => world.machine.status === 'running');
      // the workflow's own view catches up once recordRunning's result is processed
      let state = await handle.query(provisioningStateQuery);
      await until(
        async () => (state = await handle.query(provisioningStateQuery)).phase === 'running',
      );
      return state;
    });
    const cause = (zone: string) => `InsufficientInstanceCapacity: none in ${zone}`;
    expect(world.launches).toEqual(['us-east-1a', 'us-east-1b', 'us-east-1a', 'us-east-1b']);
    expect(world.statuses).toEqual([
      { status: 'allocating', message: startingMessage('us-east-1a', 1, 3) },
      {
        status: 'allocating',
        message: zoneFailoverMessage('0', 'us-east-1a', cause('us-east-1a')),
      },
      { status: 'allocating', message: startingMessage('us-east-1b', 1, 3) },
      {
        status: 'allocating',
        message: zoneFailoverMessage('0', 'us-east-1b', cause('us-east-1b')),
      },
      {
        status: 'allocating',
        message: attemptFailedMessage(
          '0',
          `every zone tried failed (us-east-1a, us-east-1b); the last: ${cause('us-east-1b')}`,
          100,
          2,
        ),
      },
      { status: 'allocating', message: startingMessage('us-east-1a', 2, 3) },
      {
        status: 'allocating',
        message: zoneFailoverMessage('0', 'us-east-1a', cause('us-east-1a')),
      },
      { status: 'allocating', message: startingMessage('us-east-1b', 2, 3) },
    ]);
    expect(world.releases).toBe(1);
    expect(state).toMatchObject({
      phase: 'running',
      attempt: 2,
      failedZones: ['us-east-1a'],
      zone: 'us-east-1b',
      instanceId: 'i-us-east-1b',
    });
  });

  /**
   * LAUNCH_IN_READ: the first read (asked to `prepare` and told the `launch`)
   * answers as the real one does: the plan, the zone claimed, and the
   * launch's outcome (`launched`, or `launchFailure`, or neither).
   */
  function launchingRead(world: FakeWorld, outcome: Record<string, unknown>): Partial<Activities> {
    const base = world.activities();
    return {
      ...base,
      loadMachine: async (input: { prepare?: boolean }) => {
        const snapshot = await base.loadMachine!(input as never);
        if (!input.prepare || !snapshot) return snapshot;
        world.statuses.push({ status: 'allocating', message: startingMessage('us-east-1a', 1, 3) });
        return {
          ...snapshot,
          prepared: { plan: PLAN, zone: 'us-east-1a', launchInTask: true as const, ...outcome },
        };
      },
    };
  }

  it('takes the instance the first read launched: no launch step (LAUNCH_IN_READ)', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    const model = uniqueName('wf');
    let recorded = false;
    const launched: StartedInstance = {
      instanceId: 'i-read',
      zone: 'us-east-1a',
      instanceType: PLAN.instanceType,
      imageId: PLAN.imageId,
      adopted: false,
      recorded: 'alive',
    };
    const activities = launchingRead(world, { launched });
    const asked: unknown[] = [];
    const loadMachine = activities.loadMachine!;
    activities.loadMachine = (input: never) => {
      asked.push((input as { launch?: unknown }).launch);
      return loadMachine(input);
    };
    activities.recordRunning = () => {
      recorded = true;
      return Promise.resolve('alive');
    };
    const state = await withWorker(
      world,
      async (taskQueue) => {
        const handle = await start(taskQueue, model);
        let s = await handle.query(provisioningStateQuery);
        await until(
          async () => (s = await handle.query(provisioningStateQuery)).phase === 'running',
        );
        return s;
      },
      activities,
    );
    // told the pass and attempt its launch is for; no launch step, no record step
    expect(asked[0]).toEqual({ pass: 1, attempt: 1 });
    expect(world.launches).toEqual([]);
    expect(recorded).toBe(false);
    expect(state).toMatchObject({ phase: 'running', zone: 'us-east-1a', instanceId: 'i-read' });
  });

  it("handles a launch failure the first read answered as the launch step's own: the next zone (LAUNCH_IN_READ)", async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    const model = uniqueName('wf');
    const capacity = 'InsufficientInstanceCapacity: none in us-east-1a';
    const activities = launchingRead(world, {
      launchFailure: { type: FAILURE.zoneUnavailable, message: capacity },
    });
    await withWorker(
      world,
      async (taskQueue) => {
        await start(taskQueue, model);
        await until(() => world.machine.status === 'running');
      },
      activities,
    );
    // the failed launch was the read's; the next zone's is a launch step of its own
    expect(world.launches).toEqual(['us-east-1b']);
    expect(world.statuses).toEqual([
      { status: 'allocating', message: startingMessage('us-east-1a', 1, 3) },
      { status: 'allocating', message: zoneFailoverMessage('0', 'us-east-1a', capacity) },
      { status: 'allocating', message: startingMessage('us-east-1b', 1, 3) },
    ]);
    expect(world.machine.instanceId).toBe('i-us-east-1b');
  });

  it('launches in a step of its own when the first read left the launch to it (a failure the launch would retry)', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    const model = uniqueName('wf');
    const seeds: string[] = [];
    const activities = launchingRead(world, {});
    const startInstance = activities.startInstance!;
    activities.startInstance = (input: never) => {
      seeds.push((input as { tokenSeed: string }).tokenSeed);
      return startInstance(input);
    };
    await withWorker(
      world,
      async (taskQueue) => {
        await start(taskQueue, model);
        await until(() => world.machine.status === 'running');
      },
      activities,
    );
    expect(world.launches).toEqual(['us-east-1a']);
    // the seed the read's launch had: this run, pass 1, attempt 1, the zone
    expect(seeds).toHaveLength(1);
    expect(seeds[0]).toMatch(new RegExp(`^machine:${model}:0/[^/]+/1/1/us-east-1a$`));
  });

  it('records error with the last cause after the last attempt, and does not wait after it', async () => {
    const world = new FakeWorld({ startAttempts: 2, retryDelayMs: 100 });
    world.failures = { 'us-east-1a': 99, 'us-east-1b': 99 };
    const model = uniqueName('wf');
    await withWorker(world, async (taskQueue) => {
      await start(taskQueue, model);
      await until(() => world.machine.status === 'error');
    });
    expect(world.launches).toHaveLength(4);
    expect(world.statuses.at(-1)).toEqual({
      status: 'error',
      message:
        'every zone tried failed (us-east-1a, us-east-1b); the last: InsufficientInstanceCapacity: none in us-east-1b',
    });
    expect(world.statuses.filter((s) => s.message.includes('more attempts'))).toHaveLength(1);
    expect(world.releases).toBe(2);
  });

  it('cuts the wait between attempts short when the machine goes Dead, and tears it down', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 3_600_000 });
    world.failures = { 'us-east-1a': 99, 'us-east-1b': 99 };
    const model = uniqueName('wf');
    await withWorker(world, async (taskQueue) => {
      const handle = await start(taskQueue, model);
      await until(() => world.statuses.some((s) => s.message.includes('more attempts')));
      world.machine.life = 'dead';
      await handle.signal(destroySignal);
      await resultWithin(handle);
    });
    expect(world.removed).toBe(true);
    expect(world.launches).toHaveLength(2);
    expect(world.statuses.at(-1)).toEqual({ status: 'stopping', message: '' });
  });

  it('does not lose a destroy that lands while the machine is being re-read', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, { status: 'running', instanceId: 'i-running' });
    const model = uniqueName('wf');
    await withWorker(world, async (taskQueue) => {
      let first = true;
      // the API's order: the machine goes Dead, then the signal; both while the first read is in flight
      world.onLoad = async (w) => {
        if (!first) return;
        first = false;
        w.machine.life = 'dead';
        await conn.client.workflow.getHandle(`machine:${model}:0`).signal(destroySignal);
      };
      const handle = await start(taskQueue, model);
      await resultWithin(handle);
    });
    expect(world.terminated).toEqual(['i-running']);
    expect(world.removed).toBe(true);
  });

  /**
   * A Dead machine with a recorded instance whose tag search also finds one
   * it never recorded (issue 30's "a launch that was never recorded still
   * found and terminated"); how its removal runs is recorded too.
   */
  function deadWithAnUnrecordedInstance(extra: Partial<MachineSnapshot> = {}) {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, {
      life: 'dead',
      status: 'running',
      instanceId: 'i-known',
      ...extra,
    });
    const seen = { foundWhileKnownWaited: false, removedLocally: [] as boolean[] };
    const activities: Partial<Activities> = {
      ...world.activities(),
      // these tests are about the step-by-step teardown, which a failed one-step one falls back to
      tearDownMachine: oneStepRefused,
      instancesTaggedFor: () => Promise.resolve(['i-known', 'i-found']),
      terminateInstances: async (input: { instanceIds: string[] }) => {
        world.terminated.push(...input.instanceIds);
        if (input.instanceIds.includes('i-known')) {
          // the known instance's wait for terminated (up to a minute in the real activity): held
          // until the found one is asked to terminate, or 25 s (a workflow task and two activities at
          // load 30; still under the 30 s heartbeat timeout)
          await until(() => world.terminated.includes('i-found'), 25_000).catch(() => undefined);
          seen.foundWhileKnownWaited = world.terminated.includes('i-found');
        }
        return [];
      },
      removeMachine: () => {
        seen.removedLocally.push(Context.current().info.isLocal);
        world.removed = true;
        return Promise.resolve({ modelRemoved: false });
      },
    };
    return { world, seen, activities };
  }

  it('terminates an instance only the tag search found while the known one still waits for terminated', async () => {
    const { world, seen, activities } = deadWithAnUnrecordedInstance();
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => {
        const handle = await start(taskQueue, model);
        await resultWithin(handle, 60_000);
        await recordHistory(
          stack,
          handle.workflowId,
          handle.firstExecutionRunId,
          'machine-teardown-overlapped-found-instance.json',
        );
      },
      activities,
    );
    expect(world.terminated).toEqual(['i-known', 'i-found']);
    expect(seen.foundWhileKnownWaited).toBe(true);
    expect(world.removed).toBe(true);
    // outside availability-set mode the removal is a local activity, in the last workflow task
    expect(seen.removedLocally).toEqual([true]);
  });

  /** EC2's refusal as the real activities throw it: typed, for good. */
  function refused(message: string): ApplicationFailure {
    return ApplicationFailure.create({ type: 'Ec2Refused', message, nonRetryable: true });
  }

  it("says again what blocks the known instance after the found instance's status replaced it", async () => {
    const { world, activities } = deadWithAnUnrecordedInstance();
    const blocked = (s: { message: string }) =>
      s.message.startsWith('cannot terminate instance i-known: OperationNotPermitted');
    const foundNote = (s: { message: string }) =>
      s.message === 'terminating instance i-known, i-found';
    let afterFound = 0;
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => resultWithin(await start(taskQueue, model), 90_000),
      {
        ...activities,
        // the model's search answers only after the known instance's block was said (coalesced
        // searches take tens of seconds under load)
        instancesTaggedFor: async () => {
          await until(() => world.statuses.some(blocked));
          return ['i-known', 'i-found'];
        },
        terminateInstances: (input: { instanceIds: string[] }) => {
          world.terminated.push(...input.instanceIds);
          // termination protection on the known instance until a few tries after the found
          // instance's status was written
          if (input.instanceIds.includes('i-known') && world.statuses.some(foundNote)) afterFound++;
          if (input.instanceIds.includes('i-known') && afterFound < 3) {
            throw refused('OperationNotPermitted: the instance i-known may not be terminated');
          }
          return Promise.resolve<string[]>([]);
        },
      },
    );
    const found = world.statuses.findIndex(foundNote);
    expect(found).toBeGreaterThan(0);
    // the block was said before the found instance's status, and again after it
    expect(world.statuses.slice(0, found).filter(blocked)).toHaveLength(1);
    expect(world.statuses.slice(found + 1).filter(blocked)).toHaveLength(1);
    expect(world.terminated.filter((id) => id === 'i-found')).toEqual(['i-found']);
    expect(world.removed).toBe(true);
  });

  it('says each of two blocks at once only once, however often they are tried', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, { life: 'dead', status: 'running', instanceId: 'i-known' });
    // a role without EC2's permissions: the tag search and the termination both refused, each
    // tried every second (blockedRetryMs at a 100 ms retry delay), until the role is fixed
    let tries = { search: 0, terminate: 0 };
    const fixedAfter = 6;
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => resultWithin(await start(taskQueue, model), 90_000),
      {
        ...world.activities(),
        tearDownMachine: oneStepRefused,
        instancesTaggedFor: () => {
          tries = { ...tries, search: tries.search + 1 };
          if (tries.search <= fixedAfter || tries.terminate <= fixedAfter) {
            throw refused('UnauthorizedOperation: not authorized to perform ec2:DescribeInstances');
          }
          return Promise.resolve(['i-known']);
        },
        terminateInstances: (input: { instanceIds: string[] }) => {
          tries = { ...tries, terminate: tries.terminate + 1 };
          if (tries.search <= fixedAfter || tries.terminate <= fixedAfter) {
            throw refused(
              'UnauthorizedOperation: not authorized to perform ec2:TerminateInstances',
            );
          }
          world.terminated.push(...input.instanceIds);
          return Promise.resolve<string[]>([]);
        },
      },
    );
    expect(tries.search).toBeGreaterThan(fixedAfter);
    expect(tries.terminate).toBeGreaterThan(fixedAfter);
    const said = (prefix: string) => world.statuses.filter((s) => s.message.startsWith(prefix));
    expect(said('cannot list the instances tagged for it: UnauthorizedOperation')).toHaveLength(1);
    expect(said('cannot terminate instance i-known: UnauthorizedOperation')).toHaveLength(1);
    // the first status ("terminating") came before either block
    expect(world.statuses[0]).toEqual({
      status: 'stopping',
      message: 'terminating instance i-known',
    });
    expect(world.terminated).toEqual(['i-known']);
    expect(world.removed).toBe(true);
  });

  it('removes a machine of an availability-set model with an activity of its own, not a local one', async () => {
    const { world, seen, activities } = deadWithAnUnrecordedInstance({ availabilitySets: true });
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => {
        const handle = await start(taskQueue, model);
        await resultWithin(handle, 60_000);
        await recordHistory(
          stack,
          handle.workflowId,
          handle.firstExecutionRunId,
          'machine-teardown-overlapped-availability-set.json',
        );
      },
      activities,
    );
    expect(world.removed).toBe(true);
    // its removal may delete the placement group (seconds of EC2 calls): not in a workflow task
    expect(seen.removedLocally).toEqual([false]);
  });

  it('tears a Dead machine down in one activity, waits for what it left, and removes it locally', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, { life: 'dead', status: 'running', instanceId: 'i-known' });
    const asked: MachineTeardown[] = [];
    const waited: string[][] = [];
    const removedLocally: boolean[] = [];
    const stepByStep: string[] = [];
    const step = (name: string) => () => {
      stepByStep.push(name);
      return Promise.reject(new Error(`${name} is not a step of the one-step teardown`));
    };
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => {
        const handle = await start(taskQueue, model);
        await resultWithin(handle, 60_000);
        await recordHistory(
          stack,
          handle.workflowId,
          handle.firstExecutionRunId,
          'machine-teardown-one-step.json',
        );
      },
      {
        ...world.activities(),
        releaseZone: step('releaseZone'),
        recordStatus: step('recordStatus'),
        instancesTaggedFor: step('instancesTaggedFor'),
        terminateInstances: step('terminateInstances'),
        // the search found an unrecorded launch, not yet terminated when the activity returned
        tearDownMachine: (input: MachineTeardown) => {
          asked.push(input);
          return Promise.resolve({ instanceIds: ['i-known', 'i-found'], remaining: ['i-found'] });
        },
        instancesNotTerminated: (input: { instanceIds: string[] }) => {
          waited.push(input.instanceIds);
          return Promise.resolve([]);
        },
        removeMachine: () => {
          removedLocally.push(Context.current().info.isLocal);
          world.removed = true;
          return Promise.resolve({ modelRemoved: false });
        },
      },
    );
    expect(asked).toEqual([
      {
        model,
        machineId: '0',
        region: 'us-east-1',
        known: ['i-known'],
        fresh: [],
        terminate: true,
        harvestMode: 'destroyed',
        waitMs: 60_000,
        remove: true,
      },
    ]);
    expect(stepByStep).toEqual([]);
    // what the activity left is waited for before the machine goes, and only that
    expect(waited).toEqual([['i-found']]);
    expect(removedLocally).toEqual([true]);
    expect(world.removed).toBe(true);
  });

  it('ends when its one-step teardown removed the machine, with no removal of its own (REMOVED_IN_TEARDOWN)', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, { life: 'dead', status: 'running', instanceId: 'i-known' });
    const asked: MachineTeardown[] = [];
    const removedByWorkflow: boolean[] = [];
    const model = uniqueName('wf');
    let events: string[] = [];
    await withWorker(
      world,
      async (taskQueue) => {
        const handle = await start(taskQueue, model);
        await resultWithin(handle, 60_000);
        events = ((await handle.fetchHistory()).events ?? []).flatMap((e) =>
          e.activityTaskScheduledEventAttributes
            ? [`activity ${e.activityTaskScheduledEventAttributes.activityType?.name ?? '?'}`]
            : e.markerRecordedEventAttributes
              ? [`marker ${e.markerRecordedEventAttributes.markerName ?? '?'}`]
              : [],
        );
        await recordHistory(
          stack,
          handle.workflowId,
          handle.firstExecutionRunId,
          'machine-teardown-one-step-removed.json',
        );
      },
      {
        ...world.activities(),
        // the activity saw its instance terminated and removed the machine (and the model)
        tearDownMachine: (input: MachineTeardown) => {
          asked.push(input);
          world.terminated.push(...input.known);
          world.removed = true;
          return Promise.resolve({
            instanceIds: input.known,
            remaining: [],
            removed: { modelRemoved: true },
          });
        },
        removeMachine: () => {
          removedByWorkflow.push(true);
          return Promise.resolve({ modelRemoved: false });
        },
      },
    );
    expect(asked.map((a) => a.remove)).toEqual([true]);
    expect(removedByWorkflow).toEqual([]);
    expect(world.terminated).toEqual(['i-known']);
    // after the one-step activity: no removal step, local or not (the model's removal waits on
    // no workflow task after the wait for EC2)
    const after = events.slice(events.indexOf('activity tearDownMachine') + 1);
    expect(after).toEqual([]);
  });

  it('asks an availability-set machine’s one-step teardown not to remove it: its workflow does', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, {
      life: 'dead',
      status: 'running',
      instanceId: 'i-known',
      availabilitySets: true,
    });
    const asked: MachineTeardown[] = [];
    const removedLocally: boolean[] = [];
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => resultWithin(await start(taskQueue, model), 60_000),
      {
        ...world.activities(),
        tearDownMachine: (input: MachineTeardown) => {
          asked.push(input);
          return Promise.resolve({ instanceIds: input.known, remaining: [] });
        },
        removeMachine: () => {
          removedLocally.push(Context.current().info.isLocal);
          world.removed = true;
          return Promise.resolve({ modelRemoved: false });
        },
      },
    );
    expect(asked.map((a) => a.remove)).toEqual([undefined]);
    expect(removedLocally).toEqual([false]);
    expect(world.removed).toBe(true);
  });

  it('goes on step by step when the one-step teardown keeps failing, and removes the machine only after', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, { life: 'dead', status: 'running', instanceId: 'i-known' });
    let oneStepTries = 0;
    const model = uniqueName('wf');
    await withWorker(
      world,
      async (taskQueue) => resultWithin(await start(taskQueue, model), 90_000),
      {
        ...world.activities(),
        // EC2 unreachable for the one step's tries (a retryable fault, not a refusal)
        tearDownMachine: () => {
          oneStepTries += 1;
          return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1 (EC2 down)'));
        },
      },
    );
    // the one-step activity's three tries, then the step-by-step teardown did it all
    expect(oneStepTries).toBe(3);
    expect(world.terminated).toEqual(['i-known']);
    expect(world.releases).toBe(1);
    expect(world.statuses).toEqual([
      { status: 'stopping', message: 'terminating instance i-known' },
    ]);
    expect(world.removed).toBe(true);
  });
  it('finishes step by step after tries that did part of the work: one release, every instance terminated before removal', async () => {
    const world = new FakeWorld({ startAttempts: 3, retryDelayMs: 100 });
    Object.assign(world.machine, { life: 'dead', status: 'running', instanceId: 'i-known' });
    // EC2 and the zone's count, as the real ones behave: a release is idempotent (it
    // commits only while the zone is still counted), a terminated instance stays so
    const running = new Set(['i-known', 'i-found']);
    let zoneCounted = true;
    let zoneReleases = 0;
    const release = () => {
      if (zoneCounted) zoneReleases += 1;
      zoneCounted = false;
    };
    let oneStepTries = 0;
    let runningAtRemoval: string[] | undefined;
    const model = uniqueName('wf');
    const base = world.activities();
    await withWorker(
      world,
      async (taskQueue) => {
        const handle = await start(taskQueue, model);
        await resultWithin(handle, 90_000);
        await recordHistory(
          stack,
          handle.workflowId,
          handle.firstExecutionRunId,
          'machine-teardown-one-step-fallback.json',
        );
      },
      {
        ...base,
        // each try releases the zone, writes its status and terminates the known instance,
        // then its search fails (DynamoDB throttled): i-found is left running
        tearDownMachine: (input: MachineTeardown) => {
          oneStepTries += 1;
          release();
          world.statuses.push({ status: 'stopping', message: 'terminating instance i-known' });
          for (const id of input.known) running.delete(id);
          return Promise.reject(new Error('ProvisionedThroughputExceededException: slow down'));
        },
        releaseZone: () => {
          world.releases += 1;
          release();
          return Promise.resolve();
        },
        instancesTaggedFor: () => Promise.resolve(['i-known', 'i-found']),
        terminateInstances: (input: { instanceIds: string[] }) => {
          world.terminated.push(...input.instanceIds);
          for (const id of input.instanceIds) running.delete(id);
          return Promise.resolve<string[]>([]);
        },
        instancesNotTerminated: (input: { instanceIds: string[] }) =>
          Promise.resolve(input.instanceIds.filter((id) => running.has(id))),
        removeMachine: () => {
          runningAtRemoval = [...running];
          world.removed = true;
          return Promise.resolve({ modelRemoved: false });
        },
      },
    );
    expect(oneStepTries).toBe(3);
    // the fallback asked for the release again; the zone was uncounted once, by the first try
    expect(world.releases).toBe(1);
    expect(zoneReleases).toBe(1);
    expect(zoneCounted).toBe(false);
    // the instance the tries never reached is terminated by the fallback, before removal
    expect(world.terminated.sort()).toEqual(['i-found', 'i-known']);
    expect(runningAtRemoval).toEqual([]);
    expect(world.removed).toBe(true);
    expect(world.statuses.at(-1)).toEqual({
      status: 'stopping',
      message: 'terminating instance i-known, i-found',
    });
  });
});
