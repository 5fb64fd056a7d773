import type {
  DescribeImagesCommand,
  DescribeInstanceTypeOfferingsCommand,
  DescribeInstanceTypesCommand,
} from '@aws-sdk/client-ec2';
import { EC2Client } from '@aws-sdk/client-ec2';
import { CANONICAL_OWNER, ImageFinder, NoImageError } from '../../../ec2/images';
import { InstanceTypeCatalogue, toCatalogueEntry } from '../../../ec2/instance-types';

/**
 * An EC2 client answering each command with a function of the command: a
 * real client (the SDK's paginators ask for one) whose `send` is the double.
 */
function fakeEc2(answer: (command: unknown) => unknown): {
  client: EC2Client;
  sent: unknown[];
  /** Each call's input as it was sent (the paginators reuse one input object page by page). */
  inputs: Array<Record<string, unknown>>;
} {
  const sent: unknown[] = [];
  const inputs: Array<Record<string, unknown>> = [];
  const client = new EC2Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
  });
  client.send = ((command: unknown) => {
    sent.push(command);
    inputs.push({ ...(command as { input: Record<string, unknown> }).input });
    try {
      return Promise.resolve(answer(command));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }) as EC2Client['send'];
  return { client, sent, inputs };
}

describe('ImageFinder', () => {
  const images = [
    { ImageId: 'ami-old', CreationDate: '2024-01-10T00:00:00.000Z' },
    { ImageId: 'ami-new', CreationDate: '2024-03-15T00:00:00.000Z' },
    { ImageId: 'ami-undated' },
  ];

  it("asks for Canonical's server images of the base and arch, and takes the newest", async () => {
    const { client, sent } = fakeEc2(() => ({ Images: images }));
    const finder = new ImageFinder(client);
    expect(await finder.find({ region: 'us-east-1', base: 'ubuntu@22.04', arch: 'arm64' })).toBe(
      'ami-new',
    );
    expect(sent).toHaveLength(1);
    const input = (sent[0] as DescribeImagesCommand).input;
    expect(input).toEqual({
      Owners: [CANONICAL_OWNER],
      Filters: [
        { Name: 'name', Values: ['ubuntu/images/*/ubuntu-jammy-22.04-arm64-server-*'] },
        { Name: 'architecture', Values: ['arm64'] },
        { Name: 'state', Values: ['available'] },
      ],
    });
  });

  it('caches per region, base and arch until the TTL passes, sharing concurrent lookups', async () => {
    let now = 0;
    const { client, sent } = fakeEc2(() => ({ Images: images }));
    const finder = new ImageFinder(client, 1000, () => now);
    const q = { region: 'us-east-1', base: 'ubuntu@24.04', arch: 'amd64' };
    await Promise.all([finder.find(q), finder.find(q), finder.find(q)]);
    expect(sent).toHaveLength(1);
    await finder.find({ ...q, arch: 'arm64' });
    expect(sent).toHaveLength(2);
    now = 1001;
    await finder.find(q);
    expect(sent).toHaveLength(3);
  });

  it.each([
    ['no image for a known base', 'ubuntu@20.04', 'amd64', true],
    ['a base without a known Ubuntu codename', 'ubuntu@26.04', 'amd64', false],
    ['an arch EC2 does not offer', 'ubuntu@24.04', 's390x', false],
  ])(
    'throws NoImageError naming base, arch and region for %s',
    async (_label, base, arch, asks) => {
      const { client, sent } = fakeEc2(() => ({ Images: [] }));
      const finder = new ImageFinder(client);
      const err = await finder.find({ region: 'eu-west-1', base, arch }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NoImageError);
      expect((err as Error).message).toBe(
        `no image found for base "${base}" (arch ${arch}) in region eu-west-1`,
      );
      expect(sent).toHaveLength(asks ? 1 : 0);
    },
  );

  it('does not cache a failed lookup', async () => {
    let fail = true;
    const { client, sent } = fakeEc2(() => {
      if (fail) throw new Error('RequestLimitExceeded');
      return { Images: images };
    });
    const finder = new ImageFinder(client);
    const q = { region: 'us-east-1', base: 'ubuntu@24.04', arch: 'amd64' };
    await expect(finder.find(q)).rejects.toThrow('RequestLimitExceeded');
    fail = false;
    expect(await finder.find(q)).toBe('ami-new');
    expect(sent).toHaveLength(2);
  });
});

describe('InstanceTypeCatalogue', () => {
  const page = (names: string[], next?: string) => ({
    InstanceTypes: names.map((n) => ({
      InstanceType: n,
      CurrentGeneration: true,
      ProcessorInfo: { SupportedArchitectures: ['x86_64'] },
      VCpuInfo: { DefaultVCpus: 2 },
      MemoryInfo: { SizeInMiB: 4096 },
    })),
    NextToken: next,
  });

  it('pages through the catalogue once and shares it until the TTL passes', async () => {
    let now = 0;
    const { client, sent, inputs } = fakeEc2((command) => {
      const token = (command as DescribeInstanceTypesCommand).input.NextToken;
      return token ? page(['b.large']) : page(['a.large'], 'p2');
    });
    const catalogue = new InstanceTypeCatalogue(client, 1000, () => now);
    const [first] = await Promise.all([catalogue.all(), catalogue.all()]);
    expect(first.map((t) => t.name)).toEqual(['a.large', 'b.large']);
    expect(sent).toHaveLength(2);
    // pages of 100 (EC2's default is smaller: more calls), the second asked with the first's token
    expect(inputs).toEqual([
      { MaxResults: 100, NextToken: undefined },
      { MaxResults: 100, NextToken: 'p2' },
    ]);
    await catalogue.all();
    expect(sent).toHaveLength(2);
    now = 1001;
    await catalogue.all();
    expect(sent).toHaveLength(4);
  });

  it('knows which zones offer a type, one offerings call per zone', async () => {
    const offered: Record<string, string[]> = {
      'us-east-1a': ['t3.small', 'c7a.medium'],
      'us-east-1e': ['t3.small'],
    };
    const { client, sent, inputs } = fakeEc2((command) => {
      const zone = (command as DescribeInstanceTypeOfferingsCommand).input.Filters?.[0]
        ?.Values?.[0];
      return {
        InstanceTypeOfferings: (offered[zone ?? ''] ?? []).map((t) => ({ InstanceType: t })),
      };
    });
    const catalogue = new InstanceTypeCatalogue(client);
    expect(await catalogue.zonesOffering('c7a.medium', ['us-east-1a', 'us-east-1e'])).toEqual([
      'us-east-1a',
    ]);
    expect(await catalogue.zonesOffering('t3.small', ['us-east-1a', 'us-east-1e'])).toEqual([
      'us-east-1a',
      'us-east-1e',
    ]);
    expect(sent).toHaveLength(2);
    expect(inputs).toEqual(
      ['us-east-1a', 'us-east-1e'].map((zone) => ({
        LocationType: 'availability-zone',
        Filters: [{ Name: 'location', Values: [zone] }],
        MaxResults: 1000,
        NextToken: undefined,
      })),
    );
  });

  it("maps EC2's shape to core's: vCPUs as cores, Juju's arch names, no type without a usable arch", () => {
    expect(
      toCatalogueEntry({
        InstanceType: 'm7g.large',
        CurrentGeneration: true,
        ProcessorInfo: { SupportedArchitectures: ['arm64'] },
        VCpuInfo: { DefaultVCpus: 2 },
        MemoryInfo: { SizeInMiB: 8192 },
      }),
    ).toEqual({
      name: 'm7g.large',
      arches: ['arm64'],
      cores: 2,
      mem: 8192,
      currentGeneration: true,
    });
    expect(
      toCatalogueEntry({
        InstanceType: 'm1.small',
        ProcessorInfo: { SupportedArchitectures: ['i386'] },
      }),
    ).toBeUndefined();
  });
});
