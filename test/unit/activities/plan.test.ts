import { NoImageError, noImageMessage, type ImageQuery } from '../../../ec2/images';
import {
  buildLaunchPlan,
  LaunchPlanError,
  rootDiskGiB,
  type PlanInputs,
} from '../../../activities/plan';
import type { InstanceTypeInfo } from '../../../core';

const CATALOGUE: InstanceTypeInfo[] = [
  { name: 'big.6g', arches: ['amd64'], cores: 2, mem: 6144, currentGeneration: true },
  { name: 'mid.4g', arches: ['amd64'], cores: 2, mem: 4096, currentGeneration: true },
  { name: 'small.2g', arches: ['amd64'], cores: 1, mem: 2048, currentGeneration: true },
  { name: 'small2.2g', arches: ['amd64'], cores: 2, mem: 2048, currentGeneration: true },
  { name: 'old.2g', arches: ['amd64'], cores: 1, mem: 2048, currentGeneration: false },
  { name: 'arm.2g', arches: ['arm64'], cores: 1, mem: 2048, currentGeneration: true },
];
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

function inputs(
  machine: Partial<PlanInputs['machine']> = {},
  overrides: Partial<PlanInputs> = {},
): PlanInputs & { imageQueries: ImageQuery[] } {
  const imageQueries: ImageQuery[] = [];
  return {
    imageQueries,
    model: { region: 'us-east-1' },
    machine: { id: '3', base: 'ubuntu@24.04', constraints: '', applications: [], ...machine },
    catalogue: CATALOGUE,
    zones: ZONES,
    zonesOffering: (_type, zones) => Promise.resolve([...zones]),
    findImage: (q) => {
      imageQueries.push(q);
      return Promise.resolve(`ami-${q.base}-${q.arch}`);
    },
    findSubnet: (idOrCidr) =>
      Promise.resolve(
        idOrCidr === 'subnet-0b' || idOrCidr === '10.0.1.0/24'
          ? { subnetId: 'subnet-0b', zone: 'us-east-1b' }
          : undefined,
      ),
    ...overrides,
  };
}

async function planError(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the plan to fail');
}

describe('rootDiskGiB', () => {
  it.each([
    [undefined, 8],
    [0, 8],
    [4096, 8],
    [8192, 8],
    [8193, 9],
    [20 * 1024, 20],
  ])("gives root-disk %s MiB a %i GiB root volume (Juju's 8 GiB floor)", (mib, gib) => {
    expect(rootDiskGiB(mib)).toBe(gib);
  });

  it('records the root disk the constraint asks for in the hardware', async () => {
    const plan = await buildLaunchPlan(inputs({ constraints: 'root-disk=20G' }));
    expect(plan.hardware.rootDisk).toBe(20 * 1024);
  });
});

describe('subnet placement', () => {
  it.each(['subnet=subnet-0b', 'subnet=10.0.1.0/24'])(
    '%s launches into the subnet, in its zone',
    async (placement) => {
      const plan = await buildLaunchPlan(inputs({ placement }));
      expect(plan).toMatchObject({ subnetId: 'subnet-0b', placementZone: 'us-east-1b' });
    },
  );

  it('fails the plan for a subnet that does not exist', async () => {
    await expect(buildLaunchPlan(inputs({ placement: 'subnet=subnet-nope' }))).rejects.toThrow(
      new LaunchPlanError('unable to find subnet "subnet-nope" in region us-east-1'),
    );
  });
});

describe('buildLaunchPlan', () => {
  it('takes the cheapest current type with the defaults (1 core, 2 GiB, amd64) and its image', async () => {
    const i = inputs({ applications: ['wordpress', 'mysql'] });
    expect(await buildLaunchPlan(i)).toEqual({
      region: 'us-east-1',
      instanceType: 'small.2g',
      imageId: 'ami-ubuntu@24.04-amd64',
      hardware: { arch: 'amd64', cores: 1, mem: 2048, rootDisk: 8192 },
      zonesConstraint: [],
      applications: ['wordpress', 'mysql'],
    });
    expect(i.imageQueries).toEqual([{ region: 'us-east-1', base: 'ubuntu@24.04', arch: 'amd64' }]);
  });

  it('takes the least wasteful type that fits: mem=3G with 4G and 6G types gives 4G', async () => {
    const plan = await buildLaunchPlan(inputs({ constraints: 'mem=3072M' }));
    expect(plan.instanceType).toBe('mid.4g');
    expect(plan.hardware).toEqual({ arch: 'amd64', cores: 2, mem: 4096, rootDisk: 8192 });
  });

  it('looks the image up for the arch of the chosen type', async () => {
    const i = inputs({ constraints: 'arch=arm64', base: 'ubuntu@22.04' });
    const plan = await buildLaunchPlan(i);
    expect(plan.instanceType).toBe('arm.2g');
    expect(plan.imageId).toBe('ami-ubuntu@22.04-arm64');
    expect(i.imageQueries).toEqual([{ region: 'us-east-1', base: 'ubuntu@22.04', arch: 'arm64' }]);
  });

  it('uses the image-id constraint as is, without a lookup', async () => {
    const i = inputs({ constraints: 'image-id=ami-0123456789abcdef0' });
    const plan = await buildLaunchPlan(i);
    expect(plan.imageId).toBe('ami-0123456789abcdef0');
    expect(i.imageQueries).toEqual([]);
  });

  it('narrows zones by the zones constraint and a zone= placement', async () => {
    expect(
      (await buildLaunchPlan(inputs({ constraints: 'zones=us-east-1a,us-east-1c' })))
        .zonesConstraint,
    ).toEqual(['us-east-1a', 'us-east-1c']);
    const placed = await buildLaunchPlan(inputs({ placement: 'zone=us-east-1b' }));
    expect(placed.placementZone).toBe('us-east-1b');
    expect(placed.zonesConstraint).toEqual([]);
  });

  it('takes the next cheapest type when the cheapest is not offered in any allowed zone', async () => {
    const asked: Array<[string, string[]]> = [];
    const plan = await buildLaunchPlan(
      inputs(
        { constraints: 'zones=us-east-1c' },
        {
          zonesOffering: (type, zones) => {
            asked.push([type, [...zones]]);
            return Promise.resolve(type === 'small.2g' ? [] : [...zones]);
          },
        },
      ),
    );
    expect(plan.instanceType).toBe('small2.2g');
    expect(asked).toEqual([
      ['small.2g', ['us-east-1c']],
      ['small2.2g', ['us-east-1c']],
    ]);
  });

  it('fails at once, naming base, arch and region, when there is no image', async () => {
    const query = { region: 'us-east-1', base: 'ubuntu@20.04', arch: 'arm64' };
    const err = await planError(
      buildLaunchPlan(
        inputs(
          { base: 'ubuntu@20.04', constraints: 'arch=arm64' },
          { findImage: (q) => Promise.reject(new NoImageError(noImageMessage(q))) },
        ),
      ),
    );
    expect(err).toBeInstanceOf(LaunchPlanError);
    expect(err.message).toBe(noImageMessage(query));
    expect(err.message).toBe(
      'no image found for base "ubuntu@20.04" (arch arm64) in region us-east-1',
    );
  });

  it.each([
    ['mem=1048576M', 'no instance types in us-east-1 matching constraints "mem=1048576M"'],
    ['colour=blue', 'unknown constraint "colour"'],
    ['mem=lots', 'bad "mem" constraint: must be a non-negative float with optional M/G/T/P suffix'],
  ])("fails at once on %s with core's message", async (constraints, message) => {
    const err = await planError(buildLaunchPlan(inputs({ constraints })));
    expect(err).toBeInstanceOf(LaunchPlanError);
    expect(err.message).toBe(message);
  });

  it('fails when no matching type is offered in the allowed zones', async () => {
    const err = await planError(
      buildLaunchPlan(
        inputs({ constraints: 'zones=us-east-1b' }, { zonesOffering: () => Promise.resolve([]) }),
      ),
    );
    expect(err).toBeInstanceOf(LaunchPlanError);
    expect(err.message).toBe(
      'no instance type matching constraints "zones=us-east-1b" is offered in us-east-1b (region us-east-1)',
    );
  });

  it.each([
    [{ placement: 'zone=us-east-1z' }, '"us-east-1z"'],
    [{ constraints: 'zones=us-east-1y,us-east-1z' }, '"us-east-1y", "us-east-1z"'],
  ])(
    'names the zones the region lacks, never "offered in no zone" (%j)',
    async (machine, named) => {
      const err = await planError(buildLaunchPlan(inputs(machine)));
      expect(err).toBeInstanceOf(LaunchPlanError);
      expect(err.message).toBe(
        `availability zone ${named} not valid: region us-east-1 has ${ZONES.join(', ')}`,
      );
    },
  );
});

describe('price (issue 14)', () => {
  // mid.4g is dearer than big.6g; small2.2g is the cheapest default fit; arm.2g has no price
  const PRICES = new Map([
    ['big.6g', 0.04],
    ['mid.4g', 0.05],
    ['small.2g', 0.03],
    ['small2.2g', 0.02],
    ['old.2g', 0.001],
  ]);

  it('chooses the cheapest fitting type and records its price in the plan', async () => {
    const plan = await buildLaunchPlan(inputs({}, { prices: PRICES }));
    expect(plan).toMatchObject({ instanceType: 'small2.2g', pricePerHour: 0.02 });
  });

  it('mem=3G: the cheaper 6G type over the 4G one', async () => {
    const plan = await buildLaunchPlan(inputs({ constraints: 'mem=3G' }, { prices: PRICES }));
    expect(plan).toMatchObject({ instanceType: 'big.6g', pricePerHour: 0.04 });
  });

  it('never a previous-generation type for being cheap, never a type that does not fit', async () => {
    const plan = await buildLaunchPlan(
      inputs({ constraints: 'cores=2 mem=5G' }, { prices: PRICES }),
    );
    expect(plan.instanceType).toBe('big.6g');
  });

  it('the cheapest type not offered in an allowed zone gives way to the next cheapest', async () => {
    const plan = await buildLaunchPlan(
      inputs(
        {},
        {
          prices: PRICES,
          zonesOffering: (t, zones) => Promise.resolve(t === 'small2.2g' ? [] : [...zones]),
        },
      ),
    );
    expect(plan).toMatchObject({ instanceType: 'small.2g', pricePerHour: 0.03 });
  });

  it('an unpriced type has no pricePerHour', async () => {
    const plan = await buildLaunchPlan(inputs({ constraints: 'arch=arm64' }, { prices: PRICES }));
    expect(plan.instanceType).toBe('arm.2g');
    expect(plan).not.toHaveProperty('pricePerHour');
  });

  it('without prices: the least wasteful type, as before, and no pricePerHour', async () => {
    const plan = await buildLaunchPlan(inputs({ constraints: 'mem=3G' }));
    expect(plan.instanceType).toBe('mid.4g');
    expect(plan).not.toHaveProperty('pricePerHour');
  });

  it('virt-type=hvm does not filter: the machine gets the default choice', async () => {
    const plan = await buildLaunchPlan(
      inputs({ constraints: 'virt-type=hvm' }, { prices: PRICES }),
    );
    expect(plan.instanceType).toBe('small2.2g');
  });
});
