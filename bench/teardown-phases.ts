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
  workflowTaskScheduledEventAttributes?: {
    taskQueue?: { kind?: number | string | null } | null;
  } | null;
  workflowTaskStartedEventAttributes?: { identity?: string | null } | null;
  workflowTaskCompletedEventAttributes?: unknown;
  workflowTaskTimedOutEventAttributes?: { timeoutType?: number | string | null } | null;
  workflowTaskFailedEventAttributes?: unknown;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
  activityTaskStartedEventAttributes?: {
    scheduledEventId?: number | string | { toString(): string } | null;
  } | null;
  activityTaskCompletedEventAttributes?: {
    scheduledEventId?: number | string | { toString(): string } | null;
    identity?: string | null;
    result?: { payloads?: Array<{ data?: Uint8Array | string | null }> | null } | null;
  } | null;
  activityTaskFailedEventAttributes?: unknown;
  activityTaskTimedOutEventAttributes?: unknown;
  markerRecordedEventAttributes?: {
    markerName?: string | null;
    details?: Record<
      string,
      { payloads?: Array<{ data?: Uint8Array | string | null }> | null } | null
    > | null;
  } | null;
  workflowExecutionCompletedEventAttributes?: unknown;
  workflowExecutionContinuedAsNewEventAttributes?: unknown;
  upsertWorkflowSearchAttributesEventAttributes?: unknown;
  timerStartedEventAttributes?: unknown;
  timerFiredEventAttributes?: unknown;
}

/** A payload's JSON (a fetched history holds bytes, its JSON export base64), or undefined. */
function payloadJson(
  payloads: Array<{ data?: Uint8Array | string | null }> | null | undefined,
): unknown {
  const data = payloads?.[0]?.data;
  if (data === undefined || data === null) return undefined;
  try {
    const text =
      typeof data === 'string'
        ? Buffer.from(data, 'base64').toString('utf8')
        : Buffer.from(data).toString('utf8');
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Whether the event is the machine's removal: the workflow's removeMachine
 * (a local activity's marker, whose data names its type), or a one-step
 * teardown whose answer says it removed the machine (REMOVED_IN_TEARDOWN).
 */
function removalOf(e: TimedEvent): boolean {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName === 'core_local_activity') {
    const data = payloadJson(marker.details?.data?.payloads) as { activity_type?: unknown };
    return data?.activity_type === 'removeMachine';
  }
  const result = e.activityTaskCompletedEventAttributes?.result;
  if (!result) return false;
  const answer = payloadJson(result.payloads) as { removed?: unknown } | undefined;
  return typeof answer === 'object' && answer !== null && answer.removed !== undefined;
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
 * the signal), `local activity` (the last), `machine removed` (by the
 * workflow's removeMachine, or by the teardown's activity), `closed`, and `task queue wait` (the sum of
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
    if (removalOf(e)) at('machine removed', t);
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

/** Temporal's TimeoutType, as a fetched history (a number) or its JSON (a name) holds it. */
function timeoutName(type: number | string | null | undefined): string {
  const names: Record<string, string> = {
    '1': 'start-to-close',
    '2': 'schedule-to-start',
    '3': 'schedule-to-close',
    '4': 'heartbeat',
  };
  const text = String(type ?? '');
  return (
    names[text] ??
    text
      .replace(/^TIMEOUT_TYPE_/, '')
      .toLowerCase()
      .replace(/_/g, '-')
  );
}

function isSticky(kind: number | string | null | undefined): boolean {
  return kind === 2 || kind === 'TASK_QUEUE_KIND_STICKY';
}

/** What an event is, in a few words: a workflow task's step (and queue), an activity's type. */
function eventLabel(e: TimedEvent, activityTypes: ReadonlyMap<string, string>): string {
  const ref = (id: TimedEvent['eventId']) => activityTypes.get(String(id)) ?? 'activity';
  if (e.workflowExecutionSignaledEventAttributes) {
    return `signal ${e.workflowExecutionSignaledEventAttributes.signalName ?? '?'}`;
  }
  if (e.workflowTaskScheduledEventAttributes) {
    const sticky = isSticky(e.workflowTaskScheduledEventAttributes.taskQueue?.kind);
    return `workflow task scheduled${sticky ? ' (sticky queue)' : ''}`;
  }
  if (e.workflowTaskStartedEventAttributes) {
    const by = e.workflowTaskStartedEventAttributes.identity;
    return `workflow task started${by ? ` by ${by}` : ''}`;
  }
  if (e.workflowTaskCompletedEventAttributes) return 'workflow task completed';
  if (e.workflowTaskTimedOutEventAttributes) {
    return `workflow task timed out (${timeoutName(e.workflowTaskTimedOutEventAttributes.timeoutType)})`;
  }
  if (e.workflowTaskFailedEventAttributes) return 'workflow task failed';
  const type = e.activityTaskScheduledEventAttributes?.activityType?.name;
  if (type) return `${type} scheduled`;
  if (e.activityTaskStartedEventAttributes) {
    return `${ref(e.activityTaskStartedEventAttributes.scheduledEventId)} started`;
  }
  if (e.activityTaskCompletedEventAttributes) {
    return `${ref(e.activityTaskCompletedEventAttributes.scheduledEventId)} completed`;
  }
  if (e.activityTaskFailedEventAttributes) return 'activity failed';
  if (e.activityTaskTimedOutEventAttributes) return 'activity timed out';
  if (e.markerRecordedEventAttributes) {
    const name = e.markerRecordedEventAttributes.markerName ?? '?';
    return name === 'core_local_activity' ? 'local activity recorded' : `marker ${name}`;
  }
  if (e.workflowExecutionCompletedEventAttributes) return 'closed';
  if (e.workflowExecutionContinuedAsNewEventAttributes) return 'continued as new';
  if (e.upsertWorkflowSearchAttributesEventAttributes) return 'search attributes upserted';
  if (e.timerStartedEventAttributes) return 'timer started';
  if (e.timerFiredEventAttributes) return 'timer fired';
  return 'event';
}

/** The time between two consecutive events of a machine's teardown. */
export interface TeardownGap {
  /** The earlier event, in a few words. */
  from: string;
  /** The later event. */
  to: string;
  seconds: number;
  /** When the later event happened, seconds from the DELETE. */
  atS: number;
}

/** One machine's teardown as its history tells it: when it ended, and its longest waits. */
export interface MachineTrail {
  machine: string;
  /** When its last event happened (its close, if it closed), seconds from the DELETE. */
  lastS: number;
  closed: boolean;
  /** Every gap between consecutive events after the destroy signal, longest first. */
  gaps: TeardownGap[];
  /** Workflow tasks that timed out, each with what it waited for. */
  timeouts: string[];
}

/**
 * What a gap most likely was, where the history alone says so: a sticky
 * task not picked up (PROVISIONER_STICKY_TIMEOUT_S), a started task never
 * completed (lost between server and worker, or hung in the worker: its
 * start-to-close timeout, the machine workflow's task timeout).
 */
export function gapMeaning(gap: TeardownGap): string | undefined {
  if (gap.to.includes('timed out (schedule-to-start)')) {
    return 'a sticky-queue task no worker took: the sticky schedule-to-start timeout';
  }
  if (
    gap.to.includes('timed out (start-to-close)') &&
    gap.from.startsWith('workflow task started')
  ) {
    return 'a workflow task started but never completed: lost on its way to the worker, or hung there, until the task timeout';
  }
  if (
    gap.from.startsWith('workflow task scheduled') &&
    gap.to.startsWith('workflow task started')
  ) {
    return 'waiting in the task queue for a worker slot';
  }
  return undefined;
}

/**
 * The trail of one machine workflow's teardown (events after its first
 * destroy signal); undefined when it never heard one.
 */
export function machineTrail(
  machine: string,
  events: readonly TimedEvent[],
  startS: number,
): MachineTrail | undefined {
  const activityTypes = new Map<string, string>();
  const gaps: TeardownGap[] = [];
  const timeouts: string[] = [];
  let previous: { label: string; s: number } | undefined;
  let closed = false;
  for (const e of events) {
    const type = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (type) activityTypes.set(String(e.eventId), type);
    const t = secondsOf(e);
    if (t === undefined) continue;
    const s = t - startS;
    const label = eventLabel(e, activityTypes);
    if (!previous) {
      if (e.workflowExecutionSignaledEventAttributes?.signalName === 'destroy') {
        previous = { label, s };
      }
      continue;
    }
    const gap = { from: previous.label, to: label, seconds: s - previous.s, atS: s };
    gaps.push(gap);
    if (e.workflowTaskTimedOutEventAttributes) {
      timeouts.push(
        `${label} at ${s.toFixed(1)} s after ${gap.seconds.toFixed(1)} s (${gap.from})`,
      );
    }
    if (
      e.workflowExecutionCompletedEventAttributes ||
      e.workflowExecutionContinuedAsNewEventAttributes
    ) {
      closed = true;
    }
    previous = { label, s };
  }
  if (!previous) return undefined;
  gaps.sort((a, b) => b.seconds - a.seconds);
  return { machine, lastS: previous.s, closed, gaps, timeouts };
}

/** The `k` machines whose teardown ended last (an open one counts as ending at its last event). */
export function slowestTrails(trails: readonly MachineTrail[], k: number): MachineTrail[] {
  return [...trails].sort((a, b) => b.lastS - a.lastS).slice(0, k);
}

/**
 * A trail as text: when it ended, its `top` longest gaps (with what each
 * likely was), its timeouts. `top` undefined: every gap of 0.1 s or more,
 * in the order they happened.
 */
export function trailLines(trail: MachineTrail, top?: number): string[] {
  const f = (x: number) => x.toFixed(1);
  const lines = [
    `machine ${trail.machine}: ${trail.closed ? 'closed' : 'still open'} at ${f(trail.lastS)} s`,
  ];
  const gaps =
    top === undefined
      ? trail.gaps.filter((g) => g.seconds >= 0.1).sort((a, b) => a.atS - b.atS)
      : trail.gaps.slice(0, top);
  for (const gap of gaps) {
    const meaning = gapMeaning(gap);
    lines.push(
      `  ${f(gap.seconds)} s: ${gap.from} → ${gap.to} (at ${f(gap.atS)} s)${meaning ? `: ${meaning}` : ''}`,
    );
  }
  for (const t of trail.timeouts) lines.push(`  timeout: ${t}`);
  return lines;
}
