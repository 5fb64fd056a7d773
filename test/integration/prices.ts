import {
  paginateDescribeInstanceTypeOfferings,
  paginateDescribeInstanceTypes,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { GetProductsCommand, PricingClient } from '@aws-sdk/client-pricing';
import type { StackInfo } from './stack';

/**
 * What the stack's Price List API emulator serves and what its EC2 endpoint
 * offers, read the way a user would (GetProducts, DescribeInstanceTypes,
 * DescribeInstanceTypeOfferings) and independently of the worker's code, so
 * tests derive their expected choices from the served data.
 */

/** On-demand Linux shared-tenancy USD per hour by type, as the stack's emulator serves it. */
export async function servedPrices(stack: StackInfo): Promise<Map<string, number>> {
  const client = new PricingClient({
    region: 'us-east-1',
    endpoint: stack.pricingEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  const prices = new Map<string, number>();
  try {
    let token: string | undefined;
    do {
      const out = await client.send(
        new GetProductsCommand({
          ServiceCode: 'AmazonEC2',
          Filters: [
            { Type: 'TERM_MATCH', Field: 'regionCode', Value: stack.region },
            { Type: 'TERM_MATCH', Field: 'operatingSystem', Value: 'Linux' },
            { Type: 'TERM_MATCH', Field: 'tenancy', Value: 'Shared' },
            { Type: 'TERM_MATCH', Field: 'preInstalledSw', Value: 'NA' },
            { Type: 'TERM_MATCH', Field: 'capacitystatus', Value: 'Used' },
          ],
          NextToken: token,
        }),
      );
      for (const item of (out.PriceList ?? []) as string[]) {
        const doc = JSON.parse(String(item)) as {
          product: { attributes: { instanceType: string } };
          terms: {
            OnDemand: Record<
              string,
              { priceDimensions: Record<string, { pricePerUnit: { USD: string } }> }
            >;
          };
        };
        const [offer] = Object.values(doc.terms.OnDemand);
        const [dimension] = Object.values(offer!.priceDimensions);
        prices.set(doc.product.attributes.instanceType, Number(dimension!.pricePerUnit.USD));
      }
      token = out.NextToken;
    } while (token);
  } finally {
    client.destroy();
  }
  return prices;
}

export interface ServedType {
  name: string;
  vcpus: number;
  memMiB: number;
  arches: string[];
  currentGeneration: boolean;
}

/** The region's instance types as the EC2 endpoint describes them. */
export async function servedCatalogue(ec2: EC2Client): Promise<ServedType[]> {
  const types: ServedType[] = [];
  for await (const page of paginateDescribeInstanceTypes({ client: ec2 }, { MaxResults: 100 })) {
    for (const t of page.InstanceTypes ?? []) {
      types.push({
        name: t.InstanceType!,
        vcpus: t.VCpuInfo?.DefaultVCpus ?? 0,
        memMiB: t.MemoryInfo?.SizeInMiB ?? 0,
        arches: t.ProcessorInfo?.SupportedArchitectures ?? [],
        currentGeneration: t.CurrentGeneration ?? false,
      });
    }
  }
  return types;
}

/** Types offered in at least one availability zone of the region. */
export async function offeredTypes(ec2: EC2Client): Promise<Set<string>> {
  const names = new Set<string>();
  const pages = paginateDescribeInstanceTypeOfferings(
    { client: ec2 },
    { LocationType: 'availability-zone', MaxResults: 1000 },
  );
  for await (const page of pages) {
    for (const o of page.InstanceTypeOfferings ?? []) if (o.InstanceType) names.add(o.InstanceType);
  }
  return names;
}
