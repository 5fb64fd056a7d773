import { WorkflowNotFoundError } from '@temporalio/client';
import { handleInstanceEvent, type InstanceEventDeps } from '../../../functions/instance-events';
import type { InstanceObservation } from '../../../temporal/signals';

/** The event as AWS documents it (EventBridge, "EC2 Instance State-change Notification"). */
function sample(state: string, instanceId = 'i-0abcd1234ef567890') {
  return {
    version: '0',
    id: '7bf73129-1428-4cd3-a780-95db273d1602',
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: '123456789012',
    time: '2026-11-23T16:00:00Z',
    region: 'us-east-1',
    resources: [`arn:aws:ec2:us-east-1:123456789012:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state },
  };
}

/** The table's byInstance index, as the fakes hold it. */
const RECORDED = new Map([['i-0abcd1234ef567890', { model: 'demo', machineId: '3' }]]);

/**
 * `routineApplies`: whether the machine's routine write applies (alive,
 * `running`, recording the instance starting or running), as the store's
 * condition would decide; `dead`: whether the machine is Dead (its write of
 * news that is not routine applies).
 */
function fakes(recorded = RECORDED, routineApplies: boolean | 'stale' = true, dead = false) {
  const signals: Array<[string, InstanceObservation]> = [];
  const written: Array<[string, InstanceObservation]> = [];
  const deadWritten: Array<[string, InstanceObservation]> = [];
  const asked: string[] = [];
  const deps: InstanceEventDeps = {
    machineOf: (instanceId) => {
      asked.push(instanceId);
      return Promise.resolve(recorded.get(instanceId));
    },
    recordRoutine: (machine, obs) => {
      written.push([`${machine.model}/${machine.machineId}`, obs]);
      return Promise.resolve(routineApplies);
    },
    recordDead: (machine, obs) => {
      deadWritten.push([`${machine.model}/${machine.machineId}`, obs]);
      return Promise.resolve(dead);
    },
    signal: (id, obs) => {
      signals.push([id, obs]);
      return Promise.resolve();
    },
  };
  return { deps, signals, written, deadWritten, asked };
}

describe('EC2 instance state-change events', () => {
  it.each(['pending', 'running'])(
    'writes %s to the machine that runs the instance itself: no signal, no workflow task',
    async (state) => {
      const { deps, signals, written, asked } = fakes();
      await expect(handleInstanceEvent(deps, sample(state))).resolves.toEqual({
        recorded: 'machine:demo:3',
      });
      expect(written).toEqual([['demo/3', { instanceId: 'i-0abcd1234ef567890', state }]]);
      expect(signals).toEqual([]);
      // found by the recorded instance id alone: no tag of the instance is read
      expect(asked).toEqual(['i-0abcd1234ef567890']);
    },
  );

  it.each(['pending', 'running'])(
    'signals %s to the workflow when the machine is not simply running (down, stopped, dying): the workflow decides',
    async (state) => {
      const { deps, signals, written } = fakes(RECORDED, false);
      await expect(handleInstanceEvent(deps, sample(state))).resolves.toEqual({
        signalled: 'machine:demo:3',
      });
      expect(written).toHaveLength(1);
      expect(signals).toEqual([['machine:demo:3', { instanceId: 'i-0abcd1234ef567890', state }]]);
    },
  );

  it('drops a late pending the store finds stale (the machine records the instance running): no signal', async () => {
    const { deps, signals, written } = fakes(RECORDED, 'stale');
    await expect(handleInstanceEvent(deps, sample('pending'))).resolves.toEqual({
      ignored: 'stale',
    });
    expect(written).toEqual([['demo/3', { instanceId: 'i-0abcd1234ef567890', state: 'pending' }]]);
    expect(signals).toEqual([]);
  });

  it.each(['stopping', 'stopped', 'shutting-down', 'terminated'])(
    'signals the workflow of the machine that records the instance that it is %s when the machine is not Dead, writing nothing itself',
    async (state) => {
      const { deps, signals, written, deadWritten, asked } = fakes();
      await expect(handleInstanceEvent(deps, sample(state))).resolves.toEqual({
        signalled: 'machine:demo:3',
      });
      expect(signals).toEqual([['machine:demo:3', { instanceId: 'i-0abcd1234ef567890', state }]]);
      expect(written).toEqual([]);
      // the Dead-only write was tried first and did not apply
      expect(deadWritten).toEqual([['demo/3', { instanceId: 'i-0abcd1234ef567890', state }]]);
      expect(asked).toEqual(['i-0abcd1234ef567890']);
    },
  );

  it.each(['stopping', 'stopped', 'shutting-down', 'terminated'])(
    'writes %s to a Dead machine that records the instance itself: its teardown asks EC2, no signal, no workflow task',
    async (state) => {
      const { deps, signals, written, deadWritten } = fakes(RECORDED, true, true);
      await expect(handleInstanceEvent(deps, sample(state))).resolves.toEqual({
        recorded: 'machine:demo:3',
      });
      expect(deadWritten).toEqual([['demo/3', { instanceId: 'i-0abcd1234ef567890', state }]]);
      expect([signals, written]).toEqual([[], []]);
    },
  );

  it('fails when the Dead write fails for another reason than its condition (EventBridge retries the event)', async () => {
    const { deps, signals } = fakes();
    deps.recordDead = () => Promise.reject(new Error('ProvisionedThroughputExceededException'));
    await expect(handleInstanceEvent(deps, sample('terminated'))).rejects.toThrow(
      'ProvisionedThroughputExceededException',
    );
    expect(signals).toEqual([]);
  });

  it('ignores an instance no machine records (another deployment, an old model, a launch not recorded yet, an instance a machine recorded before it was reprovisioned)', async () => {
    const { deps, signals, written } = fakes();
    await expect(handleInstanceEvent(deps, sample('running', 'i-0ffff'))).resolves.toEqual({
      ignored: 'not-ours',
    });
    await expect(handleInstanceEvent(deps, sample('terminated', 'i-0ffff'))).resolves.toEqual({
      ignored: 'not-ours',
    });
    expect([signals, written]).toEqual([[], []]);
  });

  it('ignores a state EC2 may add later, without a lookup', async () => {
    const { deps, signals, asked, written } = fakes();
    await expect(handleInstanceEvent(deps, sample('hibernating'))).resolves.toEqual({
      ignored: 'unknown-state',
    });
    expect([signals, asked, written]).toEqual([[], [], []]);
  });

  it('ignores a machine whose workflow is gone', async () => {
    const { deps } = fakes(RECORDED, false);
    deps.signal = () => Promise.reject(new WorkflowNotFoundError('gone', 'machine:demo:3', ''));
    await expect(handleInstanceEvent(deps, sample('terminated'))).resolves.toEqual({
      ignored: 'no-workflow',
    });
    await expect(handleInstanceEvent(deps, sample('running'))).resolves.toEqual({
      ignored: 'no-workflow',
    });
  });

  it('fails when the routine write fails for another reason than its condition (EventBridge retries the event)', async () => {
    const { deps, signals } = fakes();
    deps.recordRoutine = () => Promise.reject(new Error('ProvisionedThroughputExceededException'));
    await expect(handleInstanceEvent(deps, sample('running'))).rejects.toThrow(
      'ProvisionedThroughputExceededException',
    );
    expect(signals).toEqual([]);
  });

  it('fails when the signal fails for another reason than a missing workflow', async () => {
    const { deps } = fakes();
    deps.signal = () => Promise.reject(new Error('UNAVAILABLE'));
    await expect(handleInstanceEvent(deps, sample('terminated'))).rejects.toThrow('UNAVAILABLE');
  });

  it('refuses an event of another shape', async () => {
    const { deps } = fakes();
    await expect(
      handleInstanceEvent(deps, {
        ...sample('running'),
        'detail-type': 'AWS API Call via CloudTrail',
      }),
    ).rejects.toThrow();
  });
});
