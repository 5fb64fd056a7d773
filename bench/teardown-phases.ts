/**
 * Where a destroy-model's time goes, machine by machine, from the machines'
 * workflow histories (issue 30): when each workflow heard the destroy, when
 * its first workflow task after it ran, when each teardown activity was
 * scheduled, started and completed, and when the workflow ended (the machine
 * removed). Times are seconds from the DELETE; each phase is summarized over
 * the machines as percentiles.
 */

/** The parts of `temporal.api.history.v1.HistoryEvent` read here. */
export interface TimedEvent {
  eventId?: number | string | { toString(): string } | null;
  eventTime?: {
    seconds?: number | string | { toString(): string } | null;
    nanos?: number | null;
  } | null;
  workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null;
  workflowTaskScheduledEventAttributes?: unknown;
  workflowTaskStartedEventAttributes?: unknown;
  workflowTaskCompletedEventAttributes?: unknown;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
  activityTaskStartedEventAttributes?: {
    scheduledEventId?: number | string | { toString(): string } | null;
  } | null;
  activityTaskCompletedEventAttributes?: {
    scheduledEventId?: number | string | { toString(): string } | null;
  } | null;
  activityTaskFailedEventAttributes?: unknown;
  activityTaskTimedOutEventAttributes?: unknown;
  markerRecordedEventAttributes?: { markerName?: string | null } | null;
  workflowExecutionCompletedEventAttributes?: unknown;
  workflowExecutionContinuedAsNewEventAttributes?: unknown;
}

/** Seconds (epoch) of an event, or undefined. */
function secondsOf(e: TimedEvent): number | undefined {
  const t = e.eventTime;
  if (!t) return undefined;
  return Number(String(t.seconds ?? 0)) + (t.nanos ?? 0) / 1e9;
}

/** One machine's teardown, seconds from the DELETE (absent when it did not happen). */
export type MachinePhases = Record<string, number>;

/**
 * The teardown's marks of one machine workflow's history: `destroy signal`,
 * `first task started` (after the signal), `<activity> scheduled/started/
 * completed` (first schedule, first start, last completion of each type after
 * the signal), `local activity`, `closed`, and `task queue wait` (the sum of
 * its workflow tasks' schedule-to-start after the signal) and `tasks` (their
 * count). `startS`: the DELETE's epoch seconds.
 */
export function machinePhases(events: readonly TimedEvent[], startS: number): MachinePhases {
  const out: MachinePhases = {};
  const at = (name: string, t: number | undefined, last = false) => {
    if (t === undefined) return;
    const s = t - startS;
    if (last || out[name] === undefined) out[name] = s;
  };
  let signalled = false;
  const scheduled = new Map<string, string>();
  let taskScheduledAt: number | undefined;
  let queueWait = 0;
  let tasks = 0;
  let failures = 0;
  for (const e of events) {
    const t = secondsOf(e);
    if (e.workflowExecutionSignaledEventAttributes?.signalName === 'destroy' && !signalled) {
      signalled = true;
      at('destroy signal', t);
      continue;
    }
    if (!signalled) continue;
    if (e.workflowTaskScheduledEventAttributes) taskScheduledAt = t;
    if (e.workflowTaskStartedEventAttributes) {
      at('first task started', t);
      if (t !== undefined && taskScheduledAt !== undefined) queueWait += t - taskScheduledAt;
      tasks += 1;
    }
    const type = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (type) {
      scheduled.set(String(e.eventId), type);
      at(`${type} scheduled`, t);
    }
    const startedOf = e.activityTaskStartedEventAttributes?.scheduledEventId;
    if (startedOf !== undefined && startedOf !== null) {
      at(`${scheduled.get(String(startedOf)) ?? '?'} started`, t);
    }
    const completedOf = e.activityTaskCompletedEventAttributes?.scheduledEventId;
    if (completedOf !== undefined && completedOf !== null) {
      at(`${scheduled.get(String(completedOf)) ?? '?'} completed`, t, true);
    }
    if (e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes) failures += 1;
    if (e.markerRecordedEventAttributes) at('local activity', t, true);
    if (
      e.workflowExecutionCompletedEventAttributes ||
      e.workflowExecutionContinuedAsNewEventAttributes
    ) {
      at('closed', t);
    }
  }
  if (signalled) {
    out['task queue wait (sum)'] = queueWait;
    out['workflow tasks'] = tasks;
    out['activity failures'] = failures;
  }
  return out;
}

/** Percentiles of each mark over the machines that have it. */
export interface PhaseSummary {
  mark: string;
  machines: number;
  p10: number;
  p50: number;
  p90: number;
  max: number;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

/** Each mark's percentiles over `machines`, in the order marks first appear. */
export function summarizePhases(machines: readonly MachinePhases[]): PhaseSummary[] {
  const order: string[] = [];
  const values = new Map<string, number[]>();
  for (const m of machines) {
    for (const [mark, v] of Object.entries(m)) {
      let list = values.get(mark);
      if (!list) {
        values.set(mark, (list = []));
        order.push(mark);
      }
      list.push(v);
    }
  }
  const rank = (mark: string): number => {
    const v = values.get(mark)!.sort((a, b) => a - b);
    return mark.includes('(sum)') || /tasks|failures/.test(mark) ? Infinity : quantile(v, 0.5);
  };
  return order
    .sort((a, b) => rank(a) - rank(b))
    .map((mark) => {
      const v = values.get(mark)!;
      return {
        mark,
        machines: v.length,
        p10: quantile(v, 0.1),
        p50: quantile(v, 0.5),
        p90: quantile(v, 0.9),
        max: v[v.length - 1]!,
      };
    });
}

/** The summary as text lines, seconds to one decimal. */
export function phaseLines(summary: readonly PhaseSummary[]): string[] {
  const f = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));
  const width = Math.max(...summary.map((s) => s.mark.length), 4);
  return [
    `${'mark'.padEnd(width)}  machines     p10     p50     p90     max`,
    ...summary.map(
      (s) =>
        `${s.mark.padEnd(width)}  ${String(s.machines).padStart(8)} ${f(s.p10).padStart(7)} ${f(
          s.p50,
        ).padStart(7)} ${f(s.p90).padStart(7)} ${f(s.max).padStart(7)}`,
    ),
  ];
}

/** The removal workflow's marks: its activity's start and completion (every Dead machine told). */
export function removalMarks(events: readonly TimedEvent[], startS: number): MachinePhases {
  const out: MachinePhases = {};
  for (const e of events) {
    const t = secondsOf(e);
    if (t === undefined) continue;
    if (e.activityTaskStartedEventAttributes)
      out['removal workflow: activity started'] ??= t - startS;
    if (e.activityTaskCompletedEventAttributes)
      out['removal workflow: every machine told'] = t - startS;
  }
  return out;
}
