import { timedOutWorkflowTasks, type HistoryEventLike } from '../../../bench/history';

const T0 = 1_795_763_945_000; // epoch ms the times are counted from
const at = (s: number) => ({ seconds: String(Math.floor((T0 + s * 1000) / 1000)), nanos: 0 });

/** The event `eventId` of a history, `s` seconds after T0, with its attributes. */
function event(
  eventId: number,
  s: number,
  attributes: Omit<HistoryEventLike, 'eventId' | 'eventTime'> = {},
): HistoryEventLike {
  return { eventId, eventTime: at(s), ...attributes };
}

/** machine:bench:982's history in the 07:18 bench: its first task started, then nothing for 60 s. */
const lostFirstTask: HistoryEventLike[] = [
  event(1, 0, { workflowExecutionStartedEventAttributes: {} }),
  event(2, 0, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: 1 }, attempt: 1 } }),
  event(3, 7, {
    workflowTaskStartedEventAttributes: {
      identity: '17712@vm',
      requestId: '537f7bee',
      scheduledEventId: 2,
    },
  }),
  event(4, 67, {
    workflowTaskTimedOutEventAttributes: { scheduledEventId: 2, startedEventId: 3, timeoutType: 1 },
  }),
  event(5, 67, { workflowTaskScheduledEventAttributes: { taskQueue: { kind: 1 }, attempt: 2 } }),
  event(6, 67, {
    workflowTaskStartedEventAttributes: { identity: '17712@vm', scheduledEventId: 5 },
  }),
  { ...event(7, 70), workflowTaskCompletedEventAttributes: {} } as HistoryEventLike,
];

/** A task scheduled on the sticky queue (kind 2) 80 s in, as event 8. */
const stickyScheduled = event(8, 80, {
  workflowTaskScheduledEventAttributes: { taskQueue: { kind: 2 } },
});

describe('timedOutWorkflowTasks', () => {
  it('names a task recorded started that timed out start-to-close, with its times and poll', () => {
    expect(timedOutWorkflowTasks('machine:bench:982', lostFirstTask, T0)).toEqual([
      {
        workflowId: 'machine:bench:982',
        attempt: 1,
        queue: 'normal',
        scheduledS: 0,
        startedS: 7,
        timedOutS: 67,
        identity: '17712@vm',
        requestId: '537f7bee',
      },
    ]);
  });

  it('finds none in a history whose tasks all completed', () => {
    expect(
      timedOutWorkflowTasks('machine:bench:1', [lostFirstTask[0]!, lostFirstTask[1]!], T0),
    ).toEqual([]);
  });

  it('leaves out a sticky task no worker took (schedule-to-start)', () => {
    const history: HistoryEventLike[] = [
      stickyScheduled,
      event(9, 110, {
        workflowTaskTimedOutEventAttributes: { scheduledEventId: 8, timeoutType: 2 },
      }),
    ];
    expect(timedOutWorkflowTasks('machine:bench:2', history, T0)).toEqual([]);
  });

  it('says which queue a timed-out task was on', () => {
    const history: HistoryEventLike[] = [
      stickyScheduled,
      event(9, 81, { workflowTaskStartedEventAttributes: { scheduledEventId: 8 } }),
      event(10, 141, {
        workflowTaskTimedOutEventAttributes: {
          scheduledEventId: 8,
          startedEventId: 9,
          timeoutType: 1,
        },
      }),
    ];
    expect(timedOutWorkflowTasks('machine:bench:3', history, T0)).toMatchObject([
      { queue: 'sticky', attempt: 1, startedS: 81, timedOutS: 141, identity: 'unknown' },
    ]);
  });
});
