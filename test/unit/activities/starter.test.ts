import type { Client } from '@temporalio/client';
import { starterActivities } from '../../../activities/starter';
import type { ActivityDeps } from '../../../activities/deps';

/** The bulk starter's activity starts each machine's workflow as the API would, who asked included. */
describe('startMachineWorkflows', () => {
  function depsRecording() {
    const starts: Array<Record<string, any>> = [];
    const temporal = {
      workflow: {
        start: (_type: string, options: Record<string, any>) => {
          starts.push(options);
          return Promise.resolve();
        },
      },
    } as unknown as Client;
    return { deps: { temporal, taskQueue: 'q' } as unknown as ActivityDeps, starts };
  }

  it('names the requester in every workflow it starts', async () => {
    const { deps, starts } = depsRecording();
    const ids = ['0', '1', '2'];
    expect(
      await starterActivities(deps).startMachineWorkflows({
        model: 'm',
        machineIds: ids,
        requestedBy: 'alice',
      }),
    ).toBe(3);
    expect(
      starts
        .map((o) => [o.workflowId, o.args, o.staticDetails])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    ).toEqual(
      ids.map((id) => [
        `machine:m:${id}`,
        [{ model: 'm', machineId: id, requestedBy: 'alice' }],
        'Requested by alice',
      ]),
    );
  });

  it('an input of a run started before requestedBy was passed starts them without one', async () => {
    const { deps, starts } = depsRecording();
    await starterActivities(deps).startMachineWorkflows({ model: 'm', machineIds: ['0'] });
    expect(starts).toHaveLength(1);
    expect(starts[0]!.args).toEqual([{ model: 'm', machineId: '0' }]);
    expect(starts[0]).not.toHaveProperty('staticDetails');
  });

  it('passes what the request wrote (created) to every workflow it starts', async () => {
    const { deps, starts } = depsRecording();
    const created = {
      modelUid: 'uid-1',
      region: 'us-east-1',
      availabilitySets: true,
      base: 'ubuntu@22.04',
      constraints: '',
      placement: 'zone=us-east-1b',
      applications: [],
    };
    await starterActivities(deps).startMachineWorkflows({
      model: 'm',
      machineIds: ['0', '1'],
      created,
    });
    expect(
      starts.map((o) => o.args).sort((a, b) => a[0].machineId.localeCompare(b[0].machineId)),
    ).toEqual([
      [{ model: 'm', machineId: '0', created }],
      [{ model: 'm', machineId: '1', created }],
    ]);
  });
});
