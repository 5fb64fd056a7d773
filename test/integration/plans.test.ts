import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { Client, Connection } from '@temporalio/client';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Plans (issue 28, API.md "Plans (dry run)"): `"dryRun": true` on deploy,
 * add-unit and add-machine answers what the real request would launch, the
 * real request made right after launches exactly that, a dry run writes
 * nothing, and a bad request is refused the same way with and without it.
 */

const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
/** A busy 2-core machine launches slowly; bounds are generous, never sleeps. */
const SLOW = 600_000;

let connection: Connection;
let temporal: Client;

beforeAll(async () => {
  connection = await Connection.connect({ address: stack.temporalAddress });
  temporal = new Client({ connection, namespace: stack.temporalNamespace });
  // the API's first plan pages the region's catalogue into its cache: measured apart
  const model = await newModel('planwarm');
  const started = performance.now();
  const first = await api.post(`/v1/models/${model}/machines`, { dryRun: true });
  console.log(
    `first plan (cold caches) answered in ${Math.round(performance.now() - started)} ms; notes: ${JSON.stringify(first.body?.plan?.notes)}`,
  );
  // a plan waits at most 3 s for the price list, a launch longer: the comparisons below
  // need the API's prices loaded (the first plan's lookup goes on in the background)
  await eventually(
    () => api.post(`/v1/models/${model}/machines`, { dryRun: true }),
    (res) => res.status === 200 && res.body.plan.pricePerHour !== null,
    120_000,
    2000,
  );
}, 300_000);

afterAll(async () => {
  await connection.close();
  ddb.destroy();
});

async function newModel(prefix: string, extra: Record<string, unknown> = {}): Promise<string> {
  const name = uniqueName(prefix);
  const res = await api.post('/v1/models', { name, ...extra });
  expect(res.status).toBe(201);
  return name;
}

async function status(model: string): Promise<any> {
  const res = await api.get(`/v1/models/${model}/status`);
  expect(res.status).toBe(200);
  return res.body;
}

/** The model's status once every machine of `ids` runs (and none is in error). */
async function running(model: string, ids: readonly string[]): Promise<any> {
  return eventually(
    () => status(model),
    (s) =>
      ids.every((id) => s.machines[id]?.status === 'running') &&
      Object.values<any>(s.machines).every((m) => m.status !== 'error'),
    SLOW,
    1000,
  );
}

async function plan(path: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.post(path, { ...body, dryRun: true });
  expect(res.status).toBe(200);
  return res.body.plan;
}

/** What a launched machine is, for comparing plans with launches. */
function launchedKey(m: any): string {
  return JSON.stringify([
    m.zone,
    m.instanceType,
    m.pricePerHour,
    m.placementGroup ?? null,
    m.partition ?? null,
  ]);
}

function sorted(keys: string[]): string[] {
  return [...keys].sort();
}

function checkTotals(p: any): void {
  const launched = p.machines.filter((m: any) => m.id === null && m.instanceType !== null);
  const sum = launched.reduce((a: number, m: any) => a + m.pricePerHour, 0);
  expect(p.pricePerHour).toBeCloseTo(sum, 6);
  expect(p.pricePerMonth).toBe(Math.round(p.pricePerHour * 730 * 100) / 100);
  expect(p.estimatedSeconds).toBeGreaterThan(0);
  expect(p.notes).toContain(
    "a zone's spare capacity is not known: a zone short of capacity moves a machine to the next one at launch",
  );
}

describe('a plan, then the real request: the same machines', () => {
  it(
    'deploy, then add-unit with to (zone= and an existing machine)',
    async () => {
      const model = await newModel('plandeploy');
      const body = {
        name: 'web',
        base: 'ubuntu@22.04',
        numUnits: 4,
        constraints: 'zones=us-east-1b,us-east-1c,us-east-1d',
      };
      const p = await plan(`/v1/models/${model}/applications`, body);
      expect(p.machines).toHaveLength(4);
      expect(p.machines.map((m: any) => m.units)).toEqual([
        ['web/0'],
        ['web/1'],
        ['web/2'],
        ['web/3'],
      ]);
      for (const m of p.machines) {
        expect(m).toMatchObject({ id: null, base: 'ubuntu@22.04' });
        expect(m.instanceType).toEqual(expect.any(String));
        expect(m.pricePerHour).toEqual(expect.any(Number));
      }
      // least populous first within the group, ties by name, only the zones allowed
      expect(sorted(p.machines.map((m: any) => m.zone))).toEqual([
        'us-east-1b',
        'us-east-1b',
        'us-east-1c',
        'us-east-1d',
      ]);
      checkTotals(p);

      const real = await api.post(`/v1/models/${model}/applications`, body);
      expect(real.status).toBe(201);
      const ids = real.body.units.map((u: any) => u.machine as string);
      const s = await running(model, ids);
      expect(sorted(ids.map((id: string) => launchedKey(s.machines[id])))).toEqual(
        sorted(p.machines.map(launchedKey)),
      );

      // add-unit: one to zone=us-east-1c, one onto machine ids[0], one wherever the spread says
      const target = ids[0];
      const addBody = { count: 3, to: ['zone=us-east-1c', target] };
      const q = await plan(`/v1/models/${model}/applications/web/units`, addBody);
      expect(q.machines.map((m: any) => m.units)).toEqual([['web/4'], ['web/5'], ['web/6']]);
      expect(q.machines[0]).toMatchObject({ id: null, zone: 'us-east-1c' });
      expect(q.machines[1]).toMatchObject({
        id: target,
        zone: s.machines[target].zone,
        instanceType: s.machines[target].instanceType,
      });
      expect(q.notes).toContain(`machine ${target} exists: its cost is not added to the totals`);
      checkTotals(q);
      const added = await api.post(`/v1/models/${model}/applications/web/units`, addBody);
      expect(added.status).toBe(201);
      expect(added.body.units.map((u: any) => u.name)).toEqual(['web/4', 'web/5', 'web/6']);
      expect(added.body.units[1].machine).toBe(target);
      const fresh = [added.body.units[0].machine, added.body.units[2].machine];
      const t = await running(model, fresh);
      // the placed machine exactly; type and price of both exactly
      expect(launchedKey(t.machines[fresh[0]])).toBe(launchedKey(q.machines[0]));
      expect([t.machines[fresh[1]].instanceType, t.machines[fresh[1]].pricePerHour]).toEqual([
        q.machines[2].instanceType,
        q.machines[2].pricePerHour,
      ]);
      // the two new machines claim their zones in either order, so the unplaced one may claim
      // before the zone= one is counted (the plan counts it after): the plan says so
      expect(q.notes).toContain(
        'new machines of web placed with zone= or subnet= and unplaced ones claim their zones ' +
          'in no fixed order: the unplaced ones may get other zones than planned',
      );
      expect([q.machines[2].zone, q.machines[0].zone]).toContain(t.machines[fresh[1]].zone);
    },
    SLOW + 60_000,
  );

  it(
    'add-unit --to a bare machine: the machine counts in the application before new ones claim',
    async () => {
      const model = await newModel('planregroup');
      const made = await api.post(`/v1/models/${model}/machines`, {
        placement: 'zone=us-east-1a',
        base: 'ubuntu@22.04',
      });
      expect(made.status).toBe(201);
      const bare = made.body.machines[0].id as string;
      await running(model, [bare]);
      const deployed = await api.post(`/v1/models/${model}/applications`, {
        name: 'web',
        base: 'ubuntu@22.04',
        numUnits: 0,
      });
      expect(deployed.status).toBe(201);

      const body = { count: 2, to: [bare] };
      const q = await plan(`/v1/models/${model}/applications/web/units`, body);
      expect(q.machines.map((m: any) => [m.id, m.units])).toEqual([
        [bare, ['web/0']],
        [null, ['web/1']],
      ]);
      expect(q.machines[0].zone).toBe('us-east-1a');
      // the bare machine now counts in web's us-east-1a: the new one goes elsewhere
      expect(q.machines[1].zone).toBe('us-east-1b');
      const added = await api.post(`/v1/models/${model}/applications/web/units`, body);
      expect(added.status).toBe(201);
      expect(added.body.units[0].machine).toBe(bare);
      const fresh = added.body.units[1].machine as string;
      const t = await running(model, [fresh]);
      expect(launchedKey(t.machines[fresh])).toBe(launchedKey(q.machines[1]));
    },
    SLOW + 60_000,
  );

  it(
    'add-machine with zone= and lxd:N',
    async () => {
      const model = await newModel('planmachine');
      const zoned = { placement: 'zone=us-east-1d', constraints: 'mem=4G' };
      const p = await plan(`/v1/models/${model}/machines`, zoned);
      expect(p.machines).toHaveLength(1);
      expect(p.machines[0]).toMatchObject({ id: null, units: [], zone: 'us-east-1d' });
      checkTotals(p);
      const real = await api.post(`/v1/models/${model}/machines`, zoned);
      expect(real.status).toBe(201);
      const host = real.body.machines[0].id as string;
      const s = await running(model, [host]);
      expect(launchedKey(s.machines[host])).toBe(launchedKey(p.machines[0]));
      expect(s.machines[host].constraints).toBe(p.machines[0].constraints);

      const contained = { placement: `lxd:${host}` };
      const q = await plan(`/v1/models/${model}/machines`, contained);
      // a container launches nothing: its host's zone, no type, nothing added to pay
      expect(q).toMatchObject({
        machines: [
          { id: null, units: [], zone: 'us-east-1d', instanceType: null, pricePerHour: 0 },
        ],
        pricePerHour: 0,
        pricePerMonth: 0,
      });
      const c = await api.post(`/v1/models/${model}/machines`, contained);
      expect(c.status).toBe(201);
      expect(c.body.machines).toEqual([{ id: `${host}/lxd/0` }]);
      const after = await status(model);
      expect(Object.keys(after.machines).sort()).toEqual([host, `${host}/lxd/0`].sort());
      expect(after.machines[`${host}/lxd/0`].instanceType).toBeUndefined();
    },
    SLOW + 60_000,
  );

  it(
    'an availability-set model: placement group and partition as launched',
    async () => {
      const model = await newModel('planavset', { availabilitySets: true });
      const body = {
        name: 'db',
        base: 'ubuntu@24.04',
        numUnits: 4,
        constraints: 'zones=us-east-1a,us-east-1b,us-east-1c',
      };
      const p = await plan(`/v1/models/${model}/applications`, body);
      for (const m of p.machines) {
        expect(m.placementGroup).toMatch(/^juju-.*-db$/);
        expect(m.partition).toBeGreaterThanOrEqual(1);
      }
      expect(sorted(p.machines.map((m: any) => `${m.zone}#${m.partition}`))).toEqual([
        'us-east-1a#1',
        'us-east-1a#2',
        'us-east-1b#1',
        'us-east-1c#1',
      ]);
      const real = await api.post(`/v1/models/${model}/applications`, body);
      expect(real.status).toBe(201);
      const ids = real.body.units.map((u: any) => u.machine as string);
      const s = await running(model, ids);
      expect(sorted(ids.map((id: string) => launchedKey(s.machines[id])))).toEqual(
        sorted(p.machines.map(launchedKey)),
      );
    },
    SLOW + 60_000,
  );
});

/** The table's items that name the model (its partition, its audit, its idempotency records). */
async function itemsOf(model: string): Promise<string[]> {
  const out: string[] = [];
  let start: Record<string, any> | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({
        TableName: stack.tableName,
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    for (const item of page.Items ?? []) {
      const text = JSON.stringify(item);
      if (text.includes(model)) out.push(text);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return out.sort();
}

async function workflowsOf(model: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const w of temporal.workflow.list({ query: `ProvisionerModel = "${model}"` })) {
    ids.push(w.workflowId);
  }
  return ids.sort();
}

/** EC2 calls that change something, as the proxy counted them. */
async function ec2Mutations(): Promise<Record<string, number>> {
  const res = await fetch(`${stack.ec2Endpoint}/_admin/stats`);
  const stats = (await res.json()) as { calls: Record<string, number> };
  return Object.fromEntries(
    Object.entries(stats.calls).filter(([action]) => !/^(Describe|Get|List)/.test(action)),
  );
}

describe('a dry run writes nothing', () => {
  it(
    'no item, no idempotency record, no workflow, no EC2 mutation',
    async () => {
      const model = await newModel('plannothing');
      const base = `/v1/models/${model}`;
      // an application with no units: add-unit has something to plan for
      expect(
        (await api.post(`${base}/applications`, { name: 'app', base: 'ubuntu@22.04', numUnits: 0 }))
          .status,
      ).toBe(201);
      const items = await itemsOf(model);
      const workflows = await workflowsOf(model);
      const dryRuns = async () => {
        const key = `plan-${uniqueName('key')}`;
        const answers = await Promise.all([
          api.post(`${base}/applications`, {
            name: 'web',
            base: 'ubuntu@22.04',
            numUnits: 5,
            dryRun: true,
          }),
          api.post(`${base}/applications/app/units`, { count: 3, to: ['lxd'], dryRun: true }),
          api.post(`${base}/machines`, { count: 4, dryRun: true }),
        ]);
        const keyed = await api.call(
          'POST',
          `${base}/machines`,
          { count: 2, dryRun: true },
          undefined,
          {
            'Idempotency-Key': key,
          },
        );
        expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
        expect(keyed.status).toBe(200);
        return key;
      };
      // the proxy counts every caller's calls: a dry run is deterministic, so one quiet
      // round (no mutation by anyone) proves it makes none
      let quiet = false;
      let key = '';
      for (let round = 0; round < 5 && !quiet; round++) {
        const before = await ec2Mutations();
        key = await dryRuns();
        quiet = JSON.stringify(await ec2Mutations()) === JSON.stringify(before);
      }
      expect(quiet).toBe(true);
      // give visibility time to show a workflow, were one started
      await new Promise((r) => setTimeout(r, 3000));
      expect(await workflowsOf(model)).toEqual(workflows);
      expect(await itemsOf(model)).toEqual(items);
      // the key was not kept: the real request with it (another body) runs, no 422
      const real = await api.call('POST', `${base}/machines`, { count: 2 }, undefined, {
        'Idempotency-Key': key,
      });
      expect(real.status).toBe(201);
    },
    SLOW,
  );
});

describe('bad input: the same answer with and without dryRun', () => {
  let model: string;
  let avsets: string;
  beforeAll(async () => {
    model = await newModel('planbad');
    avsets = await newModel('planbadav', { availabilitySets: true });
    const base = `/v1/models/${model}`;
    expect(
      (await api.post(`${base}/applications`, { name: 'web', base: 'ubuntu@22.04', numUnits: 0 }))
        .status,
    ).toBe(201);
    expect(
      (
        await api.post(`${base}/applications`, {
          name: 'sub',
          base: 'ubuntu@22.04',
          subordinate: true,
        })
      ).status,
    ).toBe(201);
    // machine 0: ubuntu@20.04 (another base), manual so it never launches
    expect(
      (await api.post(`${base}/machines`, { base: 'ubuntu@20.04', placement: 'ssh:me@10.0.0.9' }))
        .status,
    ).toBe(201);
    expect(
      (
        await api.post(`/v1/models/${avsets}/applications`, {
          name: 'db',
          base: 'ubuntu@22.04',
          numUnits: 0,
        })
      ).status,
    ).toBe(201);
  });

  const deployCases: Array<[string, Record<string, unknown>]> = [
    ['a bad name', { name: 'Web', base: 'ubuntu@22.04' }],
    ['an unknown field', { name: 'x', base: 'ubuntu@22.04', series: 'jammy' }],
    ['a bad base', { name: 'x', base: 'ubuntu@22.04;rm' }],
    ['an unknown OS', { name: 'x', base: 'plan9@4' }],
    ['a constraint set twice', { name: 'x', base: 'ubuntu@22.04', constraints: 'mem=1G mem=2G' }],
    ['an unknown constraint', { name: 'x', base: 'ubuntu@22.04', constraints: 'colour=red' }],
    ['a bad mem', { name: 'x', base: 'ubuntu@22.04', constraints: 'mem=lots' }],
    ['a negative count', { name: 'x', base: 'ubuntu@22.04', numUnits: -1 }],
    [
      'a subordinate with units',
      { name: 'x', base: 'ubuntu@22.04', subordinate: true, numUnits: 1 },
    ],
    [
      'a subordinate with constraints',
      { name: 'x', base: 'ubuntu@22.04', subordinate: true, constraints: 'mem=1G' },
    ],
    ['ssh placement', { name: 'x', base: 'ubuntu@22.04', to: ['ssh:me@host'] }],
    ['a zone of another region', { name: 'x', base: 'ubuntu@22.04', to: ['zone=eu-west-1a'] }],
    ['a bad lxd scope', { name: 'x', base: 'ubuntu@22.04', to: ['lxd:x'] }],
    ['a machine that does not exist', { name: 'x', base: 'ubuntu@22.04', to: ['42'] }],
    ['a machine of another base', { name: 'x', base: 'ubuntu@22.04', to: ['0'] }],
    ['a taken name', { name: 'web', base: 'ubuntu@22.04' }],
  ];
  it.each(deployCases)('deploy: %s', async (_what, body) => {
    await sameBothWays(`/v1/models/${model}/applications`, body);
  });
  it('deploy: placement in an availability-set model, and an unknown model', async () => {
    await sameBothWays(`/v1/models/${avsets}/applications`, {
      name: 'x',
      base: 'ubuntu@22.04',
      to: ['zone=us-east-1a'],
    });
    await sameBothWays('/v1/models/none-here/applications', { name: 'x', base: 'ubuntu@22.04' });
  });

  const unitCases: Array<[string, string, Record<string, unknown>]> = [
    ['an unknown application', 'ghost', {}],
    ['a subordinate application', 'sub', {}],
    ['count 0', 'web', { count: 0 }],
    ['an unknown field', 'web', { num: 2 }],
    ['ssh placement', 'web', { to: ['ssh:me@host'] }],
    ['a zone of another region', 'web', { to: ['zone=eu-west-1a'] }],
    ['a container on a container', 'web', { to: ['lxd:0/lxd/0'] }],
    ['a machine that does not exist', 'web', { to: ['42'] }],
    ['a machine of another base', 'web', { to: ['0'] }],
  ];
  it.each(unitCases)('add-unit: %s', async (_what, app, body) => {
    await sameBothWays(`/v1/models/${model}/applications/${app}/units`, body);
  });
  it('add-unit: placement in an availability-set model', async () => {
    await sameBothWays(`/v1/models/${avsets}/applications/db/units`, { to: ['zone=us-east-1a'] });
  });

  const machineCases: Array<[string, Record<string, unknown>]> = [
    ['count 0', { count: 0 }],
    ['count over the limit', { count: 1001 }],
    ['-n with a directive', { count: 2, placement: 'zone=us-east-1a' }],
    ['a machine id as placement', { placement: '3' }],
    ['a zone of another region', { placement: 'zone=eu-west-1a' }],
    ['a bad constraint', { constraints: 'cores=-1' }],
    ['a bad base', { base: 'ubuntu@22.04 && true' }],
    ['a host that does not exist', { placement: 'lxd:42' }],
    ['a container on a container', { placement: 'lxd:0/lxd/0' }],
    ['an unknown field', { series: 'jammy' }],
  ];
  it.each(machineCases)('add-machine: %s', async (_what, body) => {
    await sameBothWays(`/v1/models/${model}/machines`, body);
  });
  it('add-machine: an availability-set model', async () => {
    await sameBothWays(`/v1/models/${avsets}/machines`, {});
  });
});

/** The request refused, and refused identically with `dryRun: true`. */
async function sameBothWays(path: string, body: Record<string, unknown>): Promise<void> {
  const dry = await api.post(path, { ...body, dryRun: true });
  const real = await api.post(path, body);
  expect(real.status).toBeGreaterThanOrEqual(400);
  expect(dry).toEqual(real);
}

describe('a plan for 1,000 machines', () => {
  it('answers, and says when the last one will be launched', async () => {
    const model = await newModel('planbig');
    const started = performance.now();
    const p = await plan(`/v1/models/${model}/applications`, {
      name: 'fleet',
      base: 'ubuntu@24.04',
      numUnits: 1000,
    });
    const ms = performance.now() - started;
    console.log(
      `a plan for 1,000 machines answered in ${Math.round(ms)} ms (estimatedSeconds ${p.estimatedSeconds})`,
    );
    expect(p.machines).toHaveLength(1000);
    // 1,000 instances are within EC2's instance burst: no note of going over it, unless the
    // stack's recent launches (this file's, a moment ago) still hold part of the bucket
    const drained = p.notes.some((n: string) =>
      /^this deployment's recent launches leave \d+ of the 1,000 instances/.test(n),
    );
    expect(p.notes.some((n: string) => n.includes('machines over the next'))).toBe(drained);
    const over = await plan(`/v1/models/${model}/machines`, { count: 1000 });
    expect(over.machines).toHaveLength(1000);
    // nothing was written: the model still has no machine
    expect((await status(model)).machines).toEqual({});
  }, 300_000);
});

describe('an EC2 read that fails', () => {
  it('gives a plan that says what it could not know, never a 500', async () => {
    const model = await newModel('planec2fail');
    const faults = `${stack.ec2Endpoint}/_admin/faults`;
    const put = await fetch(faults, {
      method: 'PUT',
      body: JSON.stringify({ errors: { describeSubnets: 'UnauthorizedOperation' } }),
    });
    expect(put.status).toBe(200);
    try {
      const res = await api.post(`/v1/models/${model}/machines`, {
        placement: 'subnet=subnet-0abc1234',
        dryRun: true,
      });
      expect(res.status).toBe(200);
      expect(res.body.plan.machines).toEqual([
        expect.objectContaining({ id: null, zone: null, instanceType: null, pricePerHour: null }),
      ]);
      expect(res.body.plan.pricePerHour).toBeNull();
      expect(res.body.plan.notes).toContain(
        'EC2 could not be asked (UnauthorizedOperation): the subnet, zone and instance type ' +
          'of this machine are not known',
      );
    } finally {
      expect((await fetch(faults, { method: 'DELETE' })).status).toBe(200);
    }
  });
});
