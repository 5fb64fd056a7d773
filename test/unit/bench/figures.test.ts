import {
  checkScaleOutTargets,
  checkTargets,
  derive,
  machinesPerZone,
  NO_ZONE,
  ratio,
  spreadOf,
  type SizeResult,
} from '../../../bench/figures';
import { perZoneCell } from '../../../bench/table';

function sized(n: number, over: Partial<NonNullable<SizeResult['provisioner']>> = {}): SizeResult {
  return {
    n,
    notes: [],
    floor: {
      launchedMs: 2000,
      runningMs: 7000,
      runInstancesCalls: 3,
      throttled: 0,
      describeCalls: 6,
    },
    provisioner: {
      n,
      requests: 1,
      apiAnswerMs: 2500,
      launchedMs: 3000,
      runningMs: 9000,
      launched: n,
      running: n,
      inError: 0,
      duplicates: 0,
      strays: 0,
      timedOut: false,
      ec2Calls: { RunInstances: 6, DescribeInstances: 40, DescribeAvailabilityZones: 4 },
      throttled: 1,
      capacity: { readUnits: 2 * n, writeUnits: 5 * n, calls: {} },
      temporal: {
        workflows: n,
        events: 30 * n,
        actions: 12 * n,
        workflowTasks: 5 * n,
        activityTasks: 6 * n,
        activityRetries: 0,
      },
      workerPeakRssBytes: 300 * 1024 * 1024,
      ...over,
    },
  };
}

describe('derived figures', () => {
  it('divides by the machines asked for, and by the histories read for Temporal', () => {
    const r = sized(100, {
      temporal: {
        workflows: 50,
        events: 1500,
        actions: 600,
        workflowTasks: 250,
        activityTasks: 300,
        activityRetries: 2,
        localActivities: 150,
        localActivityTasks: 100,
      },
      serverActions: 700,
      cpu: { seconds: { worker: 3, 'worker-2': 1, api: 9, temporal: 20 }, wallMs: 60_000 },
    });
    expect(derive(r)).toEqual({
      launchedVsFloor: 1.5,
      runningVsFloor: 9000 / 7000,
      runInstancesCalls: 6,
      ec2CallsTotal: 50,
      ec2CallsPerMachine: 0.5,
      ec2CallsPerMachineByAction: {
        DescribeAvailabilityZones: 0.04,
        DescribeInstances: 0.4,
        RunInstances: 0.06,
      },
      readUnitsPerMachine: 2,
      writeUnitsPerMachine: 5,
      eventsPerMachine: 30,
      actionsPerMachine: 12,
      workflowTasksPerMachine: 5,
      activityTasksPerMachine: 6,
      // 600 actions with 100 tasks' local activities as one each; 150 markers counted one each before
      actionsEachMarkerPerMachine: (600 - 100 + 150) / 50,
      serverActionsPerMachine: 7,
      // both workers' CPU, neither the API's nor Temporal's
      workerCpuMsPerMachine: 40,
    });
  });

  it('leaves a ratio undefined when either side was never reached', () => {
    expect(ratio(undefined, 5)).toBeUndefined();
    expect(ratio(5, undefined)).toBeUndefined();
    expect(ratio(5, 0)).toBeUndefined();
    expect(ratio(6, 3)).toBe(2);
    expect(derive(sized(10, { launchedMs: undefined })).launchedVsFloor).toBeUndefined();
  });

  it('has nothing to derive without a provisioner phase', () => {
    expect(derive({ n: 5, notes: ['failed'] })).toEqual({ ec2CallsPerMachineByAction: {} });
  });
});

describe('targets', () => {
  it('passes a run inside every bound', () => {
    const checks = checkTargets(sized(1000), sized(100));
    expect(checks.map((c) => [c.target, c.measured, c.verdict])).toEqual([
      ['all launched ≤ 2 × floor', '1.50', 'pass'],
      ['machines in error = 0', '0', 'pass'],
      ['duplicates = 0', '0', 'pass'],
      ['RunInstances calls ≤ 20', '6', 'pass'],
      ['EC2 calls per machine ≤ 1.5', '0.05', 'pass'],
      ['DynamoDB reads per machine ≤ 1.2 × N=100', '1', 'pass'],
      ['Temporal actions per machine ≤ 15', '12', 'pass'],
      ['API answer ≤ 3 s, one request', '2.50', 'pass'],
    ]);
  });

  it('fails each figure past its bound', () => {
    const bad = sized(1000, {
      launchedMs: 4001,
      inError: 2,
      duplicates: 1,
      ec2Calls: { RunInstances: 21, DescribeInstances: 1480 },
      capacity: { readUnits: 2.5 * 1000, writeUnits: 0, calls: {} },
      temporal: {
        workflows: 1000,
        events: 0,
        actions: 15_001,
        workflowTasks: 0,
        activityTasks: 0,
        activityRetries: 0,
      },
      apiAnswerMs: 3001,
    });
    const verdicts = Object.fromEntries(
      checkTargets(bad, sized(100)).map((c) => [c.target, [c.measured, c.verdict]]),
    );
    expect(verdicts).toEqual({
      'all launched ≤ 2 × floor': ['2.00', 'FAIL'],
      'machines in error = 0': ['2', 'FAIL'],
      'duplicates = 0': ['1', 'FAIL'],
      'RunInstances calls ≤ 20': ['21', 'FAIL'],
      'EC2 calls per machine ≤ 1.5': ['1.50', 'FAIL'],
      'DynamoDB reads per machine ≤ 1.2 × N=100': ['1.25', 'FAIL'],
      'Temporal actions per machine ≤ 15': ['15.00', 'FAIL'],
      'API answer ≤ 3 s, one request': ['3.00', 'FAIL'],
    });
  });

  it('fails the API target when the machines took several requests, and skips the growth check at 100', () => {
    const checks = checkTargets(sized(100, { requests: 3 }), sized(100));
    expect(checks.find((c) => c.target.startsWith('API answer'))).toEqual({
      target: 'API answer ≤ 3 s, one request',
      measured: '3 requests',
      verdict: 'FAIL',
    });
    expect(checks.some((c) => c.target.startsWith('DynamoDB reads'))).toBe(false);
  });

  it('says n/a for what was not measured', () => {
    const checks = checkTargets(sized(300, { launchedMs: undefined, temporal: undefined }));
    expect(checks.find((c) => c.target.startsWith('all launched'))?.verdict).toBe('n/a');
    expect(checks.find((c) => c.target.startsWith('Temporal'))).toEqual({
      target: 'Temporal actions per machine ≤ 15',
      measured: '—',
      verdict: 'n/a',
    });
  });
});

describe("issue 26's targets", () => {
  it("judges actions by the larger of the history count and the server's metric (heartbeats)", () => {
    const temporal = {
      workflows: 1000,
      events: 15_000,
      actions: 4_500,
      workflowTasks: 2_000,
      activityTasks: 1_000,
      activityRetries: 0,
    };
    const actions = (serverActions?: number) =>
      checkScaleOutTargets(
        sized(1000, { temporal, ...(serverActions === undefined ? {} : { serverActions }) }),
      ).find((c) => c.target.startsWith('Temporal actions'));
    // the heartbeats the history leaves out push it past the target
    expect(actions(6_200)).toEqual({
      target: 'Temporal actions per machine ≤ 5 (heartbeats included)',
      measured: '6.2',
      verdict: 'FAIL',
    });
    expect(actions(4_800)?.measured).toBe('4.8');
    expect(actions(4_800)?.verdict).toBe('pass');
    // a server metric below the history count (it missed some): the history's figure
    expect(actions(3_000)?.measured).toBe('4.5');
    // no server metric: the history's figure alone
    expect(actions(undefined)?.measured).toBe('4.5');
  });

  it('passes worker CPU, actions, time and units within bounds, and fails each past it', () => {
    const good = sized(1000, {
      cpu: { seconds: { worker: 6, 'worker-2': 3, temporal: 30 }, wallMs: 50_000 },
      temporal: {
        workflows: 1000,
        events: 15_000,
        actions: 4_500,
        workflowTasks: 2_000,
        activityTasks: 1_000,
        activityRetries: 0,
      },
    });
    expect(checkScaleOutTargets(good).map((c) => [c.measured, c.verdict])).toEqual([
      ['9', 'pass'],
      ['4.5', 'pass'],
      ['1.5', 'pass'],
      ['2', 'pass'],
      ['5', 'FAIL'],
      ['0', 'pass'],
      ['—', 'n/a'],
    ]);
    const bad = sized(1000, {
      cpu: { seconds: { worker: 45 }, wallMs: 50_000 },
      duplicates: 1,
    });
    const verdicts = Object.fromEntries(checkScaleOutTargets(bad).map((c) => [c.target, c]));
    expect(verdicts['Temporal actions per machine ≤ 5 (heartbeats included)']).toEqual({
      target: 'Temporal actions per machine ≤ 5 (heartbeats included)',
      measured: '12',
      verdict: 'FAIL',
    });
    expect(verdicts['worker CPU per machine ≤ 10 ms']).toEqual({
      target: 'worker CPU per machine ≤ 10 ms',
      measured: '45',
      verdict: 'FAIL',
    });
    expect(verdicts['in error + duplicates + strays = 0']?.verdict).toBe('FAIL');
  });
});

describe('the spread (issue 26: two workers at N = 1,000, ±1)', () => {
  const zones = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
  const at = (...zs: Array<string | undefined>) => zs.map((zone) => (zone ? { zone } : {}));

  it("counts every machine by its recorded zone, the plan's zones at 0 when none went there", () => {
    const perZone = machinesPerZone(at('us-east-1a', 'us-east-1b', 'us-east-1a', undefined), zones);
    expect(perZone).toEqual({ 'us-east-1a': 2, 'us-east-1b': 1, 'us-east-1c': 0, [NO_ZONE]: 1 });
    // an empty zone counts: 2 − 0, not 2 − 1; a machine with no zone is shown but not counted
    expect(spreadOf(perZone)).toBe(2);
    expect(perZoneCell(perZone)).toBe('(no zone) 1 / a 2 / b 1 / c 0 (±2)');
  });

  it('passes ±1 and fails ±2 in the targets', () => {
    const spread = (perZone: Record<string, number>) =>
      checkScaleOutTargets(sized(1000, { perZone })).find((c) => c.target.startsWith('spread'));
    expect(spread({ 'us-east-1a': 334, 'us-east-1b': 333, 'us-east-1c': 333 })).toEqual({
      target: 'spread ≤ ±1 (machines per zone, most − least)',
      measured: '1',
      verdict: 'pass',
    });
    expect(spread({ 'us-east-1a': 335, 'us-east-1b': 333, 'us-east-1c': 332 })?.verdict).toBe(
      'FAIL',
    );
    expect(spreadOf(undefined)).toBeUndefined();
    expect(spreadOf({ [NO_ZONE]: 3 })).toBeUndefined();
  });
});
