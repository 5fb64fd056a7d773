import { EC2Client, type Instance } from '@aws-sdk/client-ec2';
import type { ActivityDeps } from '../../../activities/deps';
import { SharedListings } from '../../../ec2/instance-listing';
import {
  ADDRESS_WRITES_PER_SWEEP,
  sweepActivities,
  type SweptMachine,
} from '../../../activities/sweep';
import { TAG_MACHINE, TAG_MODEL } from '../../../ec2/tags';
import { provisioningTuning } from '../../../config/env';
import { machineWorkflowId } from '../../../temporal/search-attributes';
import { UNLISTED_GRACE_MS } from '../../../core/liveness';

/**
 * One model's sweep with a listing shared by a sweeper page: what it believes
 * of EC2 when the listing is older than what the machines recorded since.
 */
function instance(id: string, state: string): Instance {
  return {
    InstanceId: id,
    State: { Name: state as never },
    LaunchTime: new Date(0),
    Tags: [
      { Key: TAG_MODEL, Value: 'm' },
      { Key: TAG_MACHINE, Value: '0' },
    ],
  };
}

function harness(input: {
  machines: SweptMachine[];
  listed: Instance[];
  byId: Instance[];
  harvestMode?: string;
  reprovisionLost?: boolean;
  /** A Temporal client (the sweep's signals and workflow listing); none by default. */
  temporal?: unknown;
  /** Store methods besides `machines` (writes); none by default. */
  store?: Record<string, unknown>;
}) {
  const byIdCalls: string[][] = [];
  // a real client (EC2's paginators want one) whose calls never leave the process
  const ec2 = new EC2Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  ec2.middlewareStack.add(
    () => (args) => {
      const filters = (args.input as { Filters?: Array<{ Name: string; Values: string[] }> })
        .Filters;
      const ids = filters?.find((f) => f.Name === 'instance-id')?.Values ?? [];
      byIdCalls.push(ids);
      const output = {
        $metadata: {},
        Reservations: [{ Instances: input.byId.filter((i) => ids.includes(i.InstanceId!)) }],
      };
      return Promise.resolve({ output, response: {} });
    },
    { step: 'initialize', name: 'answeredInProcess' },
  );
  let listings = 0;
  const shared = new SharedListings(() => {
    listings++;
    return Promise.resolve(input.listed);
  }, 10_000);
  const deps = {
    repo: {
      getModel: () =>
        Promise.resolve({
          name: 'm',
          region: 'us-east-1',
          harvestMode: input.harvestMode ?? 'destroyed',
          life: 'alive',
          reprovisionLost: input.reprovisionLost ?? false,
        }),
    },
    store: { machines: () => Promise.resolve(input.machines), ...input.store },
    ec2ForRegion: () => ({ ec2 }),
    tuning: provisioningTuning({}),
    deployment: 'test',
    taskQueue: 'unused',
    ...(input.temporal ? { temporal: input.temporal } : {}),
  } as unknown as ActivityDeps;
  const { sweepModel } = sweepActivities(deps);
  return {
    sweep: () => sweepModel({ model: 'm' }, shared),
    byIdCalls,
    listings: () => listings,
  };
}

const down: SweptMachine = {
  id: '0',
  life: 'alive',
  status: 'down',
  instanceId: 'i-1',
  instanceStatus: 'shutting-down',
};

describe('sweepModel with a shared listing', () => {
  it('never undoes a newer state with an older listing: a change is asked of EC2 by id first', async () => {
    // the listing saw i-1 running; an EC2 event recorded it shutting down since
    const h = harness({
      machines: [down],
      listed: [instance('i-1', 'running')],
      byId: [instance('i-1', 'shutting-down')],
    });
    const report = await h.sweep();
    expect(h.byIdCalls).toEqual([['i-1']]);
    expect(report.instanceChanges).toEqual([]);
    expect(report.lost).toEqual([]);
  });

  it('tells the change when EC2 confirms it by id', async () => {
    const h = harness({
      machines: [{ ...down, status: 'running', instanceStatus: 'pending' }],
      listed: [instance('i-1', 'running')],
      byId: [instance('i-1', 'running')],
    });
    const report = await h.sweep();
    expect(report.instanceChanges).toEqual(['0:i-1:running']);
  });

  it('asks nothing by id when the listing agrees with what the machines recorded', async () => {
    const h = harness({
      machines: [{ ...down, status: 'running', instanceStatus: 'running' }],
      listed: [instance('i-1', 'running')],
      byId: [],
    });
    const report = await h.sweep();
    expect(h.byIdCalls).toEqual([]);
    expect(report.instanceChanges).toEqual([]);
    expect(h.listings()).toBe(1);
  });

  it('asks EC2 nothing for a model that harvests nothing and has no instance to watch', async () => {
    const h = harness({ machines: [], listed: [instance('i-9', 'running')], byId: [] });
    const report = await h.sweep();
    expect(h.listings()).toBe(0);
    expect(h.byIdCalls).toEqual([]);
    expect(report.strays).toEqual([]);
  });

  it('takes a model’s strays from the shared listing when it harvests them', async () => {
    const h = harness({
      machines: [{ ...down, status: 'running', instanceStatus: 'running' }],
      listed: [instance('i-1', 'running'), { ...instance('i-2', 'running') }],
      byId: [],
      harvestMode: 'unknown',
    });
    const report = await h.sweep();
    expect(report.strays).toEqual(['i-2']);
    expect(report.terminated).toEqual(['i-2']);
  });
});

/**
 * A Temporal client whose machine workflows all run, recording the signals
 * sent; `fail` makes every signal fail as an unreachable Temporal does.
 */
function fakeTemporal(fail: boolean | ((workflowId: string) => boolean) = false) {
  const signals: Array<{ workflowId: string; name: string; args: unknown[] }> = [];
  const temporal = {
    workflow: {
      // eslint-disable-next-line @typescript-eslint/require-await
      list: async function* () {
        yield { workflowId: machineWorkflowId('m', '0') };
        yield { workflowId: machineWorkflowId('m', '1') };
      },
      getHandle: (workflowId: string) => ({
        signal: (name: string, ...args: unknown[]) => {
          signals.push({ workflowId, name, args });
          return (typeof fail === 'function' ? fail(workflowId) : fail)
            ? Promise.reject(new Error('14 UNAVAILABLE: Connection refused'))
            : Promise.resolve();
        },
      }),
    },
  };
  return { temporal, signals };
}

describe('sweepModel recording addresses', () => {
  it('writes only changed addresses, together (one call to the store), at most a capped number per sweep', async () => {
    const n = ADDRESS_WRITES_PER_SWEEP + 50;
    const machines: SweptMachine[] = Array.from({ length: n + 1 }, (_, k) => ({
      id: String(k),
      life: 'alive',
      status: 'running',
      instanceId: `i-${k}`,
      instanceStatus: 'running',
      // the last one already has the addresses EC2 lists
      ...(k === n ? { privateAddress: '10.0.0.1', publicAddress: '54.0.0.1' } : {}),
    }));
    const listed = machines.map((m) => ({
      ...instance(m.instanceId!, 'running'),
      PrivateIpAddress: '10.0.0.1',
      PublicIpAddress: '54.0.0.1',
    }));
    const calls: Array<{ model: string; machineIds: string[] }> = [];
    const h = harness({
      machines,
      listed,
      byId: [],
      store: {
        recordAddressesAll: (model: string, writes: Array<{ machineId: string }>) => {
          calls.push({ model, machineIds: writes.map((w) => w.machineId) });
          return Promise.resolve(writes.map(() => ({ outcome: 'written' })));
        },
      },
    });
    await h.sweep();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.model).toBe('m');
    expect(calls[0]!.machineIds).toHaveLength(ADDRESS_WRITES_PER_SWEEP);
    expect(calls[0]!.machineIds).not.toContain(String(n));
  });

  it('says a failed address write (its machine, instance and error) and goes on: the sweep answers its report', async () => {
    // machines 0-2 run, with addresses EC2 lists and they do not record; 3 is recorded pending
    const machines: SweptMachine[] = ['0', '1', '2', '3'].map((id) => ({
      id,
      life: 'alive',
      status: 'running',
      instanceId: `i-${id}`,
      instanceStatus: id === '3' ? 'pending' : 'running',
    }));
    const listed: Instance[] = machines.map((m) => ({
      ...instance(m.instanceId!, 'running'),
      PrivateIpAddress: `10.0.0.${m.id}`,
    }));
    const routine: unknown[][] = [];
    const sent: string[][] = [];
    const h = harness({
      machines,
      listed,
      byId: listed.filter((i) => i.InstanceId === 'i-3'),
      store: {
        recordRoutineInstanceState: (...args: unknown[]) => {
          routine.push(args);
          return Promise.resolve(true);
        },
        // the batched call answers each write: 1's failed, 2's refused (the machine moved on)
        recordAddressesAll: (_model: string, writes: Array<{ machineId: string }>) => {
          sent.push(writes.map((w) => w.machineId));
          return Promise.resolve(
            writes.map(({ machineId }) => {
              if (machineId === '1') {
                const error = new Error('Rate of requests exceeds the allowed throughput');
                return {
                  outcome: 'failed',
                  error: Object.assign(error, { name: 'ThrottlingException' }),
                };
              }
              if (machineId === '2') return { outcome: 'refused' };
              return { outcome: 'written' };
            }),
          );
        },
      },
    });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    let report: Awaited<ReturnType<typeof h.sweep>>;
    let lines: unknown[];
    try {
      report = await h.sweep();
      lines = warn.mock.calls.map(([line]) => JSON.parse(String(line)) as unknown);
    } finally {
      warn.mockRestore();
    }
    // one line, for the failed write only (a refusal is the machine moving on: not said)
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'sweep: could not record the instance addresses; the next sweep tries again',
        model: 'm',
        machineId: '1',
        instanceId: 'i-1',
        error: 'Rate of requests exceeds the allowed throughput',
      },
    ]);
    // 3's addresses went in its routine write, the others together in one call
    expect(sent).toEqual([['0', '1', '2']]);
    // the sweep itself answered, with the rest of its work: 3's running (its addresses with it)
    expect(routine).toEqual([['m', '3', 'i-3', 'running', { privateAddress: '10.0.0.3' }]]);
    expect(report).toMatchObject({
      model: 'm',
      modelGone: false,
      strays: [],
      instanceChanges: ['3:i-3:running'],
    });
  });
});

describe('sweepModel reprovisioning lost machines', () => {
  // the harness's repository and store can only read: any write would throw
  const lost: SweptMachine = { ...down, instanceStatus: 'terminated' };

  it('tells the machine’s workflow to reprovision the gone instance, and writes nothing itself', async () => {
    const { temporal, signals } = fakeTemporal();
    const h = harness({
      machines: [lost],
      listed: [instance('i-1', 'terminated')],
      byId: [instance('i-1', 'terminated')],
      reprovisionLost: true,
      temporal,
    });
    const report = await h.sweep();
    expect(report.reprovisioned).toEqual(['0']);
    expect(signals).toEqual([
      {
        workflowId: machineWorkflowId('m', '0'),
        name: 'reprovision',
        args: [{ instanceId: 'i-1' }],
      },
    ]);
  });

  it('changes nothing for a machine whose signal cannot be sent, and goes on with the others', async () => {
    // machine 0's workflow cannot be signalled; machine 1's can (it ran on unwatched before)
    const { temporal, signals } = fakeTemporal((id) => id === machineWorkflowId('m', '0'));
    const other: SweptMachine = {
      id: '1',
      life: 'alive',
      status: 'running',
      instanceId: 'i-2',
      instanceStatus: 'running',
    };
    const h = harness({
      machines: [lost, other],
      listed: [instance('i-1', 'terminated'), instance('i-2', 'stopped')],
      byId: [instance('i-1', 'terminated'), instance('i-2', 'stopped')],
      reprovisionLost: true,
      temporal,
    });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const report = await h.sweep();
      // not reprovisioned: the next sweep chooses machine 0 again
      expect(report.reprovisioned).toEqual([]);
      expect(report.instanceChanges).toEqual(['1:i-2:stopped']);
      expect(signals).toEqual([
        {
          workflowId: machineWorkflowId('m', '0'),
          name: 'reprovision',
          args: [{ instanceId: 'i-1' }],
        },
        {
          workflowId: machineWorkflowId('m', '1'),
          name: 'instanceState',
          args: [{ instanceId: 'i-2', state: 'stopped' }],
        },
      ]);
      expect(String(warn.mock.calls[0]?.[0])).toContain('14 UNAVAILABLE: Connection refused');
    } finally {
      warn.mockRestore();
    }
  });

  it('leaves alone a just-launched instance (recorded pending) EC2 does not list yet', async () => {
    const { temporal, signals } = fakeTemporal();
    const h = harness({
      machines: [
        {
          ...down,
          status: 'running',
          instanceStatus: 'pending',
          instanceRecordedAt: new Date(Date.now() - 30_000).toISOString(),
        },
      ],
      listed: [],
      byId: [],
      reprovisionLost: true,
      temporal,
    });
    const report = await h.sweep();
    expect(report.reprovisioned).toEqual([]);
    expect(report.instanceChanges).toEqual([]);
    expect(signals).toEqual([]);
  });

  it('reprovisions an instance recorded pending longer ago than UNLISTED_GRACE_MS that EC2 still does not list', async () => {
    const { temporal, signals } = fakeTemporal();
    const h = harness({
      machines: [
        {
          ...down,
          status: 'running',
          instanceStatus: 'pending',
          instanceRecordedAt: new Date(Date.now() - UNLISTED_GRACE_MS - 60_000).toISOString(),
        },
      ],
      listed: [],
      byId: [],
      reprovisionLost: true,
      temporal,
    });
    const report = await h.sweep();
    expect(report.reprovisioned).toEqual(['0']);
    expect(signals).toEqual([
      {
        workflowId: machineWorkflowId('m', '0'),
        name: 'reprovision',
        args: [{ instanceId: 'i-1' }],
      },
    ]);
  });
});

describe('sweepModel telling routine news', () => {
  const starting: SweptMachine = {
    id: '0',
    life: 'alive',
    status: 'running',
    instanceId: 'i-1',
    instanceStatus: 'pending',
  };

  function listedRunning(id: string, addresses = true): Instance {
    return {
      ...instance(id, 'running'),
      ...(addresses ? { PrivateIpAddress: '10.0.0.7', PublicIpAddress: '54.0.0.7' } : {}),
    };
  }

  it('writes pending → running to the machine itself with its addresses in the same write, and signals nothing', async () => {
    const { temporal, signals } = fakeTemporal();
    const routine: unknown[][] = [];
    const addressWrites: unknown[][] = [];
    const h = harness({
      machines: [starting],
      listed: [listedRunning('i-1')],
      byId: [listedRunning('i-1')],
      temporal,
      store: {
        recordRoutineInstanceState: (...args: unknown[]) => {
          routine.push(args);
          return Promise.resolve(true);
        },
        recordAddressesAll: (...args: unknown[]) => {
          addressWrites.push(args);
          return Promise.resolve([{ outcome: 'written' }]);
        },
      },
    });
    const report = await h.sweep();
    expect(report.instanceChanges).toEqual(['0:i-1:running']);
    expect(routine).toEqual([
      ['m', '0', 'i-1', 'running', { privateAddress: '10.0.0.7', publicAddress: '54.0.0.7' }],
    ]);
    // one write: no separate address write, no signal
    expect(addressWrites).toEqual([]);
    expect(signals).toEqual([]);
  });

  it('drops a pending the store finds stale (a running landed since the sweep read the machine): no signal, no address write', async () => {
    const { temporal, signals } = fakeTemporal();
    const routine: unknown[][] = [];
    const addressWrites: unknown[][] = [];
    const h = harness({
      machines: [{ ...starting, instanceStatus: 'stopped' }],
      listed: [instance('i-1', 'pending')],
      byId: [instance('i-1', 'pending')],
      temporal,
      store: {
        recordRoutineInstanceState: (...args: unknown[]) => {
          routine.push(args);
          return Promise.resolve('stale');
        },
        recordAddressesAll: (...args: unknown[]) => {
          addressWrites.push(args);
          return Promise.resolve([{ outcome: 'written' }]);
        },
      },
    });
    await h.sweep();
    expect(routine.map((r) => r.slice(0, 4))).toEqual([['m', '0', 'i-1', 'pending']]);
    expect(signals).toEqual([]);
  });

  it('leaves the addresses alone when EC2 lists the ones recorded', async () => {
    const routine: unknown[][] = [];
    const h = harness({
      machines: [{ ...starting, privateAddress: '10.0.0.7', publicAddress: '54.0.0.7' }],
      listed: [listedRunning('i-1')],
      byId: [listedRunning('i-1')],
      store: {
        recordRoutineInstanceState: (...args: unknown[]) => {
          routine.push(args);
          return Promise.resolve(true);
        },
      },
    });
    await h.sweep();
    expect(routine).toEqual([['m', '0', 'i-1', 'running', undefined]]);
  });

  it('tells the workflow instead when the write does not apply (the machine is down or stopped), and writes the addresses after', async () => {
    const { temporal, signals } = fakeTemporal();
    const addressWrites: unknown[][] = [];
    const h = harness({
      machines: [{ ...starting, status: 'down', instanceStatus: 'terminated' }],
      listed: [listedRunning('i-1')],
      byId: [listedRunning('i-1')],
      temporal,
      store: {
        recordRoutineInstanceState: () => Promise.resolve(false),
        recordAddressesAll: (...args: unknown[]) => {
          addressWrites.push(args);
          return Promise.resolve([{ outcome: 'written' }]);
        },
      },
    });
    await h.sweep();
    expect(signals).toEqual([
      {
        workflowId: machineWorkflowId('m', '0'),
        name: 'instanceState',
        args: [{ instanceId: 'i-1', state: 'running' }],
      },
    ]);
    expect(addressWrites).toEqual([
      [
        'm',
        [
          {
            machineId: '0',
            instanceId: 'i-1',
            privateAddress: '10.0.0.7',
            publicAddress: '54.0.0.7',
          },
        ],
      ],
    ]);
  });

  it('signals a loss and a stop without writing them: the workflow marks the machine down or says it is stopped', async () => {
    const { temporal, signals } = fakeTemporal();
    const routine: unknown[][] = [];
    const h = harness({
      machines: [
        { ...starting, instanceStatus: 'running' },
        { ...starting, id: '1', instanceId: 'i-2', instanceStatus: 'running' },
      ],
      listed: [instance('i-1', 'terminated'), instance('i-2', 'stopped')],
      byId: [instance('i-1', 'terminated'), instance('i-2', 'stopped')],
      temporal,
      store: {
        recordRoutineInstanceState: (...args: unknown[]) => {
          routine.push(args);
          return Promise.resolve(true);
        },
      },
    });
    const report = await h.sweep();
    expect(report.lost).toEqual(['0']);
    expect(routine).toEqual([]);
    expect(signals.map((s) => [s.workflowId, s.name, s.args])).toEqual([
      [machineWorkflowId('m', '0'), 'instanceState', [{ instanceId: 'i-1', state: 'terminated' }]],
      [machineWorkflowId('m', '1'), 'instanceState', [{ instanceId: 'i-2', state: 'stopped' }]],
    ]);
  });

  it('goes on with the other machines when one routine write fails, and signals nothing for it', async () => {
    const { temporal, signals } = fakeTemporal();
    const routine: string[] = [];
    const h = harness({
      machines: [starting, { ...starting, id: '1', instanceId: 'i-2' }],
      listed: [listedRunning('i-1', false), listedRunning('i-2', false)],
      byId: [listedRunning('i-1', false), listedRunning('i-2', false)],
      temporal,
      store: {
        recordRoutineInstanceState: (_m: string, machineId: string) => {
          if (machineId === '0') return Promise.reject(new Error('ThrottlingException'));
          routine.push(machineId);
          return Promise.resolve(true);
        },
      },
    });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const report = await h.sweep();
      expect(report.instanceChanges).toEqual(['0:i-1:running', '1:i-2:running']);
      expect(routine).toEqual(['1']);
      expect(signals).toEqual([]);
      expect(String(warn.mock.calls[0]?.[0])).toContain('ThrottlingException');
    } finally {
      warn.mockRestore();
    }
  });
});

describe('sweepModel and Dead machines whose workflow runs', () => {
  const dead = (id: string, status: SweptMachine['status']): SweptMachine => ({
    id,
    life: 'dead',
    status,
    instanceId: `i-${id}`,
    instanceStatus: 'running',
  });

  it('sends destroy again only to a workflow that has not begun its teardown (status not stopping)', async () => {
    // machine 0 missed the API's signal (still `running`); machine 1's workflow wrote
    // `stopping`: it took the signal and tears down, and a signal would only cost it a
    // workflow task every sweep (issue 30)
    const { temporal, signals } = fakeTemporal();
    const h = harness({
      machines: [dead('0', 'running'), dead('1', 'stopping')],
      listed: [],
      byId: [],
      temporal,
    });
    const report = await h.sweep();
    expect(signals).toEqual([
      { workflowId: machineWorkflowId('m', '0'), name: 'destroy', args: [] },
    ]);
    expect(report.restarted).toEqual([]);
  });
});
