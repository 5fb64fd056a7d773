import { EC2Client, type Instance } from '@aws-sdk/client-ec2';
import {
  Ec2StateEvents,
  MAX_TRIES,
  POLL_MS,
  type StateChangeNotification,
} from '../../../local/ec2-events';
import type { Launch } from '../../../local/ec2-proxy';

/**
 * The local stack's EC2 state-change events, with the proxy's launches and
 * moto's answers held here: what is told, once, and what is tried again.
 */
function harness(launches: Launch[]) {
  let now = 0;
  const moto = new Map<string, string>();
  const asked: Array<{ ids: string[]; states?: string[] }> = [];
  const ec2 = new EC2Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  ec2.middlewareStack.add(
    () => (args) => {
      const filters =
        (args.input as { Filters?: Array<{ Name: string; Values: string[] }> }).Filters ?? [];
      const ids = filters.find((f) => f.Name === 'instance-id')?.Values ?? [];
      const states = filters.find((f) => f.Name === 'instance-state-name')?.Values;
      asked.push({ ids, ...(states ? { states } : {}) });
      const instances: Instance[] = ids
        .filter((id) => moto.has(id) && (!states || states.includes(moto.get(id)!)))
        .map((id) => ({ InstanceId: id, State: { Name: moto.get(id) as never } }));
      const output = { $metadata: {}, Reservations: [{ Instances: instances }] };
      return Promise.resolve({ output, response: {} });
    },
    { step: 'initialize', name: 'answeredInProcess' },
  );
  const delivered: StateChangeNotification[] = [];
  let failing = false;
  let outcome: unknown = { recorded: 'machine:m:0' };
  const events = new Ec2StateEvents({
    // the proxy's own clock (performance.now in the stack), far behind the wall clock
    proxy: { launches: () => launches, now: () => now },
    motoEndpoint: 'http://unused',
    region: 'us-east-1',
    ec2,
    deliver: (event) => {
      if (failing) return Promise.reject(new Error('HTTP 500'));
      delivered.push(event);
      return Promise.resolve(outcome);
    },
  });
  const told = () => delivered.map((e) => `${e.detail['instance-id']} ${e.detail.state}`);
  return {
    events,
    moto,
    asked,
    delivered,
    told,
    at: (ms: number) => {
      now = ms;
    },
    fail: (on: boolean) => {
      failing = on;
    },
    answer: (value: unknown) => {
      outcome = value;
    },
  };
}

const launch = (instanceId: string, runningAt: number): Launch => ({
  instanceId,
  region: 'us-east-1',
  runningAt,
});

describe('the local stack’s EC2 state-change events', () => {
  it('tells `running` once, when the proxy stops reporting the instance pending (on the proxy’s clock, not the wall clock), in EventBridge’s shape', async () => {
    const h = harness([launch('i-1', 5_000)]);
    h.moto.set('i-1', 'running');
    h.at(POLL_MS);
    await h.events.tick();
    h.at(5_000 - 1);
    await h.events.tick();
    // still pending on the proxy's clock: nothing told (on Date.now it would have run long ago)
    expect(h.told()).toEqual([]);
    h.at(5_000);
    await h.events.tick();
    h.at(5_000 + POLL_MS);
    await h.events.tick();
    expect(h.told()).toEqual(['i-1 running']);
    expect(h.delivered[0]).toMatchObject({
      'detail-type': 'EC2 Instance State-change Notification',
      source: 'aws.ec2',
      region: 'us-east-1',
      resources: ['arn:aws:ec2:us-east-1:000000000000:instance/i-1'],
      detail: { 'instance-id': 'i-1', state: 'running' },
    });
    // moto was asked only for instances no longer live
    expect(
      h.asked.every((a) => a.states?.includes('terminated') && !a.states.includes('running')),
    ).toBe(true);
  });

  it('tells a termination made on moto directly, then never asks of that instance again', async () => {
    const h = harness([launch('i-1', 0), launch('i-2', 0)]);
    h.moto.set('i-1', 'running').set('i-2', 'running');
    h.at(POLL_MS);
    await h.events.tick();
    h.moto.set('i-1', 'terminated');
    h.at(2 * POLL_MS);
    await h.events.tick();
    h.at(3 * POLL_MS);
    await h.events.tick();
    expect(h.told()).toEqual(['i-1 running', 'i-2 running', 'i-1 terminated']);
    expect(h.asked.at(-1)?.ids).toEqual(['i-2']);
  });

  it('tells a stop and the return from it (asked of moto by id)', async () => {
    const h = harness([launch('i-1', 0)]);
    h.moto.set('i-1', 'stopped');
    h.at(POLL_MS);
    await h.events.tick();
    h.moto.set('i-1', 'running');
    h.at(2 * POLL_MS);
    await h.events.tick();
    expect(h.told()).toEqual(['i-1 stopped', 'i-1 running']);
    expect(h.asked.at(-1)).toEqual({ ids: ['i-1'] });
  });

  it('tries a refused delivery again at the next ticks, then leaves it to the sweep', async () => {
    const h = harness([launch('i-1', 0), launch('i-2', 0)]);
    h.moto.set('i-1', 'running');
    h.fail(true);
    for (let t = 1; t <= MAX_TRIES + 2; t++) {
      h.at(t * POLL_MS);
      await h.events.tick();
    }
    expect(h.told()).toEqual([]);
    expect(h.events.stats).toEqual({ delivered: 0, notOurs: 0, failed: 2 * MAX_TRIES, dropped: 2 });
    // once through again, it is not told late: it was given up on
    h.fail(false);
    h.at(100 * POLL_MS);
    await h.events.tick();
    expect(h.told()).toEqual([]);

    const again = harness([launch('i-3', 0)]);
    again.fail(true);
    again.at(POLL_MS);
    await again.events.tick();
    again.fail(false);
    again.at(2 * POLL_MS);
    await again.events.tick();
    expect(again.told()).toEqual(['i-3 running']);
    expect(again.events.stats).toEqual({ delivered: 1, notOurs: 0, failed: 1, dropped: 0 });
  });

  it('sends a `running` that finds no machine (the launch not recorded yet) once, as EventBridge does', async () => {
    const h = harness([launch('i-1', 0), launch('i-2', 0)]);
    h.answer({ ignored: 'not-ours' });
    h.at(POLL_MS);
    await h.events.tick();
    for (let t = 2; t <= 10; t++) {
      h.at(t * POLL_MS);
      await h.events.tick();
    }
    expect(h.told()).toEqual(['i-1 running', 'i-2 running']);
    expect(h.events.stats).toEqual({ delivered: 2, notOurs: 2, failed: 0, dropped: 0 });
    // a later change of the same instance is still told (once)
    h.moto.set('i-1', 'terminated');
    h.at(11 * POLL_MS);
    await h.events.tick();
    h.at(12 * POLL_MS);
    await h.events.tick();
    expect(h.told()).toEqual(['i-1 running', 'i-2 running', 'i-1 terminated']);
  });
});
