import type { ActivityDeps } from '../../../activities/deps';
import { launchActivities } from '../../../activities/launch';
import { PlacementGroups } from '../../../activities/placement-groups';
import type { RegionalEc2 } from '../../../activities/regional';
import type { InstanceTypeInfo } from '../../../core';
import type { MachineRecord, ModelRecord } from '../../../state/types';

/**
 * Machines alike share one plan (matching the catalogue is the costly part
 * of planning, and a request of a thousand machines asks it a thousand
 * times): the second plan asks nothing of the catalogue or images.
 */
describe('planLaunch reuses the plan of a machine alike', () => {
  const catalogue: InstanceTypeInfo[] = [
    { name: 't3.small', arches: ['amd64'], cores: 2, mem: 2048 },
    { name: 't3.xlarge', arches: ['amd64'], cores: 4, mem: 16384 },
  ];

  function setup() {
    const calls = { offering: 0, images: 0, machineReads: 0 };
    const machines: Record<string, Partial<MachineRecord>> = {
      '0': { id: '0', base: 'ubuntu@24.04', constraints: '', applications: ['web'] },
      '1': { id: '1', base: 'ubuntu@24.04', constraints: '', applications: ['web'] },
      '2': { id: '2', base: 'ubuntu@24.04', constraints: 'mem=8G', applications: ['web'] },
      '3': { id: '3', base: 'ubuntu@24.04', constraints: '', applications: ['db'] },
    };
    const regional = {
      region: 'us-east-1',
      ec2: {},
      catalogue: {
        all: () => Promise.resolve(catalogue),
        zonesOffering: (_type: string, zones: readonly string[]) => {
          calls.offering += 1;
          return Promise.resolve([...zones]);
        },
      },
      images: {
        find: () => {
          calls.images += 1;
          return Promise.resolve('ami-1');
        },
      },
      zones: {
        zones: () =>
          Promise.resolve([
            { name: 'us-east-1a', state: 'available' },
            { name: 'us-east-1b', state: 'available' },
          ]),
      },
    } as unknown as RegionalEc2;
    const deps = {
      repo: {
        getModel: (name: string) =>
          Promise.resolve({ name, region: 'us-east-1' } as unknown as ModelRecord),
        getMachine: (_model: string, id: string) => {
          calls.machineReads += 1;
          return Promise.resolve(machines[id] as MachineRecord);
        },
      },
      store: {},
      ec2ForRegion: () => regional,
      defaultRegion: 'us-east-1',
      tuning: { capacityMemoryMs: 0, launchBatchIdleMs: 10, launchBatchMaxMs: 10 },
      deployment: 'test',
      taskQueue: 'q',
    } as unknown as ActivityDeps;
    const acts = launchActivities(deps, new PlacementGroups(() => regional));
    return { acts, calls };
  }

  it('plans the second machine alike without asking the catalogue or images again', async () => {
    const { acts, calls } = setup();
    const first = await acts.planLaunch({ model: 'm', machineId: '0' });
    const second = await acts.planLaunch({ model: 'm', machineId: '1' });
    expect(first).toEqual({
      region: 'us-east-1',
      instanceType: 't3.small',
      imageId: 'ami-1',
      hardware: { arch: 'amd64', cores: 2, mem: 2048, rootDisk: 8192 },
      zonesConstraint: [],
      applications: ['web'],
    });
    expect(second).toEqual(first);
    expect(calls).toEqual({ offering: 1, images: 1, machineReads: 2 });
  });

  it('plans afresh for other constraints or another group, each with its own answer', async () => {
    const { acts, calls } = setup();
    await acts.planLaunch({ model: 'm', machineId: '0' });
    const bigger = await acts.planLaunch({ model: 'm', machineId: '2' });
    expect(bigger.instanceType).toBe('t3.xlarge');
    const db = await acts.planLaunch({ model: 'm', machineId: '3' });
    expect(db.applications).toEqual(['db']);
    expect(db.instanceType).toBe('t3.small');
    expect(calls.offering).toBe(3);
  });
});
