import { randomUUID } from 'node:crypto';
import {
  DescribeAvailabilityZonesCommand,
  DescribeImagesCommand,
  DescribeInstanceTypesCommand,
  DescribeRegionsCommand,
  DescribeSubnetsCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { ec2Failure, Ec2TestKit, sleep } from './ec2-test-kit';
import { loadTestStack } from './stack';

/**
 * The EC2 proxy in front of moto, through the AWS SDK as the product uses it.
 * The proxy is shared by every integration test file, and its faults and
 * limits are global. So these tests work in a Region the rest of the suite
 * never uses (faults are keyed by zone name and limits kept per Region, so
 * nothing set here reaches the stack's own Region), clear faults and limits
 * around each test, and assert stats as deltas.
 */

const REGION = 'us-west-2';
const stack = loadTestStack();
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const ec2 = new EC2Client({
  endpoint: stack.ec2Endpoint,
  region: REGION,
  credentials,
  maxAttempts: 1,
});
const moto = new EC2Client({
  endpoint: stack.motoEndpoint,
  region: REGION,
  credentials,
  maxAttempts: 1,
});
/** The stack's own Region, through the proxy; used only to show that limits are per Region. */
const ec2Home = new EC2Client({
  endpoint: stack.ec2Endpoint,
  region: stack.region,
  credentials,
  maxAttempts: 1,
});
const motoHome = new EC2Client({
  endpoint: stack.motoEndpoint,
  region: stack.region,
  credentials,
  maxAttempts: 1,
});

const TAG_KEY = 'ec2-proxy-test';
let imageId = '';
let allZones: string[] = [];

const kit = new Ec2TestKit({
  proxyUrl: () => stack.ec2Endpoint,
  ec2: () => ec2,
  moto,
  tagKey: TAG_KEY,
  imageId: () => imageId,
});
const { admin, stats, launchInput, launch, motoInstances } = kit;
const failure = ec2Failure;

/** A raw EC2 Query request (the SDK always adds a ClientToken to RunInstances; this does not). */
async function rawEc2(
  endpoint: string,
  params: Record<string, string>,
): Promise<{ status: number; contentType: string | null; body: string }> {
  const res = await fetch(`${endpoint}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${REGION}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: new URLSearchParams({ Version: '2016-11-15', ...params }).toString(),
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    body: await res.text(),
  };
}

async function zoneStates(filters?: Array<{ Name: string; Values: string[] }>): Promise<string[]> {
  const out = await ec2.send(
    new DescribeAvailabilityZonesCommand(filters ? { Filters: filters } : {}),
  );
  return (out.AvailabilityZones ?? []).map((z) => `${z.ZoneName}:${z.State}`);
}

async function defaultSubnet(zone: string): Promise<string> {
  const out = await moto.send(
    new DescribeSubnetsCommand({
      Filters: [
        { Name: 'availability-zone', Values: [zone] },
        { Name: 'default-for-az', Values: ['true'] },
      ],
    }),
  );
  const id = out.Subnets?.[0]?.SubnetId;
  if (!id) throw new Error(`moto has no default subnet in ${zone}`);
  return id;
}

async function resetProxy(): Promise<void> {
  expect((await admin('DELETE', '/_admin/faults')).status).toBe(200);
  expect((await admin('DELETE', '/_admin/limits')).status).toBe(200);
}

/** An image id: moto does not check it on RunInstances, but one it serves keeps the launch honest. */
async function anyImageId(): Promise<string> {
  for (const client of [moto, motoHome]) {
    const images = await client.send(new DescribeImagesCommand({}));
    const id = images.Images?.find((i) => i.ImageId)?.ImageId;
    if (id) return id;
  }
  throw new Error('moto serves no image');
}

beforeAll(async () => {
  imageId = await anyImageId();
  const zones = await moto.send(new DescribeAvailabilityZonesCommand({}));
  allZones = (zones.AvailabilityZones ?? [])
    .flatMap((z) => (z.ZoneName ? [z.ZoneName] : []))
    .sort();
  expect(allZones).toEqual(['us-west-2a', 'us-west-2b', 'us-west-2c', 'us-west-2d']);
});

beforeEach(resetProxy);
afterEach(resetProxy);

afterAll(async () => {
  await kit.terminateLaunched();
  ec2.destroy();
  moto.destroy();
  motoHome.destroy();
  ec2Home.destroy();
});

describe('admin API', () => {
  it('answers health', async () => {
    expect(await admin('GET', '/_admin/health')).toEqual({ status: 200, body: { ok: true } });
  });

  it('replaces the whole fault set on PUT and shows it on GET', async () => {
    const first = {
      zones: { 'us-west-2d': 'InsufficientInstanceCapacity' },
      zoneStates: { 'us-west-2c': 'impaired' },
    };
    expect(await admin('PUT', '/_admin/faults', first)).toEqual({
      status: 200,
      body: { ...first, unavailable: false, loseResponses: {} },
    });
    expect(
      await admin('PUT', '/_admin/faults', { zoneStates: { 'us-west-2d': 'constrained' } }),
    ).toEqual({
      status: 200,
      body: {
        zones: {},
        zoneStates: { 'us-west-2d': 'constrained' },
        unavailable: false,
        loseResponses: {},
      },
    });
    expect(await admin('GET', '/_admin/faults')).toEqual({
      status: 200,
      body: {
        zones: {},
        zoneStates: { 'us-west-2d': 'constrained' },
        unavailable: false,
        loseResponses: {},
      },
    });
    expect(await admin('DELETE', '/_admin/faults')).toEqual({
      status: 200,
      body: { zones: {}, zoneStates: {}, unavailable: false, loseResponses: {} },
    });
  });

  it.each<[string, string, unknown, string]>([
    ['malformed JSON', '/_admin/faults', '{"zones":', 'malformed JSON'],
    ['an unknown field', '/_admin/faults', { zones: {}, states: {} }, 'unknown field "states"'],
    [
      'a non-string code',
      '/_admin/faults',
      { zones: { 'us-west-2d': 500 } },
      '"zones.us-west-2d" must be a string',
    ],
    [
      'an unknown zone state',
      '/_admin/faults',
      { zoneStates: { 'us-west-2c': 'degraded' } },
      'unknown zone state "degraded"',
    ],
    [
      'an unknown action',
      '/_admin/limits',
      { runInstance: { burst: 1, refillPerSecond: 1 } },
      'unknown field "runInstance"',
    ],
    [
      'a bad bucket',
      '/_admin/limits',
      { runInstances: { burst: 0, refillPerSecond: 1 } },
      '"runInstances.burst" must be an integer of at least 1',
    ],
  ])(
    'refuses %s with 400 bad-request and keeps the previous settings',
    async (_label, path, body, message) => {
      const reply = await admin('PUT', path, body);
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({
        error: { code: 'bad-request', message: expect.stringContaining(message) as string },
      });
      expect((await admin('GET', '/_admin/faults')).body).toEqual({
        zones: {},
        zoneStates: {},
        unavailable: false,
        loseResponses: {},
      });
      expect((await admin('GET', '/_admin/limits')).body).toEqual({});
    },
  );

  it('answers an unknown admin path itself with 404, never forwarding it', async () => {
    expect(await admin('GET', '/_admin/nothing-here')).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'no admin resource at /_admin/nothing-here' } },
    });
  });
});

describe('pass-through', () => {
  it('answers DescribeInstanceTypes and DescribeImages as moto does', async () => {
    const input = { InstanceTypes: ['t3.small' as const, 'm5.large' as const] };
    const [viaProxy, direct] = await Promise.all([
      ec2.send(new DescribeInstanceTypesCommand(input)),
      moto.send(new DescribeInstanceTypesCommand(input)),
    ]);
    expect(viaProxy.InstanceTypes).toEqual(direct.InstanceTypes);
    expect(viaProxy.InstanceTypes?.map((t) => t.InstanceType).sort()).toEqual([
      'm5.large',
      't3.small',
    ]);

    const [imagesViaProxy, imagesDirect] = await Promise.all([
      ec2.send(new DescribeImagesCommand({})),
      moto.send(new DescribeImagesCommand({})),
    ]);
    expect(imagesViaProxy.Images?.map((i) => i.ImageId).sort()).toEqual(
      imagesDirect.Images?.map((i) => i.ImageId).sort(),
    );
  });

  it("forwards bodies and moto's errors byte for byte", async () => {
    const [viaProxy, direct] = await Promise.all([
      rawEc2(stack.ec2Endpoint, { Action: 'DescribeRegions' }),
      rawEc2(stack.motoEndpoint, { Action: 'DescribeRegions' }),
    ]);
    expect(viaProxy).toEqual(direct);
    expect(viaProxy.status).toBe(200);

    const missing = { Action: 'DescribeInstances', 'InstanceId.1': 'i-00000000000000000' };
    const [errViaProxy, errDirect] = await Promise.all([
      rawEc2(stack.ec2Endpoint, missing),
      rawEc2(stack.motoEndpoint, missing),
    ]);
    expect(errViaProxy).toEqual(errDirect);
    expect(errViaProxy.status).toBe(400);
    expect(errViaProxy.body).toContain('<Code>InvalidInstanceID.NotFound</Code>');
  });

  it('forwards GET query-string requests too', async () => {
    const query = '?Action=DescribeRegions&Version=2016-11-15';
    const headers = {
      authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${REGION}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
    };
    const [viaProxy, direct] = await Promise.all([
      fetch(`${stack.ec2Endpoint}/${query}`, { headers }).then((r) => r.text()),
      fetch(`${stack.motoEndpoint}/${query}`, { headers }).then((r) => r.text()),
    ]);
    expect(viaProxy).toBe(direct);
    expect(viaProxy).toContain('<regionName>us-east-1</regionName>');
  });
});

describe('zone faults', () => {
  it('fails RunInstances in a faulted zone with the EC2 code, status and wording, launching nothing', async () => {
    const tag = randomUUID();
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-west-2d': 'InsufficientInstanceCapacity' },
    });
    const before = await stats();

    const err = await failure(launch(tag, { Placement: { AvailabilityZone: 'us-west-2d' } }));

    const others = allZones.filter((z) => z !== 'us-west-2d').join(', ');
    expect(err).toEqual({
      code: 'InsufficientInstanceCapacity',
      status: 500,
      message:
        'We currently do not have sufficient t3.small capacity in the Availability Zone you requested (us-west-2d). ' +
        'Our system will be working on provisioning additional capacity. ' +
        `You can currently get t3.small capacity by not specifying an Availability Zone in your request or choosing ${others}.`,
    });
    expect(await motoInstances(tag)).toEqual([]);
    const after = await stats();
    expect(
      (after.injected.InsufficientInstanceCapacity ?? 0) -
        (before.injected.InsufficientInstanceCapacity ?? 0),
    ).toBe(1);
  });

  it("answers with EC2's XML error document", async () => {
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-west-2d': 'InsufficientInstanceCapacity' },
    });
    const reply = await rawEc2(stack.ec2Endpoint, {
      Action: 'RunInstances',
      ImageId: imageId,
      MinCount: '1',
      MaxCount: '1',
      InstanceType: 'm5.large',
      'Placement.AvailabilityZone': 'us-west-2d',
    });
    expect(reply.status).toBe(500);
    expect(reply.contentType).toMatch(/^text\/xml/);
    expect(reply.body).toMatch(
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\s*<Response><Errors><Error><Code>InsufficientInstanceCapacity<\/Code><Message>We currently do not have sufficient m5\.large capacity in the Availability Zone you requested \(us-west-2d\)\.[^<]*<\/Message><\/Error><\/Errors><RequestID>[0-9a-f-]{36}<\/RequestID><\/Response>$/,
    );
  });

  it('still launches in another zone, and in the faulted one once cleared', async () => {
    const tag = randomUUID();
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-west-2d': 'InsufficientInstanceCapacity' },
    });
    const [inE] = await launch(tag, { Placement: { AvailabilityZone: 'us-west-2c' } });
    expect(inE?.Placement?.AvailabilityZone).toBe('us-west-2c');

    expect(await admin('DELETE', '/_admin/faults')).toEqual({
      status: 200,
      body: { zones: {}, zoneStates: {}, unavailable: false, loseResponses: {} },
    });
    const [inF] = await launch(tag, { Placement: { AvailabilityZone: 'us-west-2d' } });
    expect(inF?.Placement?.AvailabilityZone).toBe('us-west-2d');
    expect((await motoInstances(tag)).map((i) => i.Placement?.AvailabilityZone).sort()).toEqual([
      'us-west-2c',
      'us-west-2d',
    ]);
  });

  it("targets a subnet's zone: Unsupported answers 400 with EC2's wording", async () => {
    const tag = randomUUID();
    const subnetId = await defaultSubnet('us-west-2c');
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-west-2c': 'Unsupported', 'us-west-2d': 'InsufficientInstanceCapacity' },
    });
    const err = await failure(launch(tag, { SubnetId: subnetId, InstanceType: 'c5.xlarge' }));
    const others = allZones.filter((z) => z !== 'us-west-2c' && z !== 'us-west-2d').join(', ');
    expect(err).toEqual({
      code: 'Unsupported',
      status: 400,
      message:
        'Your requested instance type (c5.xlarge) is not supported in your requested Availability Zone (us-west-2c). ' +
        `Please retry your request by not specifying an Availability Zone or choosing ${others}.`,
    });
    expect(await motoInstances(tag)).toEqual([]);
  });

  it("targets moto's own choice, the region's first zone, when no zone or subnet is given", async () => {
    const tag = randomUUID();
    const subnetId = await defaultSubnet('us-west-2a');
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-west-2a': 'InsufficientFreeAddressesInSubnet' },
    });
    const err = await failure(launch(tag));
    await admin('DELETE', '/_admin/faults');
    expect(err).toEqual({
      code: 'InsufficientFreeAddressesInSubnet',
      status: 400,
      message: `There are not enough free addresses in subnet '${subnetId}' to satisfy the requested number of instances.`,
    });
    expect(await motoInstances(tag)).toEqual([]);

    const [instance] = await launch(tag);
    expect(instance?.Placement?.AvailabilityZone).toBe('us-west-2a');
    expect(instance?.SubnetId).toBe(subnetId);
  });
});

describe('zone states', () => {
  it('reports faulted zone states and honours state filters on them', async () => {
    const healthy = allZones.filter((z) => z !== 'us-west-2c').map((z) => `${z}:available`);
    await admin('PUT', '/_admin/faults', { zoneStates: { 'us-west-2c': 'impaired' } });

    expect((await zoneStates()).sort()).toEqual([...healthy, 'us-west-2c:impaired'].sort());
    expect((await zoneStates([{ Name: 'state', Values: ['available'] }])).sort()).toEqual(healthy);
    expect(await zoneStates([{ Name: 'state', Values: ['impaired'] }])).toEqual([
      'us-west-2c:impaired',
    ]);
    expect(await zoneStates([{ Name: 'zone-state', Values: ['impaired'] }])).toEqual([
      'us-west-2c:impaired',
    ]);
    expect(
      await zoneStates([
        { Name: 'zone-name', Values: ['us-west-2b', 'us-west-2c'] },
        { Name: 'state', Values: ['available'] },
      ]),
    ).toEqual(['us-west-2b:available']);

    await admin('DELETE', '/_admin/faults');
    expect(await zoneStates([{ Name: 'state', Values: ['impaired'] }])).toEqual([]);
    expect(await zoneStates([{ Name: 'state', Values: ['available'] }])).toContain(
      'us-west-2c:available',
    );
  });
});

describe('RunInstances idempotency', () => {
  it('answers the same token and parameters with the same reservation, launching once', async () => {
    const tag = randomUUID();
    const input = launchInput(tag, {
      ClientToken: tag,
      Placement: { AvailabilityZone: 'us-west-2b' },
    });
    const before = await stats();
    const first = await ec2.send(new RunInstancesCommand(input));
    const second = await ec2.send(new RunInstancesCommand(input));

    expect(second.ReservationId).toBe(first.ReservationId);
    expect(second.Instances?.map((i) => i.InstanceId)).toEqual(
      first.Instances?.map((i) => i.InstanceId),
    );
    const atMoto = await motoInstances(tag);
    expect(atMoto.map((i) => i.InstanceId)).toEqual(first.Instances?.map((i) => i.InstanceId));
    expect(atMoto[0]?.ClientToken).toBe(tag);
    // A retry shows the instance as it is now, as EC2 does.
    expect(second.Instances?.[0]?.State?.Name).toBe(atMoto[0]?.State?.Name);
    const after = await stats();
    expect(
      (after.calls.RunInstances ?? 0) - (before.calls.RunInstances ?? 0),
    ).toBeGreaterThanOrEqual(2);
  });

  it('makes one launch for concurrent duplicates', async () => {
    const tag = randomUUID();
    const input = launchInput(tag, { ClientToken: tag });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => ec2.send(new RunInstancesCommand(input))),
    );
    const ids = new Set(answers.flatMap((a) => a.Instances?.map((i) => i.InstanceId) ?? []));
    expect(ids.size).toBe(1);
    expect((await motoInstances(tag)).map((i) => i.InstanceId)).toEqual([...ids]);
  });

  it('refuses the same token with other parameters: IdempotentParameterMismatch', async () => {
    const tag = randomUUID();
    await launch(tag, { ClientToken: tag });
    const err = await failure(launch(tag, { ClientToken: tag, InstanceType: 't3.large' }));
    expect(err).toEqual({
      code: 'IdempotentParameterMismatch',
      status: 400,
      message:
        'Arguments on this idempotent request are inconsistent with arguments used in previous request(s).',
    });
    expect(await motoInstances(tag)).toHaveLength(1);
  });

  it('is zonal when a zone is named: the same token launches once per zone', async () => {
    const tag = randomUUID();
    const [inD] = await launch(tag, {
      ClientToken: tag,
      Placement: { AvailabilityZone: 'us-west-2b' },
    });
    const [inE] = await launch(tag, {
      ClientToken: tag,
      Placement: { AvailabilityZone: 'us-west-2c' },
    });
    const [inDAgain] = await launch(tag, {
      ClientToken: tag,
      Placement: { AvailabilityZone: 'us-west-2b' },
    });
    expect(inE?.InstanceId).not.toBe(inD?.InstanceId);
    expect(inDAgain?.InstanceId).toBe(inD?.InstanceId);
    expect(await motoInstances(tag)).toHaveLength(2);
  });

  it('launches every time without a ClientToken', async () => {
    const tag = randomUUID();
    const params = {
      Action: 'RunInstances',
      ImageId: imageId,
      MinCount: '1',
      MaxCount: '1',
      'TagSpecification.1.ResourceType': 'instance',
      'TagSpecification.1.Tag.1.Key': TAG_KEY,
      'TagSpecification.1.Tag.1.Value': tag,
    };
    expect((await rawEc2(stack.ec2Endpoint, params)).status).toBe(200);
    expect((await rawEc2(stack.ec2Endpoint, params)).status).toBe(200);
    expect(await motoInstances(tag)).toHaveLength(2);
  });

  it('does not hold the token of a faulted launch', async () => {
    const tag = randomUUID();
    const input = launchInput(tag, {
      ClientToken: tag,
      Placement: { AvailabilityZone: 'us-west-2d' },
    });
    await admin('PUT', '/_admin/faults', {
      zones: { 'us-west-2d': 'InsufficientInstanceCapacity' },
    });
    expect((await failure(ec2.send(new RunInstancesCommand(input)))).code).toBe(
      'InsufficientInstanceCapacity',
    );
    await admin('DELETE', '/_admin/faults');

    const first = await ec2.send(new RunInstancesCommand(input));
    const again = await ec2.send(new RunInstancesCommand(input));
    expect(again.Instances?.[0]?.InstanceId).toBe(first.Instances?.[0]?.InstanceId);
    expect(await motoInstances(tag)).toHaveLength(1);
  });

  it('refuses a token whose instance was terminated: IdempotentInstanceTerminated', async () => {
    const tag = randomUUID();
    const [instance] = await launch(tag, { ClientToken: tag });
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instance!.InstanceId!] }));
    const err = await failure(launch(tag, { ClientToken: tag }));
    expect(err).toEqual({
      code: 'IdempotentInstanceTerminated',
      status: 400,
      message:
        'The client token you have provided is associated with a terminated instance. Please use a different client token.',
    });
    expect(await motoInstances(tag)).toHaveLength(1);
  });
});

describe('request limits', () => {
  it('answers RequestLimitExceeded (503) past the burst, and again after a refill', async () => {
    // One token every 4 s: the four calls below finish well inside that even on a busy machine
    // (at 2 a second, a slow CI run refilled a token before the fourth call and it passed).
    const limits = { describeRegions: { burst: 3, refillPerSecond: 0.25 } };
    expect(await admin('PUT', '/_admin/limits', limits)).toEqual({ status: 200, body: limits });
    expect((await admin('GET', '/_admin/limits')).body).toEqual(limits);
    const before = await stats();

    for (let i = 0; i < 3; i += 1) await ec2.send(new DescribeRegionsCommand({}));
    expect(await failure(ec2.send(new DescribeRegionsCommand({})))).toEqual({
      code: 'RequestLimitExceeded',
      status: 503,
      message: 'Request limit exceeded.',
    });
    await sleep(4_500);
    await expect(ec2.send(new DescribeRegionsCommand({}))).resolves.toBeDefined();

    const after = await stats();
    expect(after.throttled - before.throttled).toBe(1);
    expect((after.calls.DescribeRegions ?? 0) - (before.calls.DescribeRegions ?? 0)).toBe(5);
  });

  it('keeps separate buckets per Region', async () => {
    await admin('PUT', '/_admin/limits', { describeRegions: { burst: 1, refillPerSecond: 0 } });
    await ec2.send(new DescribeRegionsCommand({}));
    expect((await failure(ec2.send(new DescribeRegionsCommand({})))).code).toBe(
      'RequestLimitExceeded',
    );
    await expect(ec2Home.send(new DescribeRegionsCommand({}))).resolves.toBeDefined();
  });

  it('limits nothing once cleared', async () => {
    await admin('PUT', '/_admin/limits', { describeRegions: { burst: 1, refillPerSecond: 0 } });
    await ec2.send(new DescribeRegionsCommand({}));
    expect((await failure(ec2.send(new DescribeRegionsCommand({})))).code).toBe(
      'RequestLimitExceeded',
    );
    expect(await admin('DELETE', '/_admin/limits')).toEqual({ status: 200, body: {} });
    for (let i = 0; i < 10; i += 1) await ec2.send(new DescribeRegionsCommand({}));
  });
});

describe('stats', () => {
  it('counts calls per action, injected faults per code and throttled calls', async () => {
    const before = await stats();
    await ec2.send(new DescribeRegionsCommand({}));
    await ec2.send(new DescribeRegionsCommand({}));
    await admin('PUT', '/_admin/faults', { zones: { 'us-west-2d': 'InsufficientHostCapacity' } });
    const err = await failure(
      launch(randomUUID(), { Placement: { AvailabilityZone: 'us-west-2d' } }),
    );
    expect([err.code, err.status, err.message]).toEqual([
      'InsufficientHostCapacity',
      500,
      'Insufficient capacity.',
    ]);
    await admin('PUT', '/_admin/limits', { describeRegions: { burst: 1, refillPerSecond: 0 } });
    await ec2.send(new DescribeRegionsCommand({}));
    await failure(ec2.send(new DescribeRegionsCommand({})));
    await admin('GET', '/_admin/health');
    const after = await stats();

    const delta = (a: Record<string, number>, b: Record<string, number>, key: string): number =>
      (a[key] ?? 0) - (b[key] ?? 0);
    expect(delta(after.calls, before.calls, 'DescribeRegions')).toBe(4);
    expect(delta(after.calls, before.calls, 'RunInstances')).toBeGreaterThanOrEqual(1);
    expect(delta(after.injected, before.injected, 'InsufficientHostCapacity')).toBe(1);
    expect(after.throttled - before.throttled).toBe(1);
    expect(Object.keys(after.calls).every((action) => /^[A-Z][A-Za-z0-9]+$/.test(action))).toBe(
      true,
    );
  });
});
