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

const OURS = {
  'provisioner:deployment': 'prod',
  'provisioner:model': 'demo',
  'provisioner:model-uid': 'uid-1',
  'provisioner:machine': '3',
  Name: 'demo-machine-3',
};

function fakes(tags: Record<string, string> = OURS, uid: string | null = 'uid-1') {
  const signals: Array<[string, InstanceObservation]> = [];
  const deps: InstanceEventDeps = {
    deployment: 'prod',
    tagsOf: () => Promise.resolve(tags),
    modelUid: () => Promise.resolve(uid ?? undefined),
    signal: (id, obs) => {
      signals.push([id, obs]);
      return Promise.resolve();
    },
  };
  return { deps, signals };
}

describe('EC2 instance state-change events', () => {
  it.each(['pending', 'running', 'stopping', 'stopped', 'shutting-down', 'terminated'])(
    'signals the machine’s workflow that its instance is %s',
    async (state) => {
      const { deps, signals } = fakes();
      await expect(handleInstanceEvent(deps, sample(state))).resolves.toEqual({
        signalled: 'machine:demo:3',
      });
      expect(signals).toEqual([['machine:demo:3', { instanceId: 'i-0abcd1234ef567890', state }]]);
    },
  );

  it.each<[string, Record<string, string>, string | null, string]>([
    ['another deployment', { ...OURS, 'provisioner:deployment': 'dev' }, 'uid-1', 'not-ours'],
    ['an instance without our tags', { Name: 'web' }, 'uid-1', 'not-ours'],
    ['an instance of an older model of the same name', OURS, 'uid-2', 'other-model'],
    ['a model that is gone', OURS, null, 'model-gone'],
  ])('ignores %s', async (_label, tags, uid, reason) => {
    const { deps, signals } = fakes(tags, uid);
    await expect(handleInstanceEvent(deps, sample('terminated'))).resolves.toEqual({
      ignored: reason,
    });
    expect(signals).toEqual([]);
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
