import { timedOutWorkflowTasks, type HistoryEventLike } from '../../../bench/history';

const T0 = 1_795_763_945_000; // epoch ms the times are counted from
const at = (s: number) => ({ seconds: String(Math.floor((T0 + s * 1000) / 1000)), nanos: 0 });

/** machine:bench:982's history in the 07:18 bench: its first task started, then nothing for 60 s. */
const lostFirstTask: HistoryEventLike[] = [
  { eventId: 1, eventTime: at(0), workflowExecutionStartedEventAttributes: {} },
  {
    eventId: 2,
    eventTime: at(0),
    workflowTaskScheduledEventAttributes: { taskQueue: { kind: 1 }, attempt: 1 },
  },
  {
    eventId: 3,
    eventTime: at(7),
    workflowTaskStartedEventAttributes: {
      identity: '17712@vm',
      requestId: '537f7bee',
      scheduledEventId: 2,
    },
  },
  {
    eventId: 4,
    eventTime: at(67),
    workflowTaskTimedOutEventAttributes: { scheduledEventId: 2, startedEventId: 3, timeoutType: 1 },
  },
  {
    eventId: 5,
    eventTime: at(67),
    workflowTaskScheduledEventAttributes: { taskQueue: { kind: 1 }, attempt: 2 },
  },
  {
    eventId: 6,
    eventTime: at(67),
    workflowTaskStartedEventAttributes: { identity: '17712@vm', scheduledEventId: 5 },
  },
  { eventId: 7, eventTime: at(70), workflowTaskCompletedEventAttributes: {} } as HistoryEventLike,
];

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
      {
        eventId: 8,
        eventTime: at(80),
        workflowTaskScheduledEventAttributes: { taskQueue: { kind: 2 } },
      },
      {
        eventId: 9,
        eventTime: at(110),
        workflowTaskTimedOutEventAttributes: { scheduledEventId: 8, timeoutType: 2 },
      },
    ];
    expect(timedOutWorkflowTasks('machine:bench:2', history, T0)).toEqual([]);
  });

  it('says which queue a timed-out task was on', () => {
    const history: HistoryEventLike[] = [
      {
        eventId: 8,
        eventTime: at(80),
        workflowTaskScheduledEventAttributes: { taskQueue: { kind: 2 } },
      },
      {
        eventId: 9,
        eventTime: at(81),
        workflowTaskStartedEventAttributes: { scheduledEventId: 8 },
      },
      {
        eventId: 10,
        eventTime: at(141),
        workflowTaskTimedOutEventAttributes: {
          scheduledEventId: 8,
          startedEventId: 9,
          timeoutType: 1,
        },
      },
    ];
    expect(timedOutWorkflowTasks('machine:bench:3', history, T0)).toMatchObject([
      { queue: 'sticky', attempt: 1, startedS: 81, timedOutS: 141, identity: 'unknown' },
    ]);
  });
});
