import {
  ActivityFailure,
  ApplicationFailure,
  RetryState,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { blockedRetryMs } from '../../../workflows/teardown';
import {
  attemptFailedMessage,
  everyZoneFailedMessage,
  goDuration,
  recordFailedMessage,
  startingMessage,
  zoneFailoverMessage,
  stepFailedMessage,
} from '../../../temporal/messages';

describe('goDuration (Go time.Duration.String)', () => {
  it.each<[number, string]>([
    [0, '0s'],
    [1, '1ms'],
    [500, '500ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [10_000, '10s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [3_723_500, '1h2m3.5s'],
  ])('%d ms → %s', (ms, text) => {
    expect(goDuration(ms)).toBe(text);
  });
});

describe('status messages', () => {
  const cause =
    'InsufficientInstanceCapacity: We currently do not have sufficient c7a.medium capacity';

  it('says which zone and attempt a launch is in', () => {
    expect(startingMessage('us-east-1b', 2, 10)).toBe(
      'starting in zone "us-east-1b" (attempt 2 of 10)',
    );
  });

  it('words a zone failover as Juju does, without a delay (the next zone is tried at once)', () => {
    expect(zoneFailoverMessage('3', 'us-east-1b', cause)).toBe(
      `failed to start machine 3 in zone "us-east-1b", retrying with new availability zone: ${cause}`,
    );
  });

  it("words a spent attempt exactly as Juju's provisioner does", () => {
    expect(attemptFailedMessage('3', cause, 10_000, 9)).toBe(
      `failed to start machine 3 (${cause}), retrying in 10s (9 more attempts)`,
    );
    expect(attemptFailedMessage('0/lxd/1', 'boom', 500, 1)).toBe(
      'failed to start machine 0/lxd/1 (boom), retrying in 500ms (1 more attempts)',
    );
  });

  it('names every zone tried, in order, when more than one failed; else the cause as it is', () => {
    expect(everyZoneFailedMessage(['us-east-1c', 'us-east-1a', 'us-east-1b'], cause)).toBe(
      `every zone tried failed (us-east-1c, us-east-1a, us-east-1b); the last: ${cause}`,
    );
    expect(everyZoneFailedMessage(['us-east-1a'], cause)).toBe(cause);
    expect(everyZoneFailedMessage([], cause)).toBe(cause);
    // inside a spent attempt's message, as the workflow records it
    expect(attemptFailedMessage('3', everyZoneFailedMessage(['a', 'b'], 'boom'), 500, 1)).toBe(
      'failed to start machine 3 (every zone tried failed (a, b); the last: boom), retrying in 500ms (1 more attempts)',
    );
  });

  it('says an unrecordable instance was terminated', () => {
    expect(recordFailedMessage('4', 'i-0abc', 'throughput exceeded')).toBe(
      'cannot record instance i-0abc for machine 4 (terminated): throughput exceeded',
    );
  });
});

describe('stepFailedMessage', () => {
  it('names the activity and every recorded cause of a step out of its time', () => {
    const last = ApplicationFailure.create({ message: 'Unavailable: The server is overloaded' });
    const timeout = new TimeoutFailure(
      'activity ScheduleToClose timeout',
      undefined,
      TimeoutType.SCHEDULE_TO_CLOSE,
    );
    Object.assign(timeout, { cause: last });
    const err = new ActivityFailure(
      'Activity task failed',
      'planLaunch',
      '1',
      RetryState.TIMEOUT,
      'worker',
      timeout,
    );
    expect(stepFailedMessage(err)).toBe(
      'planLaunch failed: activity ScheduleToClose timeout: Unavailable: The server is overloaded',
    );
  });

  it('falls back to the failure itself when it has no cause', () => {
    expect(stepFailedMessage({ message: 'gone' })).toBe('a step failed: gone');
  });
});

describe('blockedRetryMs', () => {
  it.each([
    [10_000, 60_000],
    [500, 3_000],
    [0, 1_000],
    [60_000, 60_000],
  ])('retry delay %d ms: a blocked teardown tries again every %d ms', (delay, every) => {
    expect(blockedRetryMs(delay)).toBe(every);
  });
});
