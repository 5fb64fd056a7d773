import type { Client } from '../../../cli/client';
import type { Status } from '../../../cli/types';
import { progressLine, tally, waitForMachines, waitable } from '../../../cli/wait';
import { sampleStatus } from './fixtures';

function machineStates(states: Record<string, [string, string?]>): Status {
  const base = sampleStatus();
  const machines: Status['machines'] = {};
  for (const [id, [status, message]] of Object.entries(states))
    machines[id] = { ...base.machines['1']!, id, status, message: message ?? '' };
  return { ...base, machines };
}

function scripted(statuses: Status[]): Client {
  let i = 0;
  const client: Client = {
    apiUrl: 'http://api.test',
    request: <T>() => Promise.resolve(statuses[Math.min(i++, statuses.length - 1)] as T),
    get: <T>(path: string) => client.request<T>('GET', path),
  };
  return client;
}

function sink(isTTY = false) {
  const out = { text: '', isTTY, write: (t: string) => (out.text += t) };
  return out;
}

const FAILOVER =
  'failed to start machine 4 in zone "us-east-1b", retrying with new availability zone: InsufficientInstanceCapacity: no capacity';

describe('--wait', () => {
  it('counts each state and keeps the latest zone failover message', () => {
    const p = tally(
      ['3', '4', '5', '6'],
      machineStates({
        '3': ['pending'],
        '4': ['allocating', FAILOVER],
        '5': ['running'],
        '6': ['error', 'x'],
      }),
    );
    expect(p).toEqual({
      total: 4,
      pending: 1,
      allocating: 1,
      running: 1,
      error: 1,
      failover: FAILOVER,
    });
    expect(progressLine(p)).toBe(
      'machines 2/4 settled: 1 pending, 1 allocating, 1 running, 1 error',
    );
  });

  it('never waits for containers (created on their host later; status shows them)', () => {
    expect(waitable(['0', '0/lxd/1', '2', '2'])).toEqual(['0', '2']);
  });

  it('off a terminal: plain progress lines as things change, no carriage returns, then success', async () => {
    const out = sink(false);
    await waitForMachines(
      scripted([
        machineStates({ '3': ['pending'], '4': ['pending'] }),
        machineStates({ '3': ['allocating'], '4': ['allocating', FAILOVER] }),
        machineStates({ '3': ['allocating'], '4': ['allocating', FAILOVER] }),
        machineStates({ '3': ['running'], '4': ['running'] }),
      ]),
      'demo',
      ['3', '4'],
      { timeoutMs: 60_000, out, pollMs: 1 },
    );
    expect(out.text).toBe(
      [
        'machines 0/2 settled: 2 pending, 0 allocating, 0 running, 0 error',
        'machines 0/2 settled: 0 pending, 2 allocating, 0 running, 0 error',
        `  ${FAILOVER}`,
        'machines 2/2 settled: 0 pending, 0 allocating, 2 running, 0 error',
        '2 machines running (3, 4)',
        '',
      ].join('\n'),
    );
    expect(out.text).not.toContain('\r');
  });

  it('fails listing every machine that did not start', async () => {
    const out = sink(false);
    const err = await waitForMachines(
      scripted([
        machineStates({
          '3': ['running'],
          '4': ['error', 'failed to start machine 4 (InsufficientInstanceCapacity: none)'],
        }),
      ]),
      'demo',
      ['3', '4', '9'],
      { timeoutMs: 60_000, out, pollMs: 1 },
    ).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(
      [
        '2 of 3 machines failed to start:',
        '  machine 4 error: failed to start machine 4 (InsufficientInstanceCapacity: none)',
        '  machine 9 was removed',
      ].join('\n'),
    );
  });

  it('gives up at the timeout naming the machines still starting', async () => {
    const out = sink(false);
    await expect(
      waitForMachines(
        scripted([machineStates({ '3': ['running'], '4': ['allocating'] })]),
        'demo',
        ['3', '4'],
        {
          timeoutMs: 20,
          out,
          pollMs: 5,
        },
      ),
    ).rejects.toThrow('timed out after 20ms waiting for machine 4 to start');
  });

  it('on a terminal: one live line redrawn in place', async () => {
    const out = sink(true);
    await waitForMachines(
      scripted([
        machineStates({ '3': ['allocating', FAILOVER] }),
        machineStates({ '3': ['running'] }),
      ]),
      'demo',
      ['3'],
      { timeoutMs: 60_000, out, pollMs: 1 },
    );
    expect(out.text).toContain('machines 1/1 settled: 0 pending, 0 allocating, 1 running, 0 error');
    // redrawn from column 1 of the same line: the only newlines are after the bar and the result
    expect(out.text).toContain('\x1b[1G');
    expect(out.text.split('\n')).toHaveLength(3);
    expect(out.text.endsWith('\n1 machine running (3)\n')).toBe(true);
  });

  it('after a retry, the old error is not taken for a new failure until the machine moves on', async () => {
    const old = 'failed to start machine 3 (no capacity)';
    const out = sink(false);
    await waitForMachines(
      scripted([
        machineStates({ '3': ['error', old] }),
        machineStates({ '3': ['error', old] }),
        machineStates({ '3': ['allocating'] }),
        machineStates({ '3': ['running'] }),
      ]),
      'demo',
      ['3'],
      { timeoutMs: 60_000, out, pollMs: 1, retried: new Map([['3', { message: old }]]) },
    );
    expect(out.text.split('\n')[0]).toBe(
      'machines 0/1 settled: 1 pending, 0 allocating, 0 running, 0 error',
    );
    expect(out.text).toContain('1 machine running (3)');

    // once it has moved on, an error (even with the same words) is a failure
    const again = await waitForMachines(
      scripted([
        machineStates({ '3': ['error', old] }),
        machineStates({ '3': ['allocating'] }),
        machineStates({ '3': ['error', old] }),
      ]),
      'demo',
      ['3'],
      {
        timeoutMs: 60_000,
        out: sink(false),
        pollMs: 1,
        retried: new Map([['3', { message: old }]]),
      },
    ).catch((e: unknown) => e as Error);
    expect((again as Error).message).toBe(
      `1 of 1 machines failed to start:\n  machine 3 error: ${old}`,
    );
  });
  it('after a retry, a new failure with the very same message is told by its error count, at once', async () => {
    const old =
      'cannot run instances: no instance types in us-east-1 matching constraints "mem=1000T"';
    const counted = (status: string, errorCount: number) => {
      const st = machineStates({ '3': [status, old] });
      st.machines['3'] = { ...st.machines['3']!, errorCount };
      return st;
    };
    // the machine never shows anything but this error: only the count moves (1 → 2)
    const client = scripted([counted('error', 1), counted('error', 1), counted('error', 2)]);
    const failed = await waitForMachines(client, 'demo', ['3'], {
      timeoutMs: 600_000,
      out: sink(false),
      pollMs: 1,
      retried: new Map([['3', { message: old, errorCount: 1 }]]),
    }).catch((e: unknown) => e as Error);
    expect((failed as Error).message).toBe(
      `1 of 1 machines failed to start:\n  machine 3 error: ${old}`,
    );

    // a machine in error from before the count existed: its first counted error is new
    const first = await waitForMachines(
      scripted([machineStates({ '3': ['error', old] }), counted('error', 1)]),
      'demo',
      ['3'],
      {
        timeoutMs: 600_000,
        out: sink(false),
        pollMs: 1,
        retried: new Map([['3', { message: old }]]),
      },
    ).catch((e: unknown) => e as Error);
    expect((first as Error).message).toBe(
      `1 of 1 machines failed to start:\n  machine 3 error: ${old}`,
    );
  });

  it('a retry never taken up times out naming the machine it waited for', async () => {
    const old = 'failed to start machine 3 (no capacity)';
    const stuck = machineStates({ '3': ['error', old], '4': ['running'] });
    stuck.machines['3'] = { ...stuck.machines['3']!, errorCount: 1 };
    const timedOut = await waitForMachines(scripted([stuck]), 'demo', ['3', '4'], {
      timeoutMs: 50,
      out: sink(false),
      pollMs: 5,
      retried: new Map([['3', { message: old, errorCount: 1 }]]),
    }).catch((e: unknown) => e as Error);
    expect((timedOut as Error).message).toBe('timed out after 50ms waiting for machine 3 to start');
  });
});
