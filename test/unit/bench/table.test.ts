import type { SizeResult } from '../../../bench/figures';
import { figuresTable, num, renderTable, seconds, targetsTable } from '../../../bench/table';

describe('renderTable', () => {
  it('pads columns, right-aligns numbers and rules the header', () => {
    expect(
      renderTable(
        ['figure', 'N=100', 'N=1000'],
        [
          ['API answer', '2.5 s', '26.0 s'],
          ['duplicates', '0', '12'],
          ['note', 'text', '—'],
        ],
      ),
    ).toBe(
      [
        'figure      N=100  N=1000',
        '----------  -----  ------',
        'API answer  2.5 s  26.0 s',
        'duplicates      0      12',
        'note        text        —',
      ].join('\n'),
    );
  });
});

describe('cell formats', () => {
  it('shows seconds with one decimal and a dash when unmeasured', () => {
    expect(seconds(74_249)).toBe('74.2 s');
    expect(seconds(undefined)).toBe('—');
    expect(num(3)).toBe('3');
    expect(num(1.2345)).toBe('1.23');
    expect(num(undefined)).toBe('—');
  });
});

const result: SizeResult = {
  n: 100,
  notes: [],
  floor: {
    launchedMs: 1000,
    runningMs: 6000,
    runInstancesCalls: 3,
    throttled: 0,
    describeCalls: 6,
  },
  provisioner: {
    n: 100,
    requests: 1,
    apiAnswerMs: 8900,
    launchedMs: 60_000,
    runningMs: 66_000,
    launched: 100,
    running: 100,
    inError: 0,
    duplicates: 0,
    strays: 0,
    timedOut: false,
    ec2Calls: { RunInstances: 300, DescribeInstances: 250 },
    throttled: 200,
    capacity: { readUnits: 1500, writeUnits: 800, calls: {} },
    temporal: {
      workflows: 100,
      events: 4000,
      actions: 3000,
      workflowTasks: 900,
      activityTasks: 1200,
      activityRetries: 300,
    },
    workerPeakRssBytes: 256 * 1024 * 1024,
  },
};

describe('the printed tables', () => {
  it('lists each figure for each size', () => {
    const table = figuresTable([result, { n: 300, notes: ['failed: boom'] }]);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^figure\s+N=100\s+N=300$/);
    expect(lines).toContainEqual(
      expect.stringMatching(/^all launched \(instance id\)\s+60\.0 s\s+—$/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^launched ÷ floor\s+60\s+—$/));
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}RunInstances\s+3 \(300\)\s+—$/));
    expect(lines).toContainEqual(expect.stringMatching(/^DynamoDB RCU per machine\s+15\s+—$/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^Temporal actions per machine \(history, no heartbeats\)\s+30\s+—$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^worker peak RSS \(the largest worker\)\s+256 MiB\s+—$/),
    );
    // one worker: no row per worker
    expect(lines.filter((l) => l.startsWith('  peak RSS'))).toEqual([]);
  });

  it("shows each worker's peak RSS when there are several, and the server's actions beside the history's", () => {
    const two: SizeResult = {
      ...result,
      provisioner: {
        ...result.provisioner!,
        serverActions: 3500,
        workerPeakRssBytes: 300 * 1024 * 1024,
        workerPeakRssBytesByWorker: {
          worker: 300 * 1024 * 1024,
          'worker-2': 200 * 1024 * 1024,
        },
      },
    };
    const lines = figuresTable([two]).split('\n');
    expect(lines).toContainEqual(
      expect.stringMatching(/^worker peak RSS \(the largest worker\)\s+300 MiB$/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}peak RSS worker\s+300 MiB$/));
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}peak RSS worker-2\s+200 MiB$/));
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^ {2}Temporal server's action metric per machine \(heartbeats included\)\s+35$/,
      ),
    );
  });

  it("prints the plan's estimate beside the measured launch, and how long the plan took", () => {
    const planned: SizeResult = {
      ...result,
      provisioner: {
        ...result.provisioner!,
        plan: { estimatedSeconds: 4, coldAnswerMs: 12_345, answerMs: 151.6, notes: [] },
      },
    };
    const lines = figuresTable([planned, result]).split('\n');
    const at = lines.findIndex((l) => l.startsWith('all launched (instance id)'));
    expect(lines[at + 1]).toMatch(/^ {2}the plan's estimatedSeconds \(dry run first\)\s+4 s\s+—$/);
    expect(lines[at + 2]).toMatch(
      /^ {2}the plan answered in \(cold \/ warm caches\)\s+12\.3 s \/ 152 ms\s+—$/,
    );
  });

  it('shows each target with its figure and verdict', () => {
    const lines = targetsTable([result]).split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^all launched ≤ 2 × floor\s+60 FAIL$/));
    expect(lines).toContainEqual(expect.stringMatching(/^duplicates = 0\s+0 pass$/));
    expect(lines).toContainEqual(expect.stringMatching(/^RunInstances calls ≤ 20\s+300 FAIL$/));
  });
});

describe('targets over several sizes', () => {
  it('keeps the growth check in its place although the first size has none', () => {
    // the same capacity over three times the machines: a third of the reads per machine
    const big: SizeResult = { ...result, n: 300, provisioner: { ...result.provisioner!, n: 300 } };
    const lines = targetsTable([result, big]).split('\n');
    const names = lines.slice(2).map((l) => l.split(/\s{2,}/)[0]);
    expect(names).toEqual([
      'all launched ≤ 2 × floor',
      'machines in error = 0',
      'duplicates = 0',
      'RunInstances calls ≤ 20',
      'EC2 calls per machine ≤ 1.5',
      'DynamoDB reads per machine ≤ 1.2 × N=100',
      'Temporal actions per machine ≤ 15',
      'API answer ≤ 3 s, one request',
    ]);
    expect(lines[7]).toMatch(/^DynamoDB reads per machine ≤ 1\.2 × N=100\s+—\s+0\.33 pass$/);
  });
});
