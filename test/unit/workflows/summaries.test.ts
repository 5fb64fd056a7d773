import type { MachineSnapshot } from '../../../activities/types';
import type { MachineContext } from '../../../workflows/context';
import { duration, machineDetails } from '../../../workflows/summaries';
import { machineSummary } from '../../../temporal/search-attributes';

describe('duration', () => {
  it.each<[number, string]>([
    [500, '500ms'],
    [1000, '1s'],
    [10_000, '10s'],
    [60_000, '1m'],
    [90_000, '1m30s'],
    [3_600_000, '60m'],
  ])('%d ms reads %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
});

function context(state: Partial<MachineContext['state']> = {}): MachineContext {
  return {
    model: 'demo',
    machineId: '3',
    state: { phase: 'running', pass: 1, attempt: 0, maxAttempts: 10, failedZones: [], ...state },
    signals: { retry: false, destroy: false },
    tuning: { startAttempts: 10, retryDelayMs: 10_000 },
    local: true,
    lean: true,
    launched: [],
    published: {},
  };
}

const machine: MachineSnapshot = {
  life: 'alive',
  status: 'running',
  message: '',
  instanceId: 'i-0abc',
  instanceStatus: 'running',
  applications: ['wordpress', 'mysql'],
  units: ['mysql/0', 'wordpress/1'],
  constraints: 'mem=4G zones=us-east-1a,us-east-1b',
  zone: 'us-east-1b',
  instanceType: 't3.medium',
  manual: false,
  container: false,
  region: 'us-east-1',
  harvestMode: 'destroyed',
};

describe('machine summaries', () => {
  it('names the machine and its model in the static summary', () => {
    expect(machineSummary('demo', '3')).toBe('Machine 3 in model demo');
  });

  it('details a running machine: status, zone, instance, applications, units, constraints', () => {
    const ctx = context();
    ctx.published.status = 'running';
    expect(machineDetails(ctx, machine).split('\n')).toEqual([
      // the summary first: a run continued as new has no static summary
      'Machine 3 in model demo',
      '**status** running (running)',
      '**zone** us-east-1b',
      // routine states reach the table, not the workflow: its details name none
      '**instance** i-0abc (t3.medium)',
      '**applications** mysql, wordpress',
      '**units** mysql/0, wordpress/1',
      '**constraints** mem=4G zones=us-east-1a,us-east-1b',
    ]);
    ctx.state.instanceStatus = 'pending';
    expect(machineDetails(ctx, machine)).toContain('**instance** i-0abc (t3.medium)\n');
  });

  it('names a state the workflow was told and acted on: a stop, a loss', () => {
    const ctx = context({ phase: 'running', attempt: 0, instanceStatus: 'stopped' });
    ctx.published.status = 'running';
    expect(machineDetails(ctx, machine)).toContain('**instance** i-0abc (t3.medium, stopped)\n');
    ctx.state.instanceStatus = 'terminated';
    ctx.published.status = 'down';
    expect(machineDetails(ctx, machine)).toContain('**instance** i-0abc (t3.medium, terminated)\n');
  });

  it('details a machine in error with its attempt and last error, the workflow state winning', () => {
    const ctx = context({
      phase: 'error',
      attempt: 10,
      instanceType: 't3.micro',
      lastError: 'InsufficientInstanceCapacity: no capacity in us-east-1a',
    });
    ctx.published.status = 'error';
    const bare: MachineSnapshot = {
      ...machine,
      status: 'error',
      applications: [],
      units: [],
      constraints: '',
    };
    delete bare.instanceId;
    delete bare.zone;
    delete bare.instanceType;
    expect(machineDetails(ctx, bare).split('\n')).toEqual([
      'Machine 3 in model demo',
      '**status** error (error, attempt 10 of 10)',
      '**type** t3.micro',
      '**last error** InsufficientInstanceCapacity: no capacity in us-east-1a',
    ]);
  });
});
