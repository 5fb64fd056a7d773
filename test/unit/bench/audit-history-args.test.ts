import { BenchArgsError, parseArgs } from '../../../bench/args';
import { auditInstances } from '../../../bench/audit';
import { backoffMs, splitOverZones } from '../../../bench/floor';
import { countHistory, emptyTemporalUse } from '../../../bench/history';

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
    });
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

  it('takes sizes and bounds in either flag form', () => {
    expect(parseArgs(['--sizes', '100,300', '--timeout-min=5', '--no-floor'])).toMatchObject({
      sizes: [100, 300],
      timeoutMs: 300_000,
      floor: false,
    });
  });

  it.each([
    [['--sizes', '0'], '--sizes takes whole numbers from 1 to 1000, got "0"'],
    [['--sizes', '100,abc'], '--sizes takes whole numbers from 1 to 1000, got "100,abc"'],
    [['--timeout-min', '-1'], '--timeout-min needs a positive number, got -1'],
    [['--fast'], /^unknown argument "--fast"; usage: npm run bench/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(BenchArgsError);
    expect(() => parseArgs(argv)).toThrow(message);
  });
});
