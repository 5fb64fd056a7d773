import { EC2Client, type Instance } from '@aws-sdk/client-ec2';
import type { ActivityDeps } from '../../../activities/deps';
import { SharedListings } from '../../../activities/instance-listing';
import { sweepActivities, type SweptMachine } from '../../../activities/sweep';
import { TAG_MACHINE, TAG_MODEL } from '../../../activities/tags';
import { provisioningTuning } from '../../../config/env';

/**
 * One model's sweep with a listing shared by a sweeper page: what it believes
 * of EC2 when the listing is older than what the machines recorded since.
 */
function instance(id: string, state: string): Instance {
  return {
    InstanceId: id,
    State: { Name: state as never },
    LaunchTime: new Date(0),
    Tags: [
      { Key: TAG_MODEL, Value: 'm' },
      { Key: TAG_MACHINE, Value: '0' },
    ],
  };
}

function harness(input: {
  machines: SweptMachine[];
  listed: Instance[];
  byId: Instance[];
  harvestMode?: string;
}) {
  const byIdCalls: string[][] = [];
  // a real client (EC2's paginators want one) whose calls never leave the process
  const ec2 = new EC2Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  ec2.middlewareStack.add(
    () => (args) => {
      const filters = (args.input as { Filters?: Array<{ Name: string; Values: string[] }> })
        .Filters;
      const ids = filters?.find((f) => f.Name === 'instance-id')?.Values ?? [];
      byIdCalls.push(ids);
      const output = {
        $metadata: {},
        Reservations: [{ Instances: input.byId.filter((i) => ids.includes(i.InstanceId!)) }],
      };
      return Promise.resolve({ output, response: {} });
    },
    { step: 'initialize', name: 'answeredInProcess' },
  );
  let listings = 0;
  const shared = new SharedListings(() => {
    listings++;
    return Promise.resolve(input.listed);
  }, 10_000);
  const deps = {
    repo: {
      getModel: () =>
        Promise.resolve({
          name: 'm',
          region: 'us-east-1',
          harvestMode: input.harvestMode ?? 'destroyed',
          life: 'alive',
          reprovisionLost: false,
        }),
    },
    store: { machines: () => Promise.resolve(input.machines) },
    ec2ForRegion: () => ({ ec2 }),
    tuning: provisioningTuning({}),
    deployment: 'test',
    taskQueue: 'unused',
  } as unknown as ActivityDeps;
  const { sweepModel } = sweepActivities(deps);
  return {
    sweep: () => sweepModel({ model: 'm' }, shared),
    byIdCalls,
    listings: () => listings,
  };
}

const down: SweptMachine = {
  id: '0',
  life: 'alive',
  status: 'down',
  instanceId: 'i-1',
  instanceStatus: 'shutting-down',
};

describe('sweepModel with a shared listing', () => {
  it('never undoes a newer state with an older listing: a change is asked of EC2 by id first', async () => {
    // the listing saw i-1 running; an EC2 event recorded it shutting down since
    const h = harness({
      machines: [down],
      listed: [instance('i-1', 'running')],
      byId: [instance('i-1', 'shutting-down')],
    });
    const report = await h.sweep();
    expect(h.byIdCalls).toEqual([['i-1']]);
    expect(report.instanceChanges).toEqual([]);
    expect(report.lost).toEqual([]);
  });

  it('tells the change when EC2 confirms it by id', async () => {
    const h = harness({
      machines: [{ ...down, status: 'running', instanceStatus: 'pending' }],
      listed: [instance('i-1', 'running')],
      byId: [instance('i-1', 'running')],
    });
    const report = await h.sweep();
    expect(report.instanceChanges).toEqual(['0:i-1:running']);
  });

  it('asks nothing by id when the listing agrees with what the machines recorded', async () => {
    const h = harness({
      machines: [{ ...down, status: 'running', instanceStatus: 'running' }],
      listed: [instance('i-1', 'running')],
      byId: [],
    });
    const report = await h.sweep();
    expect(h.byIdCalls).toEqual([]);
    expect(report.instanceChanges).toEqual([]);
    expect(h.listings()).toBe(1);
  });

  it('asks EC2 nothing for a model that harvests nothing and has no instance to watch', async () => {
    const h = harness({ machines: [], listed: [instance('i-9', 'running')], byId: [] });
    const report = await h.sweep();
    expect(h.listings()).toBe(0);
    expect(h.byIdCalls).toEqual([]);
    expect(report.strays).toEqual([]);
  });

  it('takes a model’s strays from the shared listing when it harvests them', async () => {
    const h = harness({
      machines: [{ ...down, status: 'running', instanceStatus: 'running' }],
      listed: [instance('i-1', 'running'), { ...instance('i-2', 'running') }],
      byId: [],
      harvestMode: 'unknown',
    });
    const report = await h.sweep();
    expect(report.strays).toEqual(['i-2']);
    expect(report.terminated).toEqual(['i-2']);
  });
});
