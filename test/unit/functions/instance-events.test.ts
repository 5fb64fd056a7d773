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

function fakes(recorded = RECORDED) {
  const signals: Array<[string, InstanceObservation]> = [];
  const asked: string[] = [];
  const deps: InstanceEventDeps = {
    machineOf: (instanceId) => {
      asked.push(instanceId);
      return Promise.resolve(recorded.get(instanceId));
    },
    signal: (id, obs) => {
      signals.push([id, obs]);
      return Promise.resolve();
    },
  };
  return { deps, signals, asked };
}

describe('EC2 instance state-change events', () => {
  it.each(['pending', 'running', 'stopping', 'stopped', 'shutting-down', 'terminated'])(
    'signals the workflow of the machine that records the instance that it is %s',
    async (state) => {
      const { deps, signals, asked } = fakes();
      await expect(handleInstanceEvent(deps, sample(state))).resolves.toEqual({
        signalled: 'machine:demo:3',
      });
      expect(signals).toEqual([['machine:demo:3', { instanceId: 'i-0abcd1234ef567890', state }]]);
      // found by the recorded instance id alone: no tag of the instance is read
      expect(asked).toEqual(['i-0abcd1234ef567890']);
    },
  );

  it('ignores an instance no machine records (another deployment, an old model, a launch not recorded yet)', async () => {
    const { deps, signals } = fakes();
    await expect(handleInstanceEvent(deps, sample('running', 'i-0ffff'))).resolves.toEqual({
      ignored: 'not-ours',
    });
    expect(signals).toEqual([]);
  });

  it('ignores a state EC2 may add later, without a lookup', async () => {
    const { deps, signals, asked } = fakes();
    await expect(handleInstanceEvent(deps, sample('hibernating'))).resolves.toEqual({
      ignored: 'unknown-state',
    });
    expect([signals, asked]).toEqual([[], []]);
  });

  it('ignores a machine whose workflow is gone', async () => {
    const { deps } = fakes();
    deps.signal = () => Promise.reject(new WorkflowNotFoundError('gone', 'machine:demo:3', ''));
    await expect(handleInstanceEvent(deps, sample('terminated'))).resolves.toEqual({
      ignored: 'no-workflow',
    });
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
