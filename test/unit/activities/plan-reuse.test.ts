import type { ActivityDeps } from '../../../activities/deps';
import { launchActivities, PLAN_REUSE_MS } from '../../../activities/launch';
import { PlacementGroups } from '../../../ec2/placement-groups';
import type { RegionalEc2 } from '../../../ec2/regional';
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

  function setup(images: () => Promise<string> = () => Promise.resolve('ami-1')) {
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
          return images();
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

  it('builds one plan for a burst of machines alike that arrive while it is being made', async () => {
    // the image lookup answers late, as a cold cache does: every call arrives before it
    const { acts, calls } = setup(
      () => new Promise((resolve) => setTimeout(() => resolve('ami-1'), 50)),
    );
    const plans = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        acts.planLaunch({ model: 'm', machineId: i % 2 === 0 ? '0' : '1' }),
      ),
    );
    expect(calls).toEqual({ offering: 1, images: 1, machineReads: 100 });
    expect(new Set(plans.map((p) => p.imageId))).toEqual(new Set(['ami-1']));
    expect(plans.every((p) => p.instanceType === 't3.small')).toBe(true);
    // each caller has a plan of its own: changing one leaves the others as they were
    plans[0]!.hardware.cores = 99;
    plans[0]!.zonesConstraint.push('us-east-1a');
    expect(plans[1]!.hardware.cores).toBe(2);
    expect(plans[1]!.zonesConstraint).toEqual([]);
    const later = await acts.planLaunch({ model: 'm', machineId: '0' });
    expect(later.hardware).toEqual({ arch: 'amd64', cores: 2, mem: 2048, rootDisk: 8192 });
    expect(later.zonesConstraint).toEqual([]);
    expect(calls.images).toBe(1);
  });

  it('does not keep a plan whose build failed: the burst fails together, the next call builds again', async () => {
    let fail = true;
    const { acts, calls } = setup(
      () =>
        new Promise((resolve, reject) =>
          setTimeout(
            () => (fail ? reject(new Error('DescribeImages throttled')) : resolve('ami-2')),
            20,
          ),
        ),
    );
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => acts.planLaunch({ model: 'm', machineId: '0' })),
    );
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(calls.images).toBe(1);
    fail = false;
    const plan = await acts.planLaunch({ model: 'm', machineId: '0' });
    expect(plan.imageId).toBe('ami-2');
    expect(calls.images).toBe(2);
  });

  it('plans afresh once PLAN_REUSE_MS has passed', async () => {
    const { acts, calls } = setup();
    const now = jest.spyOn(Date, 'now');
    try {
      now.mockReturnValue(1_000_000);
      await acts.planLaunch({ model: 'm', machineId: '0' });
      now.mockReturnValue(1_000_000 + PLAN_REUSE_MS - 1);
      await acts.planLaunch({ model: 'm', machineId: '1' });
      expect(calls.images).toBe(1);
      now.mockReturnValue(1_000_000 + PLAN_REUSE_MS);
      await acts.planLaunch({ model: 'm', machineId: '1' });
      expect(calls.images).toBe(2);
    } finally {
      now.mockRestore();
    }
  });
});
