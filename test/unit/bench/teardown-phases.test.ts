import {
  gapMeaning,
  machinePhases,
  machineTrail,
  slowestTrails,
  trailLines,
  type TimedEvent,
} from '../../../bench/teardown-phases';

const START_S = 1_000;

/** An event `s` seconds after the DELETE, as a fetched history holds it (enums as numbers). */
function at(s: number, eventId: number, attrs: Partial<TimedEvent>): TimedEvent {
  const whole = Math.floor(START_S + s);
  return {
    eventId,
    eventTime: { seconds: whole, nanos: Math.round((START_S + s - whole) * 1e9) },
    ...attrs,
  };
}

function base64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64');
}

const STICKY = 2;
const START_TO_CLOSE = 1;
const SCHEDULE_TO_START = 2;

/**
 * The slow machine of a two-worker destroy (machine 550 of the 109 s run):
 * its task after tearDownMachine was started for worker A and never
 * completed; after the 60 s task timeout worker B ran it.
 */
const LOST_TASK: TimedEvent[] = [
  at(-80, 1, { workflowExecutionStartedEventAttributes: {} } as Partial<TimedEvent>),
  at(5.0, 13, { workflowExecutionSignaledEventAttributes: { signalName: 'destroy' } }),
  at(5.0, 14, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: STICKY } } }),
  at(15.4, 15, { workflowTaskStartedEventAttributes: { identity: 'A' } }),
  at(15.9, 16, { workflowTaskCompletedEventAttributes: {} }),
  at(15.9, 17, { markerRecordedEventAttributes: { markerName: 'core_local_activity' } }),
  at(16.1, 21, {
    activityTaskScheduledEventAttributes: { activityType: { name: 'tearDownMachine' } },
  }),
  at(16.1, 22, { activityTaskStartedEventAttributes: { scheduledEventId: 21 } }),
  at(46.3, 23, { activityTaskCompletedEventAttributes: { scheduledEventId: 21 } }),
  at(46.3, 24, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: STICKY } } }),
  at(46.5, 25, { workflowTaskStartedEventAttributes: { identity: 'A' } }),
  at(106.5, 26, { workflowTaskTimedOutEventAttributes: { timeoutType: START_TO_CLOSE } }),
  at(106.5, 27, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: 1 } } }),
  at(106.6, 28, { workflowTaskStartedEventAttributes: { identity: 'B' } }),
  at(106.8, 29, { workflowTaskCompletedEventAttributes: {} }),
  at(106.8, 30, {
    markerRecordedEventAttributes: {
      markerName: 'core_local_activity',
      // as the JSON export holds it: base64
      details: { data: { payloads: [{ data: base64({ activity_type: 'removeMachine' }) }] } },
    },
  }),
  at(106.8, 31, { workflowExecutionCompletedEventAttributes: {} }),
];

/** A machine torn down at once, whose sticky task waited out the sticky timeout. */
const STICKY_TIMEOUT: TimedEvent[] = [
  at(2.0, 10, { workflowExecutionSignaledEventAttributes: { signalName: 'destroy' } }),
  at(2.0, 11, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: STICKY } } }),
  at(32.0, 12, { workflowTaskTimedOutEventAttributes: { timeoutType: SCHEDULE_TO_START } }),
  at(32.0, 13, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: 1 } } }),
  at(33.0, 14, { workflowTaskStartedEventAttributes: { identity: 'B' } }),
  at(33.5, 15, { workflowTaskCompletedEventAttributes: {} }),
  at(33.5, 16, { workflowExecutionCompletedEventAttributes: {} }),
];

describe('machineTrail', () => {
  it('names a started workflow task that never completed, and when', () => {
    const trail = machineTrail('550', LOST_TASK, START_S)!;
    expect(trail.machine).toBe('550');
    expect(trail.closed).toBe(true);
    expect(trail.lastS).toBeCloseTo(106.8, 1);
    const longest = trail.gaps[0]!;
    expect(longest.from).toBe('workflow task started by A');
    expect(longest.to).toBe('workflow task timed out (start-to-close)');
    expect(longest.seconds).toBeCloseTo(60, 1);
    expect(longest.atS).toBeCloseTo(106.5, 1);
    expect(gapMeaning(longest)).toMatch(/started but never completed/);
    // the second longest: the activity's own wait for terminated
    expect(trail.gaps[1]).toMatchObject({
      from: 'tearDownMachine started',
      to: 'tearDownMachine completed',
    });
    expect(trail.timeouts).toEqual([
      'workflow task timed out (start-to-close) at 106.5 s after 60.0 s (workflow task started by A)',
    ]);
  });

  it('names a sticky task no worker took within the sticky timeout', () => {
    const trail = machineTrail('7', STICKY_TIMEOUT, START_S)!;
    expect(trail.gaps[0]).toMatchObject({
      from: 'workflow task scheduled (sticky queue)',
      to: 'workflow task timed out (schedule-to-start)',
    });
    expect(gapMeaning(trail.gaps[0]!)).toMatch(/sticky schedule-to-start timeout/);
  });

  it('reads the enum names of a history in JSON as its numbers', () => {
    const json = STICKY_TIMEOUT.map((e) =>
      e.workflowTaskTimedOutEventAttributes
        ? {
            ...e,
            workflowTaskTimedOutEventAttributes: { timeoutType: 'TIMEOUT_TYPE_SCHEDULE_TO_START' },
          }
        : e.workflowTaskScheduledEventAttributes?.taskQueue?.kind === STICKY
          ? {
              ...e,
              workflowTaskScheduledEventAttributes: {
                taskQueue: { kind: 'TASK_QUEUE_KIND_STICKY' },
              },
            }
          : e,
    );
    expect(machineTrail('7', json, START_S)!.gaps[0]).toMatchObject({
      from: 'workflow task scheduled (sticky queue)',
      to: 'workflow task timed out (schedule-to-start)',
    });
  });

  it('is undefined for a workflow that never heard a destroy', () => {
    expect(
      machineTrail(
        '1',
        LOST_TASK.filter((e) => e.eventId !== 13),
        START_S,
      ),
    ).toBeUndefined();
  });

  it('keeps an open workflow as open at its last event', () => {
    const trail = machineTrail('550', LOST_TASK.slice(0, 12), START_S)!;
    expect(trail.closed).toBe(false);
    expect(trail.lastS).toBeCloseTo(106.5, 1);
  });
});

describe('slowestTrails and trailLines', () => {
  it('puts the machine that ended last first and says where its time went', () => {
    const trails = [
      machineTrail('7', STICKY_TIMEOUT, START_S)!,
      machineTrail('550', LOST_TASK, START_S)!,
    ];
    const [slowest, next] = slowestTrails(trails, 2);
    expect(slowest!.machine).toBe('550');
    expect(next!.machine).toBe('7');
    expect(slowestTrails(trails, 1)).toHaveLength(1);
    const lines = trailLines(slowest!, 1);
    expect(lines[0]).toBe('machine 550: closed at 106.8 s');
    expect(lines[1]).toBe(
      '  60.0 s: workflow task started by A → workflow task timed out (start-to-close) (at 106.5 s): ' +
        'a workflow task started but never completed: lost on its way to the worker, or hung there, until the task timeout',
    );
    expect(lines[2]).toMatch(
      /^ {2}timeout: workflow task timed out \(start-to-close\) at 106\.5 s/,
    );
    expect(lines).toHaveLength(3);
    // every gap of 0.1 s or more, as they happened
    const all = trailLines(slowest!);
    expect(all.slice(1, 4)).toEqual([
      '  10.4 s: workflow task scheduled (sticky queue) → workflow task started by A (at 15.4 s): waiting in the task queue for a worker slot',
      '  0.5 s: workflow task started by A → workflow task completed (at 15.9 s)',
      '  0.2 s: local activity recorded → tearDownMachine scheduled (at 16.1 s)',
    ]);
    expect(all.filter((l) => l.includes('timed out (start-to-close) (at'))).toHaveLength(1);
  });
});

describe('machinePhases', () => {
  it('marks the removal by the teardown activity when its answer says so (REMOVED_IN_TEARDOWN)', () => {
    const answer = (value: unknown) => ({
      payloads: [{ data: new TextEncoder().encode(JSON.stringify(value)) }],
    });
    const events = [
      at(1.0, 5, { workflowExecutionSignaledEventAttributes: { signalName: 'destroy' } }),
      at(1.0, 6, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: STICKY } } }),
      at(2.0, 7, { workflowTaskStartedEventAttributes: { identity: 'A' } }),
      at(2.1, 8, { workflowTaskCompletedEventAttributes: {} }),
      at(2.1, 9, {
        markerRecordedEventAttributes: {
          markerName: 'core_local_activity',
          details: {
            data: {
              payloads: [{ data: new TextEncoder().encode('{"activity_type":"loadMachine"}') }],
            },
          },
        },
      }),
      at(2.1, 10, {
        activityTaskScheduledEventAttributes: { activityType: { name: 'tearDownMachine' } },
      }),
      at(2.2, 11, { activityTaskStartedEventAttributes: { scheduledEventId: 10 } }),
      at(30.0, 12, {
        activityTaskCompletedEventAttributes: {
          scheduledEventId: 10,
          result: answer({ instanceIds: ['i-1'], remaining: [], removed: { modelRemoved: false } }),
        },
      }),
      at(35.0, 13, { workflowExecutionCompletedEventAttributes: {} }),
    ];
    const phases = machinePhases(events, START_S);
    expect(phases['machine removed']).toBeCloseTo(30.0, 1);
    expect(phases['local activity']).toBeCloseTo(2.1, 1);
    expect(phases.closed).toBeCloseTo(35.0, 1);
    // an answer without `removed` (the workflow removes it after) is no removal
    const unremoved = events.map((e) =>
      e.eventId === 12
        ? {
            ...e,
            activityTaskCompletedEventAttributes: {
              scheduledEventId: 10,
              result: answer({ instanceIds: ['i-1'], remaining: [] }),
            },
          }
        : e,
    );
    expect(machinePhases(unremoved, START_S)['machine removed']).toBeUndefined();
  });

  it('marks the teardown of the lost task machine', () => {
    const phases = machinePhases(LOST_TASK, START_S);
    expect(phases['destroy signal']).toBeCloseTo(5.0, 1);
    expect(phases['first task started']).toBeCloseTo(15.4, 1);
    expect(phases['tearDownMachine completed']).toBeCloseTo(46.3, 1);
    expect(phases['local activity']).toBeCloseTo(106.8, 1);
    // the workflow's removeMachine (a local activity's marker), not the first task's read
    expect(phases['machine removed']).toBeCloseTo(106.8, 1);
    expect(phases.closed).toBeCloseTo(106.8, 1);
    expect(phases['workflow tasks']).toBe(3);
  });
});
