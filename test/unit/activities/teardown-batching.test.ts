import { EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ActivityDeps } from '../../../activities/deps';
import { InstanceOwners } from '../../../activities/instance-owners';
import { TAG_LAUNCH_BATCH, TAG_MACHINE, TAG_MODEL } from '../../../ec2/tags';
import {
  idsNamedIn,
  teardownActivities,
  type MachineTeardown,
  TERMINATED_POLL_MS,
  terminateEach,
} from '../../../activities/teardown';
import { UNLISTED_GRACE_MS } from '../../../core/liveness';
import { placementGroupName } from '../../../core';
import { EntityNotFoundError } from '../../../state/errors';
import type { MachineRecord } from '../../../state/types';

/** An EC2 error as the SDK raises it. */
function ec2Error(code: string, message: string): Error {
  return Object.assign(new Error(message), { name: code, Code: code, $fault: 'client' });
}

describe('terminateEach: one TerminateInstances for many ids, a failure split back to its ids', () => {
  it('asks once when EC2 takes every id', async () => {
    const calls: string[][] = [];
    const out = await terminateEach(
      (ids) => (calls.push(ids), Promise.resolve(ids)),
      ['i-1', 'i-2', 'i-3'],
    );
    expect(calls).toEqual([['i-1', 'i-2', 'i-3']]);
    expect([...out]).toEqual([
      ['i-1', undefined],
      ['i-2', undefined],
      ['i-3', undefined],
    ]);
  });

  it('takes out the ids EC2 names as unknown and asks again for the rest', async () => {
    const calls: string[][] = [];
    const out = await terminateEach(
      (ids) => {
        calls.push(ids);
        const unknown = ids.filter((id) => id === 'i-2' || id === 'i-4');
        if (unknown.length > 0) {
          throw ec2Error(
            'InvalidInstanceID.NotFound',
            `The instance IDs '${unknown.join(', ')}' do not exist`,
          );
        }
        return Promise.resolve(ids);
      },
      ['i-1', 'i-2', 'i-3', 'i-4'],
    );
    expect(calls).toEqual([
      ['i-1', 'i-2', 'i-3', 'i-4'],
      ['i-1', 'i-3'],
    ]);
    expect(out.get('i-1')).toBeUndefined();
    expect(out.get('i-2')).toBe('missing');
    expect(out.get('i-3')).toBeUndefined();
    expect(out.get('i-4')).toBe('missing');
  });

  it('isolates a refusal that names no id by halving, in a few calls', async () => {
    const ids = Array.from({ length: 16 }, (_, i) => `i-${(i + 1).toString(16)}`);
    const calls: string[][] = [];
    const refused = ec2Error('OperationNotPermitted', 'termination protection is on');
    const out = await terminateEach((some) => {
      calls.push(some);
      if (some.includes('i-b')) throw refused;
      return Promise.resolve(some);
    }, ids);
    expect(out.get('i-b')).toEqual({ error: refused });
    expect(ids.filter((id) => id !== 'i-b').every((id) => out.get(id) === undefined)).toBe(true);
    // 1 + 2 per level of 16 → 1: 9 calls, not one per id
    expect(calls.length).toBe(9);
  });

  it('takes a pacing token before every send, the halves and the retries too', async () => {
    const ids = Array.from({ length: 16 }, (_, i) => `i-${(i + 1).toString(16)}`);
    let sends = 0;
    let tokens = 0;
    const refused = ec2Error('OperationNotPermitted', 'termination protection is on');
    await terminateEach(
      (some) => {
        sends++;
        expect(tokens).toBe(sends); // the token came before this send
        if (some.includes('i-b')) throw refused;
        return Promise.resolve(some);
      },
      ids,
      () => (tokens++, Promise.resolve()),
    );
    expect(sends).toBe(9);
    expect(tokens).toBe(9);
  });

  it('gives a refusal naming no id that refuses both halves to every id, in 3 calls', async () => {
    const ids = Array.from({ length: 1000 }, (_, i) => `i-${(i + 0x1000).toString(16)}`);
    const calls: string[][] = [];
    const refused = ec2Error(
      'UnauthorizedOperation',
      'You are not authorized to perform this operation.',
    );
    const out = await terminateEach((some) => {
      calls.push(some);
      return Promise.reject(refused);
    }, ids);
    expect(calls.map((c) => c.length)).toEqual([1000, 500, 500]);
    expect(ids.every((id) => (out.get(id) as { error: unknown }).error === refused)).toBe(true);
  });

  it('fails only the id EC2 calls malformed (InvalidInstanceID.Malformed); the rest are asked again', async () => {
    const calls: string[][] = [];
    const out = await terminateEach(
      (some) => {
        calls.push(some);
        if (some.includes('i-0bad')) {
          throw ec2Error('InvalidInstanceID.Malformed', "The instance ID 'i-0bad' is malformed");
        }
        return Promise.resolve(some);
      },
      ['i-1', 'i-0bad', 'i-3'],
    );
    expect(calls).toEqual([
      ['i-1', 'i-0bad', 'i-3'],
      ['i-1', 'i-3'],
    ]);
    expect(out.get('i-1')).toBeUndefined();
    expect(out.get('i-3')).toBeUndefined();
    const bad = out.get('i-0bad') as { error: Error };
    expect(bad.error.name).toBe('InvalidInstanceID.Malformed');
    expect(bad.error.message).toBe("The instance ID 'i-0bad' is malformed");
  });

  it('fails only the id another 4xx names (a code not known permanent), not the batch', async () => {
    const calls: string[][] = [];
    const out = await terminateEach(
      (some) => {
        calls.push(some);
        if (some.includes('i-2')) {
          throw ec2Error(
            'IncorrectInstanceState',
            "The instance 'i-2' is not in a state to terminate",
          );
        }
        return Promise.resolve(some);
      },
      ['i-1', 'i-2', 'i-3'],
    );
    expect(calls).toEqual([
      ['i-1', 'i-2', 'i-3'],
      ['i-1', 'i-3'],
    ]);
    expect((out.get('i-2') as { error: Error }).error.name).toBe('IncorrectInstanceState');
    expect(out.get('i-1')).toBeUndefined();
  });

  it('fails the whole batch on throttling (every machine retries), with EC2’s error', async () => {
    const throttled = ec2Error('RequestLimitExceeded', 'Request limit exceeded.');
    await expect(terminateEach(() => Promise.reject(throttled), ['i-1', 'i-2'])).rejects.toBe(
      throttled,
    );
  });

  it('reads ids from EC2’s messages', () => {
    expect(idsNamedIn("The instance IDs 'i-0abc, i-0def1' do not exist")).toEqual([
      'i-0abc',
      'i-0def1',
    ]);
    expect(idsNamedIn('no ids here')).toEqual([]);
  });
});

/** A worker's teardown activities over an EC2 client whose calls never leave the process. */
function harness(input: {
  instances: Instance[];
  unknown?: string[];
  members?: Record<string, string[]>;
  /** Machine records of the model `big` by id (what `repo.getMachine` answers). */
  machines?: Record<string, Partial<MachineRecord>>;
  /** What every `repo.getMachine` fails with, when given. */
  machineReadError?: Error;
  /** What DescribeInstances fails with while set (read at each call). */
  describeError?: { error?: Error };
  now?: number;
  /** What each machine's status write fails with, by machine id. */
  statusError?: Record<string, Error>;
  /** A machine's status writes land only once its gate opens (a slow, throttled write). */
  statusGate?: Record<string, Promise<void>>;
  /** Ids TerminateInstances refuses (termination protection). */
  refused?: string[];
  /** Ids TerminateInstances answers `shutting-down` (else `terminated`). */
  shuttingDown?: string[];
  /** What each machine's removal fails with, by machine id. */
  removeError?: Record<string, Error>;
  /** The machine whose removal also removes the model. */
  lastMachine?: string;
  /** The model as `repo.getModel` reads it (availability-set mode, uid). */
  model?: Record<string, unknown>;
  /** Machines counted in a distribution group's zones, by application. */
  groupCounts?: Record<string, Record<string, number>>;
}) {
  const calls: Array<{ action: string; ids: string[] }> = [];
  const ec2 = new EC2Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  ec2.middlewareStack.add(
    () => (args) => {
      const command = (args as unknown as { input: Record<string, unknown> }).input;
      if (typeof command.GroupName === 'string') {
        calls.push({ action: 'DeletePlacementGroup', ids: [command.GroupName] });
        return Promise.resolve({ output: { $metadata: {} }, response: {} });
      }
      if (Array.isArray(command.InstanceIds)) {
        const ids = command.InstanceIds as string[];
        calls.push({ action: 'TerminateInstances', ids });
        const refused = ids.filter((id) => input.refused?.includes(id));
        if (refused.length > 0) {
          throw ec2Error(
            'OperationNotPermitted',
            `The instance '${refused.join(', ')}' may not be terminated`,
          );
        }
        const unknown = ids.filter((id) => input.unknown?.includes(id));
        if (unknown.length > 0) {
          throw ec2Error(
            'InvalidInstanceID.NotFound',
            `The instance IDs '${unknown.join(', ')}' do not exist`,
          );
        }
        const output = {
          $metadata: {},
          TerminatingInstances: ids.map((id) => ({
            InstanceId: id,
            CurrentState: {
              Name: input.shuttingDown?.includes(id) ? 'shutting-down' : 'terminated',
            },
          })),
        };
        return Promise.resolve({ output, response: {} });
      }
      const filters = command.Filters as Array<{ Name: string; Values: string[] }>;
      const byId = filters.find((f) => f.Name === 'instance-id')?.Values;
      // as AWS: more than 200 filter values in one call is refused
      if (filters.reduce((n, f) => n + f.Values.length, 0) > 200) {
        throw ec2Error(
          'FilterLimitExceeded',
          'The maximum number of filter values specified on a single call is 200',
        );
      }
      calls.push({ action: 'DescribeInstances', ids: byId ?? [] });
      if (input.describeError?.error) throw input.describeError.error;
      const listed = byId
        ? input.instances.filter((i) => byId.includes(i.InstanceId!))
        : input.instances;
      const output = { $metadata: {}, Reservations: [{ Instances: listed }] };
      return Promise.resolve({ output, response: {} });
    },
    { step: 'initialize', name: 'answeredInProcess' },
  );
  const reads: string[] = [];
  const owners = new InstanceOwners({
    members: (_model, batchId) => {
      reads.push(batchId);
      return Promise.resolve(input.members?.[batchId]);
    },
  });
  const machineReads: string[] = [];
  const statuses: Array<{ machineId: string; status: string; message: string }> = [];
  const released: string[] = [];
  const removed: string[] = [];
  const deps = {
    ec2ForRegion: () => ({ ec2 }),
    deployment: 'test',
    store: {
      releaseZoneClaim: (_model: string, machineId: string) => {
        released.push(machineId);
        return Promise.resolve();
      },
      removeMachine: (_model: string, machineId: string) => {
        const err = input.removeError?.[machineId];
        if (err) return Promise.reject(err);
        removed.push(machineId);
        return Promise.resolve({ modelRemoved: machineId === input.lastMachine });
      },
      zones: {
        counts: (_model: string, application: string) =>
          Promise.resolve(input.groupCounts?.[application] ?? {}),
      },
    },
    repo: {
      updateMachine: (
        _model: string,
        machineId: string,
        changes: { status: string; message: string },
      ) => {
        const err = input.statusError?.[machineId];
        if (err) return Promise.reject(err);
        return (input.statusGate?.[machineId] ?? Promise.resolve()).then(() => {
          statuses.push({ machineId, ...changes });
        });
      },
      getModel: (name: string) =>
        Promise.resolve({ name, region: 'us-east-1', harvestMode: 'destroyed', ...input.model }),
      getMachine: (model: string, id: string) => {
        machineReads.push(`${model}/${id}`);
        if (input.machineReadError) return Promise.reject(input.machineReadError);
        const m = model === 'big' ? input.machines?.[id] : undefined;
        return m
          ? Promise.resolve({ id, model, ...m })
          : Promise.reject(new EntityNotFoundError(`machine ${id} not found`));
      },
    },
    ...(input.now !== undefined ? { now: () => input.now } : {}),
  } as unknown as ActivityDeps;
  return {
    activities: teardownActivities(deps, owners),
    calls,
    reads,
    machineReads,
    statuses,
    released,
    removed,
  };
}

function launched(id: string, batch: string, index: number): Instance {
  return {
    InstanceId: id,
    AmiLaunchIndex: index,
    State: { Name: 'running' },
    Tags: [
      { Key: TAG_MODEL, Value: 'big' },
      { Key: TAG_LAUNCH_BATCH, Value: batch },
    ],
  };
}

describe('teardown activities: many machines, few EC2 calls', () => {
  it('terminates 300 machines’ instances in one call, and knows them terminated without a describe', async () => {
    const { activities, calls } = harness({ instances: [] });
    const ids = Array.from({ length: 300 }, (_, i) => `i-${(i + 0x100).toString(16)}`);
    await Promise.all(
      ids.map((id) => activities.terminateInstances({ region: 'us-east-1', instanceIds: [id] })),
    );
    expect(calls.map((c) => [c.action, c.ids.length])).toEqual([['TerminateInstances', 300]]);
    const remaining = await Promise.all(
      ids.map((id) =>
        activities.instancesNotTerminated({ region: 'us-east-1', instanceIds: [id] }),
      ),
    );
    expect(remaining.flat()).toEqual([]);
    expect(calls).toHaveLength(1);
  });

  describe('waits for terminated, on fake timers (the 5 s / 10 s rounds without their wall-clock time)', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    /** Advances the fake clock in steps until `done` holds (at most `maxMs`), microtasks run between. */
    async function advanceUntil(done: () => boolean, maxMs = 120_000): Promise<number> {
      const from = Date.now();
      while (!done()) {
        if (Date.now() - from > maxMs) throw new Error(`not done after ${maxMs} ms (fake)`);
        await jest.advanceTimersByTimeAsync(100);
      }
      return Date.now() - from;
    }

    it('polls again inside the activity when asked (waitMs) until none is left', async () => {
      const ids = ['i-0a1', 'i-0a2', 'i-0a3'];
      const instances = ids.map((id): Instance => ({
        InstanceId: id,
        State: { Name: 'shutting-down' },
      }));
      const { activities, calls } = harness({ instances });
      let answers: string[][] | undefined;
      void Promise.all(
        ids.map((id) =>
          activities.instancesNotTerminated({
            region: 'us-east-1',
            instanceIds: [id],
            waitMs: 60_000,
          }),
        ),
      ).then((a) => (answers = a));
      // the three machines' first checks, asked in one turn, go out together
      await advanceUntil(() => calls.length > 0);
      expect(calls.map((c) => [c.action, c.ids.length])).toEqual([['DescribeInstances', 3]]);
      // EC2 reports them terminated only after that first check
      for (const i of instances) i.State = { Name: 'terminated' };
      const waited = await advanceUntil(() => answers !== undefined);
      expect(answers!.flat()).toEqual([]);
      // the region's poller asked for the three together TERMINATED_POLL_MS later, once
      expect(calls.map((c) => [c.action, c.ids.length])).toEqual([
        ['DescribeInstances', 3],
        ['DescribeInstances', 3],
      ]);
      expect(waited).toBeGreaterThanOrEqual(TERMINATED_POLL_MS - 1_000);
      expect(waited).toBeLessThan(TERMINATED_POLL_MS + 2_000);
    });

    it('answers every waiting machine of a region from one describe per round, however their waits began', async () => {
      const ids = ['i-0d1', 'i-0d2', 'i-0d3', 'i-0d4'];
      const instances = ids.map((id): Instance => ({
        InstanceId: id,
        State: { Name: 'shutting-down' },
      }));
      const { activities, calls } = harness({ instances });
      const answers = new Map<string, string[]>();
      // four machines start waiting a second apart: their first checks go out on their own
      // (each more than the poll window's 500 ms idle after the one before)
      for (const id of ids) {
        void activities
          .instancesNotTerminated({ region: 'us-east-1', instanceIds: [id], waitMs: 60_000 })
          .then((left) => answers.set(id, left));
        await jest.advanceTimersByTimeAsync(1_000);
      }
      expect(calls.map((c) => c.ids)).toEqual(ids.map((id) => [id]));
      // then the region's poller: one describe for all four per round, not one per machine
      await advanceUntil(() => calls.length > ids.length);
      expect(calls.slice(ids.length).map((c) => [c.action, c.ids.length])).toEqual([
        ['DescribeInstances', 4],
      ]);
      for (const i of instances) i.State = { Name: 'terminated' };
      await advanceUntil(() => answers.size === ids.length);
      expect([...answers.values()].flat()).toEqual([]);
      expect(calls.slice(ids.length).map((c) => [c.action, c.ids.length])).toEqual([
        ['DescribeInstances', 4],
        ['DescribeInstances', 4],
      ]);
    });

    it('answers what is still not terminated once waitMs has passed', async () => {
      const instances: Instance[] = [{ InstanceId: 'i-0b1', State: { Name: 'shutting-down' } }];
      const { activities, calls } = harness({ instances });
      let left: string[] | undefined;
      void activities
        .instancesNotTerminated({ region: 'us-east-1', instanceIds: ['i-0b1'], waitMs: 7_000 })
        .then((l) => (left = l));
      const waited = await advanceUntil(() => left !== undefined);
      expect(left).toEqual(['i-0b1']);
      // asked at once, then by the region's poller TERMINATED_POLL_MS (5 s) later; its next poll
      // (7.5 s after that) would come after the wait is over, so it is answered at that round,
      // before its 7 s, not kept waiting for nothing
      expect(calls.map((c) => c.ids)).toEqual([['i-0b1'], ['i-0b1']]);
      expect(waited).toBeGreaterThanOrEqual(TERMINATED_POLL_MS);
      expect(waited).toBeLessThan(7_000);
    });

    it('a wait that begins after the region’s poller found no one left and stopped gets a poller of its own', async () => {
      const instances: Instance[] = [
        { InstanceId: 'i-0e1', State: { Name: 'shutting-down' } },
        { InstanceId: 'i-0e2', State: { Name: 'shutting-down' } },
      ];
      const { activities, calls } = harness({ instances });
      let first: string[] | undefined;
      void activities
        .instancesNotTerminated({ region: 'us-east-1', instanceIds: ['i-0e1'], waitMs: 60_000 })
        .then((l) => (first = l));
      await advanceUntil(() => calls.length === 1);
      instances[0]!.State = { Name: 'terminated' };
      await advanceUntil(() => first !== undefined);
      expect(first).toEqual([]);
      // the poller has stopped: a new wait starts a new one, which answers it
      let second: string[] | undefined;
      void activities
        .instancesNotTerminated({ region: 'us-east-1', instanceIds: ['i-0e2'], waitMs: 60_000 })
        .then((l) => (second = l));
      await advanceUntil(() => calls.length === 3);
      instances[1]!.State = { Name: 'terminated' };
      await advanceUntil(() => second !== undefined);
      expect(second).toEqual([]);
      expect(calls.map((c) => c.ids)).toEqual([['i-0e1'], ['i-0e1'], ['i-0e2'], ['i-0e2']]);
    });
    it('fails the waits of a round whose describe failed (their activities retry), and polls again for the next wait', async () => {
      const instances: Instance[] = [
        { InstanceId: 'i-0f1', State: { Name: 'shutting-down' } },
        { InstanceId: 'i-0f2', State: { Name: 'shutting-down' } },
      ];
      const describeError: { error?: Error } = {};
      const { activities, calls } = harness({ instances, describeError });
      let failed: unknown;
      void activities
        .instancesNotTerminated({ region: 'us-east-1', instanceIds: ['i-0f1'], waitMs: 60_000 })
        .then(
          () => (failed = 'answered'),
          (err: unknown) => (failed = err),
        );
      await advanceUntil(() => calls.length === 1);
      // the poller's round fails: its wait fails with EC2's error, not kept to its 60 s
      describeError.error = ec2Error('UnauthorizedOperation', 'You are not authorized');
      const waited = await advanceUntil(() => failed !== undefined);
      expect(failed).toBeInstanceOf(Error);
      expect((failed as Error).message).toBe('You are not authorized');
      expect(waited).toBeLessThan(TERMINATED_POLL_MS + 2_000);
      // the poller went on: a wait after the failure is served and answered
      describeError.error = undefined;
      let later: string[] | undefined;
      void activities
        .instancesNotTerminated({ region: 'us-east-1', instanceIds: ['i-0f2'], waitMs: 60_000 })
        .then((l) => (later = l));
      await advanceUntil(() => calls.length === 4);
      instances[1]!.State = { Name: 'terminated' };
      await advanceUntil(() => later !== undefined);
      expect(later).toEqual([]);
      // the failed round's describe, then the new wait's own check and the poller's two rounds
      expect(calls.map((c) => c.ids)).toEqual([
        ['i-0f1'],
        ['i-0f1'],
        ['i-0f2'],
        ['i-0f2'],
        ['i-0f2'],
      ]);
    });
  });

  it('terminates, then waits for terminated in the same activity (waitMs)', async () => {
    const { activities, calls } = harness({ instances: [] });
    const left = await activities.terminateInstances({
      region: 'us-east-1',
      instanceIds: ['i-0c1'],
      waitMs: 60_000,
    });
    // TerminateInstances answered `terminated`: known gone, no describe
    expect(left).toEqual([]);
    expect(calls.map((c) => c.action)).toEqual(['TerminateInstances']);
  });

  it('checks 450 machines’ instances in describes of at most 200 ids each (EC2’s filter limit)', async () => {
    const ids = Array.from({ length: 450 }, (_, i) => `i-${(i + 0x1000).toString(16)}`);
    const instances = ids.map((id, i): Instance => ({
      InstanceId: id,
      State: { Name: i % 2 === 0 ? 'shutting-down' : 'terminated' },
    }));
    const { activities, calls } = harness({ instances });
    const remaining = await Promise.all(
      ids.map((id) =>
        activities.instancesNotTerminated({ region: 'us-east-1', instanceIds: [id] }),
      ),
    );
    expect(remaining.flat()).toEqual(ids.filter((_, i) => i % 2 === 0));
    expect(calls.map((c) => [c.action, c.ids.length])).toEqual([
      ['DescribeInstances', 200],
      ['DescribeInstances', 200],
      ['DescribeInstances', 50],
    ]);
  });

  it('retries only the machine whose just-launched instance EC2 does not list yet; an old unknown id is gone', async () => {
    const { activities, calls } = harness({ instances: [], unknown: ['i-f1', 'i-01d'] });
    const results = await Promise.allSettled([
      activities.terminateInstances({ region: 'us-east-1', instanceIds: ['i-a1'] }),
      activities.terminateInstances({
        region: 'us-east-1',
        instanceIds: ['i-f1'],
        fresh: ['i-f1'],
      }),
      activities.terminateInstances({ region: 'us-east-1', instanceIds: ['i-01d'] }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toEqual(
      new Error('instance i-f1 was just launched and EC2 does not list it yet; retrying'),
    );
    expect(calls.map((c) => c.ids)).toEqual([['i-a1', 'i-f1', 'i-01d'], ['i-a1']]);
  });

  it('retries an unknown recorded id its machine recorded moments ago (eventual consistency); an old one is gone', async () => {
    const now = Date.parse('2026-11-25T12:00:00.000Z');
    const ago = (ms: number): string => new Date(now - ms).toISOString();
    const { activities, calls, machineReads } = harness({
      instances: [],
      unknown: ['i-0a', 'i-0b', 'i-0c', 'i-0d', 'i-0e'],
      now,
      machines: {
        // recorded a minute ago, not yet seen by liveness: EC2 may not list it yet
        '1': { instanceId: 'i-0a', instanceStatus: 'pending', instanceRecordedAt: ago(60_000) },
        // recorded past the grace window: gone
        '2': {
          instanceId: 'i-0b',
          instanceStatus: 'pending',
          instanceRecordedAt: ago(UNLISTED_GRACE_MS + 1_000),
        },
        // liveness saw it listed: EC2 knew it, so its not knowing it now means gone
        '3': { instanceId: 'i-0c', instanceStatus: 'running', instanceRecordedAt: ago(60_000) },
        // records another instance: the unknown id is not its recorded one
        '4': { instanceId: 'i-0f', instanceStatus: 'pending', instanceRecordedAt: ago(60_000) },
      },
    });
    /** Runs the activity as machine `machineId`'s workflow would. */
    const asMachine = (machineId: string, instanceId: string): Promise<string[]> =>
      new MockActivityEnvironment({
        workflowExecution: { workflowId: `machine:big:${machineId}`, runId: `run-${machineId}` },
      }).run(() =>
        activities.terminateInstances({ region: 'us-east-1', instanceIds: [instanceId] }),
      );
    const results = await Promise.allSettled([
      asMachine('1', 'i-0a'),
      asMachine('2', 'i-0b'),
      asMachine('3', 'i-0c'),
      asMachine('4', 'i-0d'),
      // its machine is gone already: nothing records the id
      asMachine('5', 'i-0e'),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    expect((results[0] as PromiseRejectedResult).reason).toEqual(
      new Error('instance i-0a was just launched and EC2 does not list it yet; retrying'),
    );
    // one TerminateInstances for all five; a record read only for an id EC2 refused as unknown
    expect(calls.map((c) => [c.action, c.ids.length])).toEqual([['TerminateInstances', 5]]);
    expect(machineReads.sort()).toEqual(['big/1', 'big/2', 'big/3', 'big/4', 'big/5']);
  });

  it('does not count an unknown id gone when its machine’s record cannot be read', async () => {
    const unreadable = new Error('DynamoDB is unreachable');
    const { activities, calls } = harness({
      instances: [],
      unknown: ['i-0a'],
      machineReadError: unreadable,
    });
    const out = new MockActivityEnvironment({
      workflowExecution: { workflowId: 'machine:big:1', runId: 'run-1' },
    }).run(() => activities.terminateInstances({ region: 'us-east-1', instanceIds: ['i-0a'] }));
    await expect(out).rejects.toBe(unreadable);
    expect(calls.map((c) => c.action)).toEqual(['TerminateInstances']);
  });

  it('finds every machine’s unrecorded instances with one tag search of the model, mapped by launch batch', async () => {
    const instances = [
      launched('i-10', 'b1', 0),
      launched('i-11', 'b1', 1),
      launched('i-12', 'b2', 0),
      // launched before batches were tagged: its own machine tag counts
      {
        InstanceId: 'i-13',
        State: { Name: 'running' },
        Tags: [
          { Key: TAG_MODEL, Value: 'big' },
          { Key: TAG_MACHINE, Value: '9' },
        ],
      } as Instance,
    ];
    const { activities, calls, reads } = harness({
      instances,
      members: { b1: ['0', '1'], b2: ['2'] },
    });
    const found = await Promise.all(
      ['0', '1', '2', '3', '9'].map((machineId) =>
        activities.instancesTaggedFor({ model: 'big', machineId, region: 'us-east-1' }),
      ),
    );
    expect(found).toEqual([['i-10'], ['i-11'], ['i-12'], [], ['i-13']]);
    expect(calls.map((c) => c.action)).toEqual(['DescribeInstances']);
    expect(reads.sort()).toEqual(['b1', 'b2']);
  });
});

describe('tearDownMachine: a Dead machine torn down in one activity', () => {
  /** A machine's input: its recorded instance `i-<id>0` known. */
  const input = (machineId: string, extra: Partial<MachineTeardown> = {}): MachineTeardown => ({
    model: 'big',
    machineId,
    region: 'us-east-1',
    known: [`i-${machineId}0`],
    fresh: [],
    terminate: true,
    harvestMode: 'destroyed',
    waitMs: 60_000,
    ...extra,
  });

  it('releases, notes, searches once, terminates known and found instances together, and waits', async () => {
    // machine 2 also has an unrecorded launch (batch b1's second member), found by the search
    const instances = [
      launched('i-10', 'b0', 0),
      launched('i-20', 'b1', 0),
      launched('i-21', 'b1', 1),
    ];
    const { activities, calls, statuses, released } = harness({
      instances,
      members: { b0: ['1'], b1: ['2', '2'] },
    });
    const out = await Promise.all(['1', '2'].map((id) => activities.tearDownMachine(input(id))));
    expect(out).toEqual([
      { instanceIds: ['i-10'], remaining: [] },
      { instanceIds: ['i-20', 'i-21'], remaining: [] },
    ]);
    // the known instances in one call (the termination window is shorter than the search's),
    // one search of the model, the found one as soon as it answered; TerminateInstances said
    // `terminated`, so no describe after
    expect(calls.map((c) => [c.action, c.ids])).toEqual([
      ['TerminateInstances', ['i-10', 'i-20']],
      ['DescribeInstances', []],
      ['TerminateInstances', ['i-21']],
    ]);
    expect(released.sort()).toEqual(['1', '2']);
    expect(statuses).toEqual([
      { machineId: '1', status: 'stopping', message: 'terminating instance i-10' },
      { machineId: '2', status: 'stopping', message: 'terminating instance i-20' },
      { machineId: '2', status: 'stopping', message: 'terminating instance i-20, i-21' },
    ]);
  });

  it('keeps the instances under a harvest mode that does not terminate: no EC2 call', async () => {
    const { activities, calls, statuses, released } = harness({ instances: [] });
    const out = await activities.tearDownMachine(
      input('3', { terminate: false, harvestMode: 'none' }),
    );
    expect(out).toEqual({ instanceIds: [], remaining: [] });
    expect(calls).toEqual([]);
    expect(released).toEqual(['3']);
    expect(statuses).toEqual([
      {
        machineId: '3',
        status: 'stopping',
        message: 'keeping instance i-30 (harvest mode "none")',
      },
    ]);
  });

  it('goes on when the machine is gone (nothing to write), and fails when a write fails otherwise', async () => {
    const gone = harness({
      instances: [],
      statusError: { '4': new EntityNotFoundError('machine 4 not found') },
    });
    await expect(gone.activities.tearDownMachine(input('4', { known: [] }))).resolves.toEqual({
      instanceIds: [],
      remaining: [],
    });
    const failing = harness({
      instances: [],
      statusError: { '5': new Error('ProvisionedThroughputExceededException: slow down') },
    });
    await expect(failing.activities.tearDownMachine(input('5', { known: [] }))).rejects.toThrow(
      'ProvisionedThroughputExceededException: slow down',
    );
  });

  it('removes the machine when asked, once every instance is seen terminated (REMOVED_IN_TEARDOWN)', async () => {
    const instances = [launched('i-10', 'b0', 0), launched('i-20', 'b1', 0)];
    const { activities, removed, statuses } = harness({
      instances,
      members: { b0: ['1'], b1: ['2'] },
      lastMachine: '2',
    });
    const out = await Promise.all(
      ['1', '2'].map((id) => activities.tearDownMachine(input(id, { remove: true }))),
    );
    expect(out).toEqual([
      { instanceIds: ['i-10'], remaining: [], removed: { modelRemoved: false } },
      { instanceIds: ['i-20'], remaining: [], removed: { modelRemoved: true } },
    ]);
    expect(removed.sort()).toEqual(['1', '2']);
    // each wrote its status before it was removed
    expect(statuses.map((s) => s.machineId).sort()).toEqual(['1', '2']);
  });

  it('removes a machine whose instances are kept (harvest mode) when asked; never unasked', async () => {
    const asked = harness({ instances: [] });
    await expect(
      asked.activities.tearDownMachine(
        input('3', { terminate: false, harvestMode: 'none', remove: true }),
      ),
    ).resolves.toEqual({ instanceIds: [], remaining: [], removed: { modelRemoved: false } });
    expect(asked.removed).toEqual(['3']);
    const unasked = harness({ instances: [launched('i-10', 'b0', 0)], members: { b0: ['1'] } });
    await expect(unasked.activities.tearDownMachine(input('1'))).resolves.toEqual({
      instanceIds: ['i-10'],
      remaining: [],
    });
    expect(unasked.removed).toEqual([]);
  });

  it('leaves a machine whose instance is not terminated yet, and one whose removal failed, to its workflow', async () => {
    const { activities, removed } = harness({
      instances: [{ ...launched('i-10', 'b0', 0), State: { Name: 'shutting-down' } }],
      members: { b0: ['1'] },
      shuttingDown: ['i-10'],
      removeError: { '2': new Error('ProvisionedThroughputExceededException: slow down') },
    });
    // no time to wait: what is not terminated goes back to the workflow, which removes it after
    const out = await activities.tearDownMachine(input('1', { remove: true, waitMs: 0 }));
    expect(out).toEqual({ instanceIds: ['i-10'], remaining: ['i-10'] });
    // a removal that fails does not fail the teardown: the workflow's removal retries and says why
    const failed = await activities.tearDownMachine(input('2', { known: [], remove: true }));
    expect(failed).toEqual({ instanceIds: [], remaining: [] });
    expect(removed).toEqual([]);
  });

  it('deletes the placement group its removal empties, as the workflow’s removal does (review finding 2)', async () => {
    // an availability-set machine asked to remove (a Dead snapshot recorded without the flag)
    const { activities, removed, calls } = harness({
      instances: [],
      model: { availabilitySets: true, uid: 'u1' },
      machines: { '5': { life: 'dead', applications: ['db'] } },
      groupCounts: { db: {} },
    });
    const out = await activities.tearDownMachine(
      input('5', { known: [], terminate: false, harvestMode: 'none', remove: true }),
    );
    expect(out).toEqual({ instanceIds: [], remaining: [], removed: { modelRemoved: false } });
    expect(removed).toEqual(['5']);
    expect(calls).toEqual([
      { action: 'DeletePlacementGroup', ids: [placementGroupName('u1', 'db')] },
    ]);
    // a group another machine is still counted in stays
    const busy = harness({
      instances: [],
      model: { availabilitySets: true, uid: 'u1' },
      machines: { '6': { life: 'dead', applications: ['web'] } },
      groupCounts: { web: { 'us-east-1a': 1 } },
    });
    await busy.activities.tearDownMachine(
      input('6', { known: [], terminate: false, harvestMode: 'none', remove: true }),
    );
    expect(busy.removed).toEqual(['6']);
    expect(busy.calls).toEqual([]);
  });

  it('retries, never skips, a just-launched instance EC2 does not list yet', async () => {
    const { activities } = harness({ instances: [], unknown: ['i-f6'] });
    await expect(
      activities.tearDownMachine(input('6', { known: ['i-f6'], fresh: ['i-f6'] })),
    ).rejects.toThrow('instance i-f6 was just launched and EC2 does not list it yet; retrying');
  });
});

describe('tearDownMachine: a failed try, and its deadline', () => {
  const input = (machineId: string, extra: Partial<MachineTeardown> = {}): MachineTeardown => ({
    model: 'big',
    machineId,
    region: 'us-east-1',
    known: [`i-${machineId}0`],
    fresh: [],
    terminate: true,
    harvestMode: 'destroyed',
    waitMs: 60_000,
    ...extra,
  });
  /** Real time: waits until `done()` (generously bounded for a loaded machine). */
  async function until(done: () => boolean): Promise<void> {
    const end = Date.now() + 30_000;
    while (!done()) {
      if (Date.now() > end) throw new Error('condition not met within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('lets its slow status write land before it fails, and writes nothing after (review finding 2)', async () => {
    // i-70 known and protected; i-71 an unrecorded launch the search finds
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { activities, calls, statuses, released } = harness({
      instances: [launched('i-70', 'b7', 0), launched('i-71', 'b7', 1)],
      members: { b7: ['7', '7'] },
      refused: ['i-70'],
      statusGate: { '7': gate },
    });
    const outcome: string[] = [];
    const done = activities.tearDownMachine(input('7')).then(
      () => outcome.push('resolved'),
      (err: unknown) =>
        outcome.push(`failed after ${statuses.length} status: ${(err as Error).message}`),
    );
    // the refusal came while the first status write is held: the try does not fail yet
    await until(() => calls.some((c) => c.action === 'TerminateInstances'));
    await new Promise((r) => setTimeout(r, 300));
    expect(outcome).toEqual([]);
    open();
    await done;
    expect(outcome).toEqual(["failed after 1 status: The instance 'i-70' may not be terminated"]);
    // the search answers after the failure: its found instance is still terminated
    // (harmless), but no status naming it is written over the fallback's
    await until(() => calls.some((c) => c.ids.includes('i-71')));
    await new Promise((r) => setTimeout(r, 300));
    expect(calls.map((c) => [c.action, c.ids])).toEqual([
      ['TerminateInstances', ['i-70']],
      ['DescribeInstances', []],
      ['TerminateInstances', ['i-71']],
    ]);
    expect(statuses).toEqual([
      { machineId: '7', status: 'stopping', message: 'terminating instance i-70' },
    ]);
    expect(released).toEqual(['7']);
  });

  it('removes nothing once cancelled, though its writes under way land and it has no instance to wait for', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { activities, removed, statuses } = harness({
      instances: [],
      statusGate: { '4': gate },
    });
    const env = new MockActivityEnvironment();
    let outcome: string | undefined;
    const done = env
      .run(
        activities.tearDownMachine,
        input('4', { known: [], terminate: false, harvestMode: 'none', remove: true }),
      )
      .then(
        () => (outcome = 'resolved'),
        (err: unknown) => (outcome = `rejected: ${(err as Error).name}`),
      );
    // cancelled while its status write is held: the try ends at once
    env.cancel();
    await done;
    expect(outcome).toBe('rejected: CancelledFailure');
    // the held write lands; instances kept, so nothing to wait for: the try's own code reaches the removal
    // at once: it must not remove the machine (README: a failed try starts no write)
    open();
    await until(() => statuses.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(removed).toEqual([]);
  });

  it('returns what is not terminated, without waiting, when its deadline leaves no time (review finding 3)', async () => {
    const { activities, calls } = harness({ instances: [], shuttingDown: ['i-80'] });
    // 40 s start-to-close: less than the 45 s kept for the poller's round and the answer
    const env = new MockActivityEnvironment({
      startToCloseTimeoutMs: 40_000,
      scheduleToCloseTimeoutMs: 0, // none set (the one-step proxy sets none)
    });
    const out = await env.run(activities.tearDownMachine, input('8'));
    expect(out).toEqual({ instanceIds: ['i-80'], remaining: ['i-80'] });
    expect(calls.map((c) => c.action)).toEqual(['TerminateInstances', 'DescribeInstances']);
  });

  describe('on fake timers', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('cuts its wait for terminated short of its start-to-close timeout (review finding 3)', async () => {
      const instances: Instance[] = [{ InstanceId: 'i-90', State: { Name: 'shutting-down' } }];
      const { activities } = harness({ instances, shuttingDown: ['i-90'] });
      // 75 s start-to-close: 30 s of it for the wait, not the asked 60 s
      const env = new MockActivityEnvironment({
        startToCloseTimeoutMs: 75_000,
        scheduleToCloseTimeoutMs: 0,
      });
      const started = Date.now();
      let answer: { at: number; out: unknown } | undefined;
      void env
        .run(activities.tearDownMachine, input('9', { known: ['i-90'] }))
        .then((out) => (answer = { at: Date.now() - started, out }));
      while (!answer && Date.now() - started < 120_000) await jest.advanceTimersByTimeAsync(500);
      expect(answer?.out).toEqual({ instanceIds: ['i-90'], remaining: ['i-90'] });
      // it waited (the poller answers a wait due before its next round in that round: up to
      // 10 s early), and answered at its 30 s budget, not the asked 60 s, well before 75 s
      expect(answer!.at).toBeGreaterThanOrEqual(20_000);
      expect(answer!.at).toBeLessThanOrEqual(32_000);
    });
  });
});

describe('a cancelled teardown activity', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('ends at once, and its wait for terminated leaves the poller (no describe for it after)', async () => {
    const instances: Instance[] = [{ InstanceId: 'i-0c7', State: { Name: 'shutting-down' } }];
    const { activities, calls } = harness({ instances });
    const env = new MockActivityEnvironment();
    let outcome: string | undefined;
    void env
      .run(activities.instancesNotTerminated, {
        region: 'us-east-1',
        instanceIds: ['i-0c7'],
        waitMs: 60_000,
      })
      .then(
        () => (outcome = 'resolved'),
        (err: unknown) => (outcome = `rejected: ${(err as Error).name}`),
      );
    // its first check, at once: still shutting down, so it waits for the poller
    while (calls.length === 0) await jest.advanceTimersByTimeAsync(100);
    expect(calls).toHaveLength(1);
    env.cancel();
    await jest.advanceTimersByTimeAsync(100);
    expect(outcome).toBe('rejected: CancelledFailure');
    // a minute of the poller's rounds: nothing asked for the cancelled wait
    await jest.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(1);
  });
});
