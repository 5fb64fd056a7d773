import { BenchArgsError, parseArgs } from '../../../bench/args';
import { auditInstances } from '../../../bench/audit';
import { backoffMs, splitOverZones } from '../../../bench/floor';
import {
  ACTIVITY_ATTEMPTS,
  CHANGE_VERSION_ATTRIBUTE,
  countHistory,
  emptyTemporalUse,
  LOCAL_ACTIVITY_MARKER,
  LOCAL_ACTIVITY_TASKS,
  sumMetric,
} from '../../../bench/history';
import { parseStat } from '../../../bench/cpu';

describe('auditInstances', () => {
  it('finds duplicates and strays among the live instances only', () => {
    const audit = auditInstances(
      [
        { id: '0', status: 'running', instanceId: 'i-0' },
        { id: '1', status: 'running', instanceId: 'i-1' },
        { id: '2', status: 'error' },
        { id: '3', status: 'allocating' },
      ],
      [
        { instanceId: 'i-0', machine: '0', state: 'running' },
        { instanceId: 'i-1', machine: '1', state: 'pending' },
        { instanceId: 'i-1b', machine: '1', state: 'running' }, // a second instance for machine 1
        { instanceId: 'i-x', machine: '9', state: 'running' }, // no such machine
        { instanceId: 'i-2', machine: '2', state: 'terminated' }, // gone: neither
      ],
    );
    expect(audit).toEqual({ launched: 2, inError: 1, duplicates: 1, strays: 2 });
  });

  it('reports a clean run as clean', () => {
    expect(
      auditInstances(
        [{ id: '0', status: 'running', instanceId: 'i-0' }],
        [{ instanceId: 'i-0', machine: '0', state: 'running' }],
      ),
    ).toEqual({ launched: 1, inError: 0, duplicates: 0, strays: 0 });
  });
});

describe('countHistory', () => {
  it('counts the start, activity attempts, timers, signals and upserts as actions', () => {
    const use = emptyTemporalUse();
    countHistory(
      [
        { workflowExecutionStartedEventAttributes: {} },
        { workflowTaskStartedEventAttributes: {} },
        { upsertWorkflowSearchAttributesEventAttributes: {} },
        { activityTaskScheduledEventAttributes: {} },
        { activityTaskStartedEventAttributes: { attempt: 3 } }, // two retries before this one
        { workflowTaskStartedEventAttributes: {} },
        { timerStartedEventAttributes: {} },
        { activityTaskScheduledEventAttributes: {} }, // still on its first attempt
        { workflowExecutionSignaledEventAttributes: {} },
        { workflowTaskStartedEventAttributes: {} },
      ],
      use,
    );
    expect(use).toEqual({
      workflows: 1,
      events: 10,
      actions: 1 + 1 + 1 + 1 + 4,
      workflowTasks: 3,
      activityTasks: 4,
      activityRetries: 2,
      localActivities: 0,
      localActivityTasks: 0,
      byIdentity: { unknown: { workflowTasks: 3, activityTasks: 1 } },
      actionsByKind: {
        start: 1,
        upsert: 1,
        timer: 1,
        'signal ?': 1,
        [ACTIVITY_ATTEMPTS]: 4,
      },
    });
  });

  it('says what each action was: signals and markers by name, change-version upserts apart', () => {
    const use = emptyTemporalUse();
    const upsert = (fields: Record<string, unknown>) => ({
      upsertWorkflowSearchAttributesEventAttributes: {
        searchAttributes: { indexedFields: fields },
      },
    });
    countHistory(
      [
        { workflowExecutionStartedEventAttributes: {} },
        { workflowTaskStartedEventAttributes: {} },
        {
          markerRecordedEventAttributes: {
            markerName: LOCAL_ACTIVITY_MARKER,
            workflowTaskCompletedEventId: 4,
          },
        },
        upsert({ ProvisioningStatus: {} }),
        { workflowExecutionSignaledEventAttributes: { signalName: 'instanceState' } },
        { workflowTaskStartedEventAttributes: {} },
        { markerRecordedEventAttributes: { markerName: 'core_patch' } },
        upsert({ [CHANGE_VERSION_ATTRIBUTE]: {} }),
        {
          markerRecordedEventAttributes: {
            markerName: LOCAL_ACTIVITY_MARKER,
            workflowTaskCompletedEventId: 9,
          },
        },
        upsert({ ProvisioningStatus: {} }),
        { workflowExecutionSignaledEventAttributes: { signalName: 'instanceState' } },
      ],
      use,
    );
    expect(use.actionsByKind).toEqual({
      start: 1,
      upsert: 2,
      [`upsert ${CHANGE_VERSION_ATTRIBUTE}`]: 1,
      'signal instanceState': 2,
      'marker core_patch': 1,
      [LOCAL_ACTIVITY_TASKS]: 2,
    });
    const sum = Object.values(use.actionsByKind!).reduce((a, b) => a + b, 0);
    expect(sum).toBe(use.actions);
    expect(use.actions).toBe(9);
  });

  it('counts the local activities of one workflow task as one action, other markers one each', () => {
    const use = emptyTemporalUse();
    const la = (task: number) => ({
      markerRecordedEventAttributes: {
        markerName: LOCAL_ACTIVITY_MARKER,
        workflowTaskCompletedEventId: task,
      },
    });
    countHistory(
      [
        { workflowExecutionStartedEventAttributes: {} },
        { workflowTaskStartedEventAttributes: { identity: '11@host' } },
        la(4),
        la(4),
        la(4),
        { markerRecordedEventAttributes: { markerName: 'core_patch' } },
        { activityTaskScheduledEventAttributes: {} },
        { activityTaskStartedEventAttributes: { attempt: 1, identity: '12@host' } },
        { workflowTaskStartedEventAttributes: { identity: '12@host' } },
        la(11),
      ],
      use,
    );
    expect(use).toMatchObject({
      // start, patch marker, activity attempt, and two workflow tasks' local activities
      actions: 1 + 1 + 1 + 2,
      localActivities: 4,
      localActivityTasks: 2,
      byIdentity: {
        '11@host': { workflowTasks: 1, activityTasks: 0 },
        '12@host': { workflowTasks: 1, activityTasks: 1 },
      },
    });
  });
});

describe('sumMetric', () => {
  it("sums a counter's series, and says when there is none", () => {
    const text = [
      '# HELP action action',
      '# TYPE action counter',
      'action{namespace="default",operation="StartWorkflowExecution"} 3',
      'action{namespace="default",operation="RecordActivityTaskHeartbeat"} 2.5',
      'action_latency_bucket{le="1"} 100',
      'service_requests{operation="x"} 9',
    ].join('\n');
    expect(sumMetric(text, 'action')).toBe(5.5);
    expect(sumMetric('action_total 4\n', 'action')).toBe(4);
    expect(sumMetric('service_requests 9\n', 'action')).toBeUndefined();
  });

  it("sums only the series with the labels asked for (one namespace's actions)", () => {
    const text = [
      'action{namespace="default",operation="StartWorkflowExecution"} 3',
      'action{operation="RecordActivityTaskHeartbeat",namespace="default"} 2',
      'action{namespace="temporal-system",operation="StartWorkflowExecution"} 40',
      'action{operation="PollWorkflowTaskQueue"} 7',
    ].join('\n');
    expect(sumMetric(text, 'action', { namespace: 'default' })).toBe(5);
    expect(sumMetric(text, 'action', { namespace: 'temporal-system' })).toBe(40);
    expect(sumMetric(text, 'action', { namespace: 'other' })).toBeUndefined();
    expect(sumMetric(text, 'action')).toBe(52);
  });
});

describe('parseStat', () => {
  it('reads the group and CPU ticks after a command with spaces and parentheses', () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime …
    const line = '4242 (node (worker) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 11';
    expect(parseStat(line)).toEqual({ pgrp: 4242, own: 300, children: 10 });
    expect(parseStat('garbage')).toBeUndefined();
  });
});

describe('the floor', () => {
  it('spreads N over three zones within one', () => {
    expect(splitOverZones(100, 3)).toEqual([34, 33, 33]);
    expect(splitOverZones(1000, 3)).toEqual([334, 333, 333]);
    expect(splitOverZones(2, 3)).toEqual([1, 1, 0]);
  });

  it('backs off with jitter up to a cap', () => {
    expect(backoffMs(1, () => 1)).toBe(250);
    expect(backoffMs(3, () => 1)).toBe(1000);
    expect(backoffMs(10, () => 1)).toBe(4000);
    expect(backoffMs(3, () => 0.5)).toBe(500);
  });
});

describe('parseArgs', () => {
  it('defaults to 100, 300 and 1000 with 15 minutes per size', () => {
    expect(parseArgs([])).toEqual({
      sizes: [100, 300, 1000],
      timeoutMs: 900_000,
      requestTimeoutMs: 60_000,
      floor: true,
      launch: true,
      removal: true,
      destroy: true,
      workers: 1,
      cpuProfile: false,
      ddbCallers: false,
      workerNodeOptions: [],
    });
  });

  it('runs the removal phase alone, or not at all', () => {
    expect(parseArgs(['--removal-only'])).toMatchObject({
      launch: false,
      floor: false,
      removal: true,
    });
    expect(parseArgs(['--no-removal'])).toMatchObject({ launch: true, removal: false });
  });

  it("skips the launch phase's destroy-model with --no-destroy, and only then", () => {
    expect(parseArgs(['--no-removal', '--no-destroy'])).toMatchObject({
      launch: true,
      removal: false,
      destroy: false,
    });
    expect(parseArgs(['--no-removal'])).toMatchObject({ destroy: true });
  });

  it('takes sizes and bounds in either flag form', () => {
    expect(parseArgs(['--sizes', '100,300', '--timeout-min=5', '--no-floor'])).toMatchObject({
      sizes: [100, 300],
      timeoutMs: 300_000,
      floor: false,
    });
  });

  it('takes the number of workers and the CPU profile', () => {
    expect(parseArgs(['--workers', '2', '--cpu-prof'])).toMatchObject({
      workers: 2,
      cpuProfile: true,
    });
    expect(parseArgs(['--workers=3'])).toMatchObject({ workers: 3, cpuProfile: false });
  });

  it('adds Node options to the workers, in the order given', () => {
    expect(
      parseArgs([
        '--worker-node-option=--max-semi-space-size=64',
        '--worker-node-option=--import=./bench/heap-sampling.ts',
      ]),
    ).toMatchObject({
      workerNodeOptions: ['--max-semi-space-size=64', '--import=./bench/heap-sampling.ts'],
    });
  });

  it('keeps DynamoDB totals by call site on request', () => {
    expect(parseArgs(['--ddb-callers'])).toMatchObject({ ddbCallers: true });
  });

  it.each([
    [['--workers', '0'], '--workers takes a whole number from 1 to 8, got 0'],
    [['--workers', '1.5'], '--workers takes a whole number from 1 to 8, got 1.5'],
    [['--workers'], '--workers takes a whole number from 1 to 8, got undefined'],
    [['--sizes', '0'], '--sizes takes whole numbers from 1 to 1000, got "0"'],
    [['--sizes', '100,abc'], '--sizes takes whole numbers from 1 to 1000, got "100,abc"'],
    [['--timeout-min', '-1'], '--timeout-min needs a positive number, got -1'],
    [['--fast'], /^unknown argument "--fast"; usage: npm run bench/],
    [
      ['--no-destroy'],
      "--no-destroy needs --no-removal: it leaves the launch's machines running, under the removal phase's figures",
    ],
    [
      ['--no-removal', '--no-destroy', '--removal-only'],
      "--no-destroy needs --no-removal: it leaves the launch's machines running, under the removal phase's figures",
    ],
    [
      ['--worker-node-option'],
      '--worker-node-option takes one Node option starting with "--" (write --worker-node-option=--flag=value), got undefined',
    ],
    [
      ['--worker-node-option=bench/x.js'],
      '--worker-node-option takes one Node option starting with "--" (write --worker-node-option=--flag=value), got bench/x.js',
    ],
  ])('refuses %j', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(BenchArgsError);
    expect(() => parseArgs(argv)).toThrow(message);
  });
});
