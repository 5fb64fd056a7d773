import type { InstanceTypeInfo as Ec2InstanceTypeInfo } from '@aws-sdk/client-ec2';
import { GetProductsCommand, PricingClient } from '@aws-sdk/client-pricing';
import { InstancePrices, parsePriceListItem, priceListFilters } from '../../../activities/pricing';
import {
  productsFor,
  startPricingEmulator,
  type PricingEmulator,
} from '../../../local/pricing-emulator';
import { syntheticPrice, syntheticPriceInput } from '../../../local/pricing-synthetic';

function type(
  name: string,
  vcpus: number,
  memMiB: number,
  extra: Partial<Ec2InstanceTypeInfo> = {},
): Ec2InstanceTypeInfo {
  return {
    InstanceType: name as Ec2InstanceTypeInfo['InstanceType'],
    VCpuInfo: { DefaultVCpus: vcpus },
    MemoryInfo: { SizeInMiB: memMiB },
    CurrentGeneration: true,
    BurstablePerformanceSupported: name.startsWith('t'),
    ProcessorInfo: { SupportedArchitectures: ['x86_64'] },
    ...extra,
  };
}

const ARM = { ProcessorInfo: { SupportedArchitectures: ['arm64' as const] } };

const CATALOGUE: Ec2InstanceTypeInfo[] = [
  type('t3.small', 2, 2048),
  type('t3.medium', 2, 4096),
  type('c7a.medium', 1, 2048),
  type('m7a.medium', 1, 4096),
  type('m7i.large', 2, 8192),
  type('m6i.large', 2, 8192),
  type('m4.large', 2, 8192, { CurrentGeneration: false }),
  type('m6g.large', 2, 8192, ARM),
  type('r7i.large', 2, 16384),
  type('c7i.large', 2, 4096),
];

const price = (t: Ec2InstanceTypeInfo): number => syntheticPrice(syntheticPriceInput(t)!);
const byName = (name: string): Ec2InstanceTypeInfo =>
  CATALOGUE.find((t) => t.InstanceType === name)!;

describe('the synthetic price list', () => {
  it('is proportional to vCPUs and memory within a family', () => {
    expect(price(type('m7i.xlarge', 4, 16384))).toBeCloseTo(2 * price(byName('m7i.large')), 3);
    expect(price(type('t3.large', 2, 8192))).toBeCloseTo(2 * price(byName('t3.medium')), 3);
  });

  it('prices burstable types below every other type of their memory', () => {
    expect(price(byName('t3.small'))).toBeLessThan(price(byName('c7a.medium')));
    expect(price(byName('t3.medium'))).toBeLessThan(price(byName('m7a.medium')));
  });

  it('prices previous-generation types 25% above a current type of the same size', () => {
    expect(price(byName('m4.large'))).toBeCloseTo(price(byName('m6i.large')) * 1.25, 3);
  });

  it('prices Graviton below and memory-optimised above general purpose', () => {
    expect(price(byName('m6g.large'))).toBeLessThan(price(byName('m6i.large')));
    expect(price(byName('r7i.large'))).toBeGreaterThan(price(byName('m7i.large')));
  });

  it('serves each price in an entry the client reads back exactly', () => {
    for (const t of CATALOGUE) {
      const [linux] = productsFor('us-east-1', t);
      expect(parsePriceListItem(linux!.json)).toEqual({
        instanceType: t.InstanceType,
        usdPerHour: price(t),
      });
    }
  });
});

describe('the Price List API emulator, through the real SDK client', () => {
  let emulator: PricingEmulator;
  let client: PricingClient;
  const regionsAsked: string[] = [];

  beforeAll(async () => {
    emulator = await startPricingEmulator({
      catalogue: (region) => {
        regionsAsked.push(region);
        return Promise.resolve(CATALOGUE);
      },
    });
    client = new PricingClient({
      region: 'us-east-1',
      endpoint: emulator.url,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    client.destroy();
    await emulator.close();
  });

  it('answers the provisioner’s filters with one on-demand Linux product per type', async () => {
    const prices = await new InstancePrices(client, { log: () => undefined }).forRegion(
      'us-east-1',
    );
    expect(Object.fromEntries(prices)).toEqual(
      Object.fromEntries(CATALOGUE.map((t) => [t.InstanceType, price(t)])),
    );
  });

  it('lists the other products AWS lists beside them when the filters do not exclude them', async () => {
    const out = await client.send(
      new GetProductsCommand({
        ServiceCode: 'AmazonEC2',
        Filters: [
          { Type: 'TERM_MATCH', Field: 'regionCode', Value: 'us-east-1' },
          { Type: 'TERM_MATCH', Field: 'instanceType', Value: 't3.small' },
        ],
      }),
    );
    const docs = ((out.PriceList ?? []) as string[]).map(
      (item) => JSON.parse(String(item)) as { product: { attributes: Record<string, string> } },
    );
    expect(
      docs.map((d) => {
        const a = d.product.attributes;
        return `${a.operatingSystem}/${a.tenancy}/${a.preInstalledSw}/${a.capacitystatus}`;
      }),
    ).toEqual([
      'Linux/Shared/NA/Used',
      'Windows/Shared/NA/Used',
      'RHEL/Shared/NA/Used',
      'Linux/Shared/SQL Web/Used',
      'Linux/Dedicated/NA/Used',
      'Linux/Shared/NA/UnusedCapacityReservation',
      'Linux/Shared/NA/AllocatedCapacityReservation',
    ]);
    expect(out.FormatVersion).toBe('aws_v1');
  });

  it('pages with NextToken, MaxResults at a time', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const out = await client.send(
        new GetProductsCommand({
          ServiceCode: 'AmazonEC2',
          Filters: priceListFilters('us-east-1'),
          MaxResults: 3,
          NextToken: token,
        }),
      );
      pages += 1;
      expect(((out.PriceList ?? []) as string[]).length).toBeLessThanOrEqual(3);
      for (const item of out.PriceList ?? []) seen.push(parsePriceListItem(item)!.instanceType);
      token = out.NextToken;
    } while (token);
    expect(pages).toBe(Math.ceil(CATALOGUE.length / 3));
    expect(seen).toEqual(CATALOGUE.map((t) => t.InstanceType));
  });

  it('answers a region it has no catalogue for with its own catalogue once per region', async () => {
    await client.send(
      new GetProductsCommand({
        ServiceCode: 'AmazonEC2',
        Filters: [{ Type: 'TERM_MATCH', Field: 'regionCode', Value: 'eu-west-1' }],
        MaxResults: 1,
      }),
    );
    expect(regionsAsked.filter((r) => r === 'eu-west-1')).toEqual(['eu-west-1']);
    expect(regionsAsked.filter((r) => r === 'us-east-1')).toEqual(['us-east-1']);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a bad filter type',
      { Filters: [{ Type: 'FUZZY', Field: 'tenancy', Value: 'x' }] },
      'InvalidParameterException',
    ],
    ['MaxResults above 100', { MaxResults: 101 }, 'InvalidParameterException'],
    ['a forged NextToken', { NextToken: 'bm90LWEtbnVtYmVy' }, 'InvalidNextTokenException'],
  ])('refuses %s with AWS’s error type', async (_about, input, errorName) => {
    await expect(
      client.send(new GetProductsCommand({ ServiceCode: 'AmazonEC2', ...input })),
    ).rejects.toMatchObject({ name: errorName, $metadata: { httpStatusCode: 400 } });
  });

  it('counts the calls it answered', async () => {
    const res = await fetch(`${emulator.url}/_admin/stats`);
    const stats = (await res.json()) as { getProducts: number };
    expect(stats.getProducts).toBeGreaterThanOrEqual(5);
  });
});
