import {
  DescribeInstanceTypesCommand,
  EC2Client,
  type InstanceTypeInfo as Ec2InstanceTypeInfo,
} from '@aws-sdk/client-ec2';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { syntheticPrice, syntheticPriceInput } from './pricing-synthetic';

/**
 * A local AWS Price List API (`AWSPriceListService`, AWS JSON 1.1 protocol)
 * answering `GetProducts` for service `AmazonEC2` with a SYNTHETIC price list
 * (local/pricing-synthetic.ts) made for the instance types the local EC2
 * endpoint offers in each region (`DescribeInstanceTypes`, read once per
 * region). Entries are in AWS's own format: each a JSON document in a string,
 * with `product.attributes` and `terms.OnDemand` / `terms.Reserved`.
 *
 * Besides the Linux, shared-tenancy, no-software, used-capacity on-demand
 * product a launch costs, each type also has the products AWS lists beside
 * it (Windows, RHEL, SQL Server pre-installed, dedicated tenancy, capacity
 * reservations, a cheaper reserved term) so a client's filters matter.
 * `TERM_MATCH`/`EQUALS`, `CONTAINS`, `ANY_OF` and `NONE_OF` filters are
 * honoured on any attribute; pages of at most 100 with an opaque NextToken.
 *
 * `GET /_admin/stats` counts the GetProducts calls answered.
 */

export interface PricingEmulatorOptions {
  /** The EC2 endpoint whose catalogue is priced (moto itself: no proxy faults or limits). */
  ec2Endpoint?: string;
  /** Instead of an EC2 endpoint: the catalogue of a region (tests). */
  catalogue?: (region: string) => Promise<Ec2InstanceTypeInfo[]>;
  host?: string;
  port?: number;
}

export interface PricingEmulator {
  url: string;
  close(): Promise<void>;
}

type Attributes = Record<string, string>;

interface Product {
  attributes: Attributes;
  productFamily: string;
  /** The item as AWS sends it: a JSON string. */
  json: string;
}

const LOCATIONS: Readonly<Record<string, string>> = {
  'us-east-1': 'US East (N. Virginia)',
  'us-east-2': 'US East (Ohio)',
  'us-west-1': 'US West (N. California)',
  'us-west-2': 'US West (Oregon)',
  'eu-west-1': 'EU (Ireland)',
  'eu-central-1': 'EU (Frankfurt)',
  'ap-south-1': 'Asia Pacific (Mumbai)',
};
const USAGE_PREFIX: Readonly<Record<string, string>> = {
  'us-east-1': '',
  'us-east-2': 'USE2-',
  'us-west-1': 'USW1-',
  'us-west-2': 'USW2-',
  'eu-west-1': 'EU-',
  'eu-central-1': 'EUC1-',
  'ap-south-1': 'APS3-',
};
const PUBLISHED = '2026-11-01T00:00:00Z';
const ON_DEMAND_TERM = 'JRTCKXETXF';
const ON_DEMAND_RATE = '6YS6EN2CT7';
const RESERVED_TERM = '4NA7Y494T4';
const PAGE_MAX = 100;

function sku(key: string): string {
  const digest = createHash('sha256').update(key).digest();
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  return Array.from(digest.subarray(0, 16), (b) => alphabet[b % alphabet.length]).join('');
}

function usd(price: number): string {
  return price.toFixed(10);
}

interface Variant {
  operatingSystem: string;
  tenancy: string;
  preInstalledSw: string;
  capacitystatus: string;
  licenseModel: string;
  operation: string;
  usage: string;
  /** The on-demand price from the Linux one. */
  price: (linux: number, vcpus: number) => number;
}

const VARIANTS: readonly Variant[] = [
  {
    operatingSystem: 'Linux',
    tenancy: 'Shared',
    preInstalledSw: 'NA',
    capacitystatus: 'Used',
    licenseModel: 'No License required',
    operation: 'RunInstances',
    usage: 'BoxUsage',
    price: (p) => p,
  },
  {
    operatingSystem: 'Windows',
    tenancy: 'Shared',
    preInstalledSw: 'NA',
    capacitystatus: 'Used',
    licenseModel: 'No License required',
    operation: 'RunInstances:0002',
    usage: 'BoxUsage',
    price: (p, vcpus) => p + 0.046 * Math.max(1, vcpus / 2),
  },
  {
    operatingSystem: 'RHEL',
    tenancy: 'Shared',
    preInstalledSw: 'NA',
    capacitystatus: 'Used',
    licenseModel: 'No License required',
    operation: 'RunInstances:0010',
    usage: 'BoxUsage',
    price: (p) => p + 0.0288,
  },
  {
    operatingSystem: 'Linux',
    tenancy: 'Shared',
    preInstalledSw: 'SQL Web',
    capacitystatus: 'Used',
    licenseModel: 'No License required',
    operation: 'RunInstances:0200',
    usage: 'BoxUsage',
    price: (p, vcpus) => p + 0.017 * Math.max(1, vcpus),
  },
  {
    operatingSystem: 'Linux',
    tenancy: 'Dedicated',
    preInstalledSw: 'NA',
    capacitystatus: 'Used',
    licenseModel: 'No License required',
    operation: 'RunInstances',
    usage: 'DedicatedUsage',
    price: (p) => p * 1.1,
  },
  {
    operatingSystem: 'Linux',
    tenancy: 'Shared',
    preInstalledSw: 'NA',
    capacitystatus: 'UnusedCapacityReservation',
    licenseModel: 'No License required',
    operation: 'RunInstances',
    usage: 'UnusedBox',
    price: (p) => p,
  },
  {
    operatingSystem: 'Linux',
    tenancy: 'Shared',
    preInstalledSw: 'NA',
    capacitystatus: 'AllocatedCapacityReservation',
    licenseModel: 'No License required',
    operation: 'RunInstances',
    usage: 'Reservation',
    price: () => 0,
  },
];

/** The products of one instance type in one region, in AWS's Price List format. */
export function productsFor(region: string, t: Ec2InstanceTypeInfo): Product[] {
  const input = syntheticPriceInput(t);
  if (!input) return [];
  const linux = syntheticPrice(input);
  const family = t.BareMetal ? 'Compute Instance (bare metal)' : 'Compute Instance';
  return VARIANTS.map((v) => {
    const code = sku(
      `${region}/${input.name}/${v.operatingSystem}/${v.tenancy}/${v.preInstalledSw}/${v.capacitystatus}`,
    );
    const price = v.price(linux, input.vcpus);
    const attributes: Attributes = {
      servicecode: 'AmazonEC2',
      servicename: 'Amazon Elastic Compute Cloud',
      location: LOCATIONS[region] ?? region,
      locationType: 'AWS Region',
      regionCode: region,
      instanceType: input.name,
      instanceFamily: 'General purpose',
      currentGeneration: input.currentGeneration ? 'Yes' : 'No',
      vcpu: String(input.vcpus),
      memory: `${+(input.memMiB / 1024).toFixed(3)} GiB`,
      storage: t.InstanceStorageSupported ? 'NVMe SSD' : 'EBS only',
      processorArchitecture: '64-bit',
      operatingSystem: v.operatingSystem,
      tenancy: v.tenancy,
      preInstalledSw: v.preInstalledSw,
      capacitystatus: v.capacitystatus,
      licenseModel: v.licenseModel,
      operation: v.operation,
      usagetype: `${USAGE_PREFIX[region] ?? ''}${v.usage}:${input.name}`,
      marketoption: 'OnDemand',
      availabilityzone: 'NA',
    };
    const onDemandKey = `${code}.${ON_DEMAND_TERM}`;
    const reservedKey = `${code}.${RESERVED_TERM}`;
    const doc = {
      product: { productFamily: family, attributes, sku: code },
      serviceCode: 'AmazonEC2',
      terms: {
        OnDemand: {
          [onDemandKey]: {
            priceDimensions: {
              [`${onDemandKey}.${ON_DEMAND_RATE}`]: {
                unit: 'Hrs',
                endRange: 'Inf',
                description: `$${price.toFixed(4)} per On Demand ${v.operatingSystem} ${input.name} Instance Hour`,
                appliesTo: [],
                rateCode: `${onDemandKey}.${ON_DEMAND_RATE}`,
                beginRange: '0',
                pricePerUnit: { USD: usd(price) },
              },
            },
            sku: code,
            effectiveDate: PUBLISHED,
            offerTermCode: ON_DEMAND_TERM,
            termAttributes: {},
          },
        },
        Reserved: {
          [reservedKey]: {
            priceDimensions: {
              [`${reservedKey}.${ON_DEMAND_RATE}`]: {
                unit: 'Hrs',
                endRange: 'Inf',
                description: `${v.operatingSystem} (Amazon VPC), ${input.name} reserved instance applied`,
                appliesTo: [],
                rateCode: `${reservedKey}.${ON_DEMAND_RATE}`,
                beginRange: '0',
                pricePerUnit: { USD: usd(price * 0.62) },
              },
            },
            sku: code,
            effectiveDate: PUBLISHED,
            offerTermCode: RESERVED_TERM,
            termAttributes: {
              LeaseContractLength: '1yr',
              OfferingClass: 'standard',
              PurchaseOption: 'No Upfront',
            },
          },
        },
      },
      version: '20261101000000',
      publicationDate: PUBLISHED,
    };
    return { attributes, productFamily: family, json: JSON.stringify(doc) };
  });
}

class ApiError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

interface Filter {
  Type?: string;
  Field?: string;
  Value?: string;
}

function fieldValue(p: Product, field: string): string | undefined {
  const f = field.toLowerCase();
  if (f === 'productfamily') return p.productFamily;
  const key = Object.keys(p.attributes).find((k) => k.toLowerCase() === f);
  return key === undefined ? undefined : p.attributes[key];
}

function matches(p: Product, filter: Filter): boolean {
  const type = (filter.Type ?? '').toUpperCase();
  const field = filter.Field ?? '';
  const want = (filter.Value ?? '').toLowerCase();
  const value = fieldValue(p, field)?.toLowerCase();
  const list = want.split(',').map((s) => s.trim());
  switch (type) {
    case 'TERM_MATCH':
    case 'EQUALS':
      return value === want;
    case 'CONTAINS':
      return value !== undefined && value.includes(want);
    case 'ANY_OF':
      return value !== undefined && list.includes(value);
    case 'NONE_OF':
      return value === undefined || !list.includes(value);
    default:
      throw new ApiError(
        'InvalidParameterException',
        `Input validation failed: Filter Type ${JSON.stringify(filter.Type)} is not supported`,
      );
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function describeInstanceTypes(
  opts: PricingEmulatorOptions,
  region: string,
): Promise<Ec2InstanceTypeInfo[]> {
  if (!opts.ec2Endpoint) throw new Error('the pricing emulator needs an EC2 endpoint');
  const ec2 = new EC2Client({
    region,
    endpoint: opts.ec2Endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const types: Ec2InstanceTypeInfo[] = [];
    let token: string | undefined;
    do {
      const out = await ec2.send(
        new DescribeInstanceTypesCommand({ MaxResults: 100, NextToken: token }),
      );
      types.push(...(out.InstanceTypes ?? []));
      token = out.NextToken;
    } while (token);
    return types;
  } finally {
    ec2.destroy();
  }
}

export async function startPricingEmulator(opts: PricingEmulatorOptions): Promise<PricingEmulator> {
  const catalogues = new Map<string, Promise<Product[]>>();
  let getProducts = 0;

  const catalogue = opts.catalogue ?? ((region: string) => describeInstanceTypes(opts, region));

  function productsOf(region: string): Promise<Product[]> {
    let hit = catalogues.get(region);
    if (!hit) {
      hit = catalogue(region).then((types) => types.flatMap((t) => productsFor(region, t)));
      catalogues.set(region, hit);
      hit.catch(() => catalogues.delete(region));
    }
    return hit;
  }

  async function handleGetProducts(body: Record<string, unknown>): Promise<unknown> {
    getProducts += 1;
    if (body.ServiceCode !== 'AmazonEC2') {
      return { FormatVersion: 'aws_v1', PriceList: [] };
    }
    const filters = Array.isArray(body.Filters) ? (body.Filters as Filter[]) : [];
    const regionFilter = filters.find(
      (f) => (f.Field ?? '').toLowerCase() === 'regioncode' && f.Value,
    );
    const regions = regionFilter?.Value ? [regionFilter.Value] : Object.keys(LOCATIONS);
    const all = (await Promise.all(regions.map((r) => productsOf(r)))).flat();
    const selected = all.filter((p) => filters.every((f) => matches(p, f)));
    const max = typeof body.MaxResults === 'number' ? body.MaxResults : PAGE_MAX;
    if (!Number.isInteger(max) || max < 1 || max > PAGE_MAX) {
      throw new ApiError(
        'InvalidParameterException',
        `Input validation failed: MaxResults must be between 1 and ${PAGE_MAX}`,
      );
    }
    let offset = 0;
    if (typeof body.NextToken === 'string' && body.NextToken !== '') {
      const decoded = Number(Buffer.from(body.NextToken, 'base64url').toString('utf8'));
      if (!Number.isInteger(decoded) || decoded < 0) {
        throw new ApiError('InvalidNextTokenException', 'The next token is invalid');
      }
      offset = decoded;
    }
    const page = selected.slice(offset, offset + max);
    const next = offset + max < selected.length ? offset + max : undefined;
    return {
      FormatVersion: 'aws_v1',
      PriceList: page.map((p) => p.json),
      ...(next !== undefined
        ? { NextToken: Buffer.from(String(next), 'utf8').toString('base64url') }
        : {}),
    };
  }

  function send(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/x-amz-json-1.1',
      'content-length': Buffer.byteLength(text),
      'x-amzn-requestid': sku(`${Date.now()}${Math.random()}`),
      ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
    });
    res.end(text);
  }

  const server = createServer((req, res) => {
    void (async () => {
      try {
        if (req.method === 'GET' && req.url === '/_admin/stats') {
          send(res, 200, { getProducts });
          return;
        }
        const target = String(req.headers['x-amz-target'] ?? '');
        const text = await readBody(req);
        if (req.method !== 'POST' || target !== 'AWSPriceListService.GetProducts') {
          throw new ApiError('UnknownOperationException', `unsupported operation ${target}`);
        }
        let body: unknown;
        try {
          body = text === '' ? {} : JSON.parse(text);
        } catch {
          throw new ApiError('SerializationException', 'request body is not JSON');
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          throw new ApiError('SerializationException', 'request body is not a JSON object');
        }
        send(res, 200, await handleGetProducts(body as Record<string, unknown>));
      } catch (err) {
        if (err instanceof ApiError) {
          send(res, 400, { __type: err.type, Message: err.message }, err.type);
        } else {
          const message = err instanceof Error ? err.message : String(err);
          send(
            res,
            500,
            { __type: 'InternalErrorException', Message: message },
            'InternalErrorException',
          );
        }
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${address.address}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
