import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Instance } from '@aws-sdk/client-ec2';
import {
  CreatePlacementGroupCommand,
  DeletePlacementGroupCommand,
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribePlacementGroupsCommand,
  DescribeRegionsCommand,
  EC2Client,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import type { Ec2Proxy } from '../../local/ec2-proxy';
import { startEc2Proxy } from '../../local/ec2-proxy';
import { ec2Failure, Ec2TestKit, sleep } from './ec2-test-kit';
import { loadTestStack } from './stack';

/**
 * The EC2 proxy's later admin settings (latency, pendingToRunning, the
 * launchedInstances resource bucket, unavailable, lost responses) and its
 * placement groups, through the AWS SDK. These settings are global to a proxy
 * (an unavailable proxy would fail every other test file), so this file starts
 * its own proxy in front of the stack's moto and works in a Region the rest of
 * the suite never uses.
 */

const REGION = 'eu-west-1';
const stack = loadTestStack();
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const TAG_KEY = 'ec2-proxy-extras-test';
let proxy: Ec2Proxy;
let ec2: EC2Client;
const moto = new EC2Client({
  endpoint: stack.motoEndpoint,
  region: REGION,
  credentials,
  maxAttempts: 1,
});
let imageId = '';

const kit = new Ec2TestKit({
  proxyUrl: () => proxy.url,
  ec2: () => ec2,
  moto,
  tagKey: TAG_KEY,
  imageId: () => imageId,
});
const { admin, stats, launch, motoInstances } = kit;
const failure = ec2Failure;

/** Instances through the proxy, by tag plus extra filters. */
async function described(
  tag: string,
  filters: Array<{ Name: string; Values: string[] }> = [],
): Promise<Instance[]> {
  const out = await ec2.send(
    new DescribeInstancesCommand({
      Filters: [{ Name: `tag:${TAG_KEY}`, Values: [tag] }, ...filters],
    }),
  );
  return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
}

const ids = (instances: readonly Instance[]): string[] =>
  instances.map((i) => i.InstanceId ?? '').sort();

/**
 * The parameters of every DescribeInstances moto received from this file's
 * proxy, in order: the proxy's upstream is a recording forwarder in front of
 * the stack's moto, so a test can show what the proxy asked of moto.
 */
const describesToMoto: URLSearchParams[] = [];
let recorder: Server;

/** A forwarder on loopback to `target` that records DescribeInstances' parameters (query and form). */
async function startRecorder(target: string): Promise<string> {
  const upstream = new URL(target);
  recorder = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const params = new URLSearchParams(req.url?.split('?')[1] ?? '');
      for (const [k, v] of new URLSearchParams(body.toString())) params.append(k, v);
      if (params.get('Action') === 'DescribeInstances') describesToMoto.push(params);
      const out = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', (err) => {
        res.writeHead(502);
        res.end(String(err));
      });
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
}

/** The values of the `instance-state-name` filter(s) in a call to moto, one array per filter. */
function stateFiltersOf(params: URLSearchParams): string[][] {
  const found: string[][] = [];
  for (const [key, value] of params) {
    const m = /^Filter\.(\d+)\.Name$/.exec(key);
    if (!m || value !== 'instance-state-name') continue;
    const values: string[] = [];
    for (let i = 1; params.has(`Filter.${m[1]}.Value.${i}`); i++) {
      values.push(params.get(`Filter.${m[1]}.Value.${i}`) ?? '');
    }
    found.push(values);
  }
  return found;
}

async function resetProxy(): Promise<void> {
  expect((await admin('DELETE', '/_admin/faults')).status).toBe(200);
  expect((await admin('DELETE', '/_admin/limits')).status).toBe(200);
  expect((await admin('DELETE', '/_admin/latency')).status).toBe(200);
}

beforeAll(async () => {
  proxy = await startEc2Proxy({ upstream: await startRecorder(stack.motoEndpoint), port: 0 });
  ec2 = new EC2Client({ endpoint: proxy.url, region: REGION, credentials, maxAttempts: 1 });
  const images = await moto.send(new DescribeImagesCommand({}));
  imageId = images.Images?.find((i) => i.ImageId)?.ImageId ?? '';
  expect(imageId).not.toBe('');
});

beforeEach(resetProxy);
afterEach(resetProxy);

afterAll(async () => {
  await kit.terminateLaunched();
  ec2.destroy();
  moto.destroy();
  await proxy.close();
  recorder.closeAllConnections();
  await new Promise<void>((resolve, reject) =>
    recorder.close((err) => (err ? reject(err) : resolve())),
  );
});

describe('latency', () => {
  it('shows, replaces and clears the delays, refusing unknown actions', async () => {
    expect(await admin('GET', '/_admin/latency')).toEqual({
      status: 200,
      body: { default: 0, pendingToRunning: 0 },
    });
    expect(
      await admin('PUT', '/_admin/latency', {
        runInstances: 1500,
        default: 50,
        pendingToRunning: 5000,
      }),
    ).toEqual({ status: 200, body: { runInstances: 1500, default: 50, pendingToRunning: 5000 } });
    expect(await admin('PUT', '/_admin/latency', { runInstancez: 1 })).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad-request',
          message:
            'unknown field "runInstancez" (expected "default", "pendingToRunning", "runInstancesAnswer" or lower-camel EC2 action names such as "runInstances")',
        },
      },
    });
    expect((await admin('PUT', '/_admin/latency', { default: -1 })).status).toBe(400);
    expect(await admin('DELETE', '/_admin/latency')).toEqual({
      status: 200,
      body: { default: 0, pendingToRunning: 0 },
    });
  });

  it("delays each call by its action's latency, others by the default", async () => {
    await admin('PUT', '/_admin/latency', { describeRegions: 1500, default: 400 });
    let started = performance.now();
    const regions = await ec2.send(new DescribeRegionsCommand({}));
    expect(performance.now() - started).toBeGreaterThanOrEqual(1500);
    expect(regions.Regions?.some((r) => r.RegionName === REGION)).toBe(true);
    started = performance.now();
    await ec2.send(new DescribeImagesCommand({ ImageIds: [imageId] }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(400);
  });
});

describe('pending to running', () => {
  it('reports a new instance pending, filters on that state, then running', async () => {
    await admin('PUT', '/_admin/latency', { pendingToRunning: 5000 });
    const tag = randomUUID();
    const [instance] = await launch(tag);
    const id = instance?.InstanceId ?? '';
    expect(instance?.State).toEqual({ Code: 0, Name: 'pending' });
    const stateFilter = (name: string) => [{ Name: 'instance-state-name', Values: [name] }];
    // moto itself already says running
    expect((await motoInstances(tag))[0]?.State?.Name).toBe('running');
    const first = await described(tag);
    // Bounded below only: if the machine was slow the instance may already be running.
    if (first[0]?.State?.Name === 'pending') {
      expect(first[0]?.State).toEqual({ Code: 0, Name: 'pending' });
      expect(ids(await described(tag, stateFilter('pending')))).toEqual([id]);
      expect(await described(tag, stateFilter('running'))).toEqual([]);
    }
    let state = first[0]?.State?.Name;
    const deadline = Date.now() + 60_000;
    while (state !== 'running' && Date.now() < deadline) {
      await sleep(500);
      state = (await described(tag))[0]?.State?.Name;
    }
    expect(state).toBe('running');
    expect(ids(await described(tag, stateFilter('running')))).toEqual([id]);
    expect(await described(tag, stateFilter('pending'))).toEqual([]);
    expect(ids(await described(tag, [{ Name: 'instance-state-code', Values: ['16'] }]))).toEqual([
      id,
    ]);
  });

  it('keeps an instance pending while pendingToRunning covers it, at least', async () => {
    await admin('PUT', '/_admin/latency', { pendingToRunning: 600_000 });
    const tag = randomUUID();
    const [instance] = await launch(tag);
    const id = instance?.InstanceId ?? '';
    const [seen] = await described(tag);
    expect(seen?.InstanceId).toBe(id);
    expect(seen?.State).toEqual({ Code: 0, Name: 'pending' });
    // moto says running already; the proxy asks moto for running too when pending is asked
    expect((await motoInstances(tag))[0]?.State?.Name).toBe('running');
    describesToMoto.length = 0;
    const pending = await described(tag, [{ Name: 'instance-state-name', Values: ['pending'] }]);
    expect(ids(pending)).toEqual([id]);
    expect(pending[0]?.State).toEqual({ Code: 0, Name: 'pending' });
    expect(describesToMoto.map(stateFiltersOf)).toEqual([[['pending', 'running']]]);
    // moto is asked for running and has it; the proxy's own filter still leaves it out
    describesToMoto.length = 0;
    expect(await described(tag, [{ Name: 'instance-state-name', Values: ['running'] }])).toEqual(
      [],
    );
    expect(describesToMoto.map(stateFiltersOf)).toEqual([[['running']]]);
    expect(describesToMoto[0]?.get(`Filter.1.Name`)).toBe(`tag:${TAG_KEY}`);
    await admin('DELETE', '/_admin/latency');
    expect((await described(tag))[0]?.State?.Name).toBe('running');
  });
});

describe('state filter and pages', () => {
  it('sends moto the state filter on the first page only, so a reservation terminated between pages does not fail the next', async () => {
    const tag = randomUUID();
    const launchedIds: string[] = [];
    // one reservation each: moto pages by reservation
    for (let i = 0; i < 7; i++) {
      const [one] = await launch(tag);
      launchedIds.push(one?.InstanceId ?? '');
    }
    const running = [{ Name: 'instance-state-name', Values: ['running'] }];
    const page = (NextToken?: string) =>
      ec2.send(
        new DescribeInstancesCommand({
          Filters: [{ Name: `tag:${TAG_KEY}`, Values: [tag] }, ...running],
          MaxResults: 5,
          ...(NextToken === undefined ? {} : { NextToken }),
        }),
      );
    describesToMoto.length = 0;
    const first = await page();
    const firstIds = (first.Reservations ?? []).flatMap((r) =>
      (r.Instances ?? []).map((i) => i.InstanceId ?? ''),
    );
    expect(firstIds).toHaveLength(5);
    expect(first.NextToken).toBeDefined();
    // the page's last reservation goes (all its instances) before the next page is asked,
    // and one not yet listed too
    const gone = [firstIds[4]!, launchedIds.find((id) => !firstIds.includes(id))!];
    await moto.send(new TerminateInstancesCommand({ InstanceIds: gone }));
    const second = await page(first.NextToken);
    const secondInstances = (second.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    const left = launchedIds.filter((id) => !firstIds.includes(id) && !gone.includes(id));
    expect(ids(secondInstances)).toEqual([...left].sort());
    expect(secondInstances.map((i) => i.State?.Name)).toEqual(['running']);
    expect(second.NextToken).toBeUndefined();
    expect(describesToMoto.map((p) => [p.has('NextToken'), stateFiltersOf(p)])).toEqual([
      [false, [['running']]],
      [true, []],
    ]);
  });
});

describe('launchedInstances resource bucket', () => {
  it('launches as many as there are tokens, then refuses a MinCount above what is left', async () => {
    expect(
      await admin('PUT', '/_admin/limits', { launchedInstances: { burst: 4, refillPerSecond: 0 } }),
    ).toEqual({ status: 200, body: { launchedInstances: { burst: 4, refillPerSecond: 0 } } });
    const tag = randomUUID();
    const before = await stats();
    const three = await launch(tag, { MinCount: 1, MaxCount: 3 });
    expect(three.map((i) => i.AmiLaunchIndex)).toEqual([0, 1, 2]);
    const refused = await failure(launch(tag, { MinCount: 2, MaxCount: 5 }));
    expect(refused).toEqual({
      code: 'RequestLimitExceeded',
      status: 503,
      message: 'Request limit exceeded.',
    });
    const partial = await launch(tag, { MinCount: 1, MaxCount: 5 });
    expect(partial).toHaveLength(1);
    expect((await failure(launch(tag))).code).toBe('RequestLimitExceeded');
    expect(await motoInstances(tag)).toHaveLength(4);
    expect((await stats()).throttled - before.throttled).toBe(2);
  });

  it('replays a MaxCount launch by its ClientToken with the same instances, taking no tokens', async () => {
    await admin('PUT', '/_admin/limits', { launchedInstances: { burst: 3, refillPerSecond: 0 } });
    const tag = randomUUID();
    const input = { MinCount: 3, MaxCount: 3, ClientToken: randomUUID() };
    const first = await launch(tag, input);
    expect(first.map((i) => i.AmiLaunchIndex)).toEqual([0, 1, 2]);
    const again = await launch(tag, input);
    expect(ids(again)).toEqual(ids(first));
    expect(again.map((i) => i.AmiLaunchIndex)).toEqual([0, 1, 2]);
    expect(await motoInstances(tag)).toHaveLength(3);
    // the bucket is empty: the replay was answered without it
    expect((await failure(launch(tag, { ClientToken: randomUUID() }))).code).toBe(
      'RequestLimitExceeded',
    );
  });
});

describe('unavailable and lost responses', () => {
  it('answers every call 503 Unavailable until cleared', async () => {
    const before = await stats();
    expect((await admin('PUT', '/_admin/faults', { unavailable: true })).body).toEqual({
      zones: {},
      zoneStates: {},
      unavailable: true,
      loseResponses: {},
    });
    expect(await failure(ec2.send(new DescribeRegionsCommand({})))).toEqual({
      code: 'Unavailable',
      status: 503,
      message: 'The server is overloaded or is not accepting requests at this time.',
    });
    const tag = randomUUID();
    expect((await failure(launch(tag))).code).toBe('Unavailable');
    expect(await motoInstances(tag)).toEqual([]);
    expect((await stats()).injected.Unavailable ?? 0).toBe((before.injected.Unavailable ?? 0) + 2);
    await admin('DELETE', '/_admin/faults');
    expect((await ec2.send(new DescribeRegionsCommand({}))).Regions?.length).toBeGreaterThan(0);
  });

  it('carries out a launch whose answer is lost; a retry with its token answers that instance', async () => {
    const before = await stats();
    expect(
      (await admin('PUT', '/_admin/faults', { loseResponses: { runInstances: 1 } })).body,
    ).toEqual({
      zones: {},
      zoneStates: {},
      unavailable: false,
      loseResponses: { runInstances: 1 },
    });
    const tag = randomUUID();
    const input = { ClientToken: randomUUID(), MinCount: 2, MaxCount: 2 };
    await expect(launch(tag, input)).rejects.toThrow(/socket hang up|ECONNRESET|closed/i);
    const atMoto = await motoInstances(tag);
    expect(atMoto).toHaveLength(2);
    expect((await admin('GET', '/_admin/faults')).body).toEqual({
      zones: {},
      zoneStates: {},
      unavailable: false,
      loseResponses: {},
    });
    const retried = await launch(tag, input);
    expect(ids(retried)).toEqual(ids(atMoto));
    expect(await motoInstances(tag)).toHaveLength(2);
    expect((await stats()).injected.LostResponse ?? 0).toBe(
      (before.injected.LostResponse ?? 0) + 1,
    );
  });

  it('leaves unlisted instances out of listings, and answers InvalidInstanceID.NotFound by id, until cleared', async () => {
    const before = await stats();
    const tag = randomUUID();
    const [hidden, shown] = ids(await launch(tag, { MinCount: 2, MaxCount: 2 }));
    expect((await admin('PUT', '/_admin/faults', { unlisted: [hidden] })).body).toEqual({
      zones: {},
      zoneStates: {},
      unavailable: false,
      loseResponses: {},
      unlisted: [hidden],
    });
    // by tag, by an instance-id filter: only the other one
    expect(ids(await described(tag))).toEqual([shown]);
    const byFilter = await ec2.send(
      new DescribeInstancesCommand({ Filters: [{ Name: 'instance-id', Values: [hidden!] }] }),
    );
    expect(byFilter.Reservations ?? []).toEqual([]);
    // by id: EC2's answer for an id it does not list
    expect(
      await failure(ec2.send(new DescribeInstancesCommand({ InstanceIds: [hidden!] }))),
    ).toEqual({
      code: 'InvalidInstanceID.NotFound',
      status: 400,
      message: `The instance ID '${hidden!}' does not exist`,
    });
    expect(
      (await failure(ec2.send(new DescribeInstancesCommand({ InstanceIds: [shown!, hidden!] }))))
        .code,
    ).toBe('InvalidInstanceID.NotFound');
    const byId = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [shown!] }));
    expect(ids((byId.Reservations ?? []).flatMap((r) => r.Instances ?? []))).toEqual([shown]);
    // moto still has it, running
    expect(ids(await motoInstances(tag))).toEqual([hidden, shown].sort());
    expect((await stats()).injected['InvalidInstanceID.NotFound'] ?? 0).toBe(
      (before.injected['InvalidInstanceID.NotFound'] ?? 0) + 2,
    );
    await admin('DELETE', '/_admin/faults');
    expect(ids(await described(tag))).toEqual([hidden, shown].sort());
  });

  it('refuses a malformed fault set', async () => {
    expect(await admin('PUT', '/_admin/faults', { loseResponses: { runInstances: -1 } })).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad-request',
          message: '"loseResponses.runInstances" must be an integer of at least 0',
        },
      },
    });
    expect((await admin('PUT', '/_admin/faults', { unavailable: 'yes' })).body).toEqual({
      error: { code: 'bad-request', message: '"unavailable" must be true or false' },
    });
    expect((await admin('PUT', '/_admin/faults', { unlisted: ['i-nope'] })).body).toEqual({
      error: {
        code: 'bad-request',
        message: '"unlisted": "i-nope" is not an instance id (i- and 8 or 17 hex digits)',
      },
    });
  });
});

describe('placement groups', () => {
  it('creates, describes, launches into, refuses and deletes groups', async () => {
    const suffix = randomUUID().slice(0, 8);
    const cluster = `cluster-${suffix}`;
    const parts = `parts-${suffix}`;
    const created = await ec2.send(
      new CreatePlacementGroupCommand({ GroupName: cluster, Strategy: 'cluster' }),
    );
    expect(created.PlacementGroup).toMatchObject({
      GroupName: cluster,
      Strategy: 'cluster',
      State: 'available',
    });
    expect(created.PlacementGroup?.GroupId).toMatch(/^pg-[0-9a-f]{17}$/);
    await ec2.send(
      new CreatePlacementGroupCommand({
        GroupName: parts,
        Strategy: 'partition',
        PartitionCount: 3,
      }),
    );
    expect(
      await failure(
        ec2.send(new CreatePlacementGroupCommand({ GroupName: cluster, Strategy: 'spread' })),
      ),
    ).toEqual({
      code: 'InvalidPlacementGroup.Duplicate',
      status: 400,
      message: `The Placement Group '${cluster}' already exists.`,
    });
    expect(
      (
        await failure(
          ec2.send(
            new CreatePlacementGroupCommand({
              GroupName: `x-${suffix}`,
              Strategy: 'partition',
              PartitionCount: 8,
            }),
          ),
        )
      ).code,
    ).toBe('InvalidParameterValue');

    const byName = await ec2.send(
      new DescribePlacementGroupsCommand({ GroupNames: [parts, cluster] }),
    );
    expect(byName.PlacementGroups?.map((g) => [g.GroupName, g.Strategy, g.PartitionCount])).toEqual(
      [
        [cluster, 'cluster', undefined],
        [parts, 'partition', 3],
      ],
    );
    const byFilter = await ec2.send(
      new DescribePlacementGroupsCommand({
        Filters: [
          { Name: 'strategy', Values: ['partition'] },
          { Name: 'group-name', Values: [`*-${suffix}`] },
        ],
      }),
    );
    expect(byFilter.PlacementGroups?.map((g) => g.GroupName)).toEqual([parts]);
    const byId = await ec2.send(
      new DescribePlacementGroupsCommand({ GroupIds: [created.PlacementGroup?.GroupId ?? ''] }),
    );
    expect(byId.PlacementGroups?.map((g) => g.GroupName)).toEqual([cluster]);
    expect(
      (
        await failure(
          ec2.send(new DescribePlacementGroupsCommand({ GroupNames: [`none-${suffix}`] })),
        )
      ).code,
    ).toBe('InvalidPlacementGroup.Unknown');

    const tag = randomUUID();
    const spread = await launch(tag, { MinCount: 3, MaxCount: 3, Placement: { GroupName: parts } });
    expect(spread.map((i) => [i.Placement?.GroupName, i.Placement?.PartitionNumber])).toEqual([
      [parts, 1],
      [parts, 2],
      [parts, 3],
    ]);
    const [second] = await launch(tag, { Placement: { GroupName: parts, PartitionNumber: 2 } });
    expect(second?.Placement).toMatchObject({ GroupName: parts, PartitionNumber: 2 });
    const [clustered] = await launch(tag, { Placement: { GroupName: cluster } });
    expect(clustered?.Placement?.GroupName).toBe(cluster);
    expect(clustered?.Placement?.PartitionNumber).toBeUndefined();

    expect(
      await failure(launch(tag, { Placement: { GroupName: parts, PartitionNumber: 4 } })),
    ).toEqual({
      code: 'InvalidParameterValue',
      status: 400,
      message: `Value (4) for parameter partitionNumber is invalid. Partition number must be between 1 and 3 for placement group '${parts}'.`,
    });
    expect(await failure(launch(tag, { Placement: { GroupName: `none-${suffix}` } }))).toEqual({
      code: 'InvalidPlacementGroup.Unknown',
      status: 400,
      message: `The Placement Group 'none-${suffix}' is unknown.`,
    });
    expect(await motoInstances(tag)).toHaveLength(5);

    const inParts = await described(tag, [{ Name: 'placement-group-name', Values: [parts] }]);
    expect(
      inParts.map((i) => `${i.Placement?.GroupName}:${i.Placement?.PartitionNumber}`).sort(),
    ).toEqual([`${parts}:1`, `${parts}:2`, `${parts}:2`, `${parts}:3`]);
    expect(
      ids(await described(tag, [{ Name: 'placement-partition-number', Values: ['2'] }])),
    ).toEqual(ids([spread[1] ?? {}, second ?? {}]));

    expect(await failure(ec2.send(new DeletePlacementGroupCommand({ GroupName: parts })))).toEqual({
      code: 'InvalidPlacementGroup.InUse',
      status: 400,
      message: `The placement group '${parts}' is in use and may not be deleted.`,
    });
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: ids(inParts) }));
    await ec2.send(new DeletePlacementGroupCommand({ GroupName: parts }));
    expect(
      (await failure(ec2.send(new DeletePlacementGroupCommand({ GroupName: parts })))).code,
    ).toBe('InvalidPlacementGroup.Unknown');
    const left = await ec2.send(
      new DescribePlacementGroupsCommand({
        Filters: [{ Name: 'group-name', Values: [`*-${suffix}`] }],
      }),
    );
    expect(left.PlacementGroups?.map((g) => g.GroupName)).toEqual([cluster]);
  });
});
