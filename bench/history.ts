import type { TemporalUse, TimedOutWorkflowTask } from './figures';

/**
 * Counts over one workflow's history, read by attribute presence (the shape
 * of `temporal.api.history.v1.HistoryEvent`). An "action" follows Temporal
 * Cloud's billing: the workflow's start, each activity attempt (retries
 * included: a started event carries its attempt number), each timer,
 * signal, search-attribute upsert, child workflow start, external signal
 * and marker other than a local activity's, and one for all the local
 * activities a workflow task ran (their markers name the task that
 * completed them). Activity heartbeats are actions too but leave nothing in
 * the history: the bench reads them, with every other action, from the
 * Temporal server's own `action` metric (bench/run-size.ts).
 */
type EventIdLike = number | string | { toString(): string } | null | undefined;

export interface HistoryEventLike {
  eventId?: EventIdLike;
  eventTime?: { seconds?: EventIdLike; nanos?: number | null } | null;
  workflowExecutionStartedEventAttributes?: unknown;
  workflowTaskScheduledEventAttributes?: {
    taskQueue?: { kind?: number | null } | null;
    attempt?: number | null;
  } | null;
  workflowTaskStartedEventAttributes?: {
    identity?: string | null;
    requestId?: string | null;
    scheduledEventId?: EventIdLike;
  } | null;
  workflowTaskTimedOutEventAttributes?: {
    scheduledEventId?: EventIdLike;
    startedEventId?: EventIdLike;
    timeoutType?: number | null;
  } | null;
  activityTaskScheduledEventAttributes?: unknown;
  activityTaskStartedEventAttributes?: {
    attempt?: number | null;
    identity?: string | null;
  } | null;
  timerStartedEventAttributes?: unknown;
  workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null;
  upsertWorkflowSearchAttributesEventAttributes?: {
    searchAttributes?: { indexedFields?: Record<string, unknown> | null } | null;
  } | null;
  markerRecordedEventAttributes?: {
    markerName?: string | null;
    workflowTaskCompletedEventId?: number | string | { toString(): string } | null;
  } | null;
  startChildWorkflowExecutionInitiatedEventAttributes?: unknown;
  signalExternalWorkflowExecutionInitiatedEventAttributes?: unknown;
  workflowPropertiesModifiedEventAttributes?: unknown;
}

/** The marker the SDKs record for each local activity's result. */
export const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** The search attribute the SDKs upsert with a `patched()` marker. */
export const CHANGE_VERSION_ATTRIBUTE = 'TemporalChangeVersion';

/**
 * What an event that is an action is, for `actionsByKind`: the start, each
 * signal by its name, each marker by its name, an upsert (one that sets the
 * SDK's change version apart), a timer, a child start, an external signal.
 */
function actionKind(e: HistoryEventLike): string | undefined {
  if (e.workflowExecutionStartedEventAttributes) return 'start';
  if (e.workflowExecutionSignaledEventAttributes) {
    return `signal ${e.workflowExecutionSignaledEventAttributes.signalName ?? '?'}`;
  }
  if (e.upsertWorkflowSearchAttributesEventAttributes) {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields;
    return fields && CHANGE_VERSION_ATTRIBUTE in fields
      ? `upsert ${CHANGE_VERSION_ATTRIBUTE}`
      : 'upsert';
  }
  if (e.markerRecordedEventAttributes) {
    return `marker ${e.markerRecordedEventAttributes.markerName ?? '?'}`;
  }
  if (e.timerStartedEventAttributes) return 'timer';
  if (e.startChildWorkflowExecutionInitiatedEventAttributes) return 'child workflow start';
  if (e.signalExternalWorkflowExecutionInitiatedEventAttributes) return 'external signal';
  if (e.workflowPropertiesModifiedEventAttributes) return 'properties modified';
  return undefined;
}

/** Activity attempts and the local activities' tasks, as `actionsByKind` names them. */
export const ACTIVITY_ATTEMPTS = 'activity attempts';
export const LOCAL_ACTIVITY_TASKS = 'local activities (one per workflow task)';

export function emptyTemporalUse(): TemporalUse {
  return {
    workflows: 0,
    events: 0,
    actions: 0,
    workflowTasks: 0,
    activityTasks: 0,
    activityRetries: 0,
    localActivities: 0,
    localActivityTasks: 0,
    byIdentity: {},
    actionsByKind: {},
  };
}

export function countHistory(events: readonly HistoryEventLike[], into: TemporalUse): void {
  into.workflows += 1;
  into.events += events.length;
  let scheduled = 0;
  let attempts = 0;
  let started = 0;
  const localActivityTasks = new Set<string>();
  const byIdentity = (into.byIdentity ??= {});
  const of = (identity: string | null | undefined) =>
    (byIdentity[identity || 'unknown'] ??= { workflowTasks: 0, activityTasks: 0 });
  const byKind = (into.actionsByKind ??= {});
  const add = (kind: string, n: number) => {
    if (n > 0) byKind[kind] = (byKind[kind] ?? 0) + n;
  };
  for (const e of events) {
    if (e.workflowExecutionStartedEventAttributes) {
      into.actions += 1;
      add('start', 1);
    }
    if (e.workflowTaskStartedEventAttributes) {
      into.workflowTasks += 1;
      of(e.workflowTaskStartedEventAttributes.identity).workflowTasks += 1;
    }
    if (e.activityTaskScheduledEventAttributes) scheduled += 1;
    if (e.activityTaskStartedEventAttributes) {
      started += 1;
      attempts += Math.max(1, e.activityTaskStartedEventAttributes.attempt ?? 1);
      of(e.activityTaskStartedEventAttributes.identity).activityTasks += 1;
    }
    const marker = e.markerRecordedEventAttributes;
    if (marker && marker.markerName === LOCAL_ACTIVITY_MARKER) {
      into.localActivities = (into.localActivities ?? 0) + 1;
      localActivityTasks.add(String(marker.workflowTaskCompletedEventId ?? 'unknown'));
    } else if (
      marker ||
      e.timerStartedEventAttributes ||
      e.workflowExecutionSignaledEventAttributes ||
      e.upsertWorkflowSearchAttributesEventAttributes ||
      e.startChildWorkflowExecutionInitiatedEventAttributes ||
      e.signalExternalWorkflowExecutionInitiatedEventAttributes ||
      e.workflowPropertiesModifiedEventAttributes
    ) {
      into.actions += 1;
      add(actionKind(e)!, 1);
    }
  }
  // all the local activities one workflow task ran: one action
  into.actions += localActivityTasks.size;
  into.localActivityTasks = (into.localActivityTasks ?? 0) + localActivityTasks.size;
  // An activity still retrying has no started event yet: its attempts so far are not in the history.
  const activityAttempts = attempts + (scheduled - started);
  into.actions += activityAttempts;
  add(LOCAL_ACTIVITY_TASKS, localActivityTasks.size);
  add(ACTIVITY_ATTEMPTS, activityAttempts);
  into.activityTasks += activityAttempts;
  into.activityRetries += attempts - started;
}

/**
 * The sum of a counter's samples in Prometheus text exposition
 * (`name{labels} value`, or `name_total`); undefined when it has none.
 * With `labels`, only the series that carry each of them with that value
 * (e.g. `{ namespace: 'default' }`: one namespace's actions, not the
 * system namespace's).
 */
export function sumMetric(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || (m[1] !== name && m[1] !== `${name}_total`)) continue;
    const has = new Map<string, string>();
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      has.set(l[1]!, l[2]!);
    }
    if (Object.entries(labels).some(([k, v]) => has.get(k) !== v)) continue;
    const v = Number(m[3]);
    if (Number.isFinite(v)) total = (total ?? 0) + v;
  }
  return total;
}

/** `temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE`, and the sticky queue's kind. */
const START_TO_CLOSE = 1;
const STICKY_QUEUE = 2;

function epochMs(e: HistoryEventLike): number {
  const t = e.eventTime;
  return Number(String(t?.seconds ?? 0)) * 1000 + (t?.nanos ?? 0) / 1e6;
}

/**
 * The workflow tasks of one history that a worker was recorded as having
 * started and that then timed out start-to-close: the server handed the task
 * to a poll and never heard of it again. Times are seconds after `fromMs`
 * (epoch ms). A sticky queue's schedule-to-start timeout (no worker took it)
 * is not one.
 */
export function timedOutWorkflowTasks(
  workflowId: string,
  events: readonly HistoryEventLike[],
  fromMs: number,
): TimedOutWorkflowTask[] {
  const byId = new Map<string, HistoryEventLike>();
  for (const e of events) byId.set(String(e.eventId ?? ''), e);
  const s = (e: HistoryEventLike | undefined) =>
    e ? Math.round((epochMs(e) - fromMs) / 100) / 10 : Number.NaN;
  const out: TimedOutWorkflowTask[] = [];
  for (const e of events) {
    const to = e.workflowTaskTimedOutEventAttributes;
    if (!to || to.timeoutType !== START_TO_CLOSE) continue;
    const scheduled = byId.get(String(to.scheduledEventId ?? ''));
    const started = byId.get(String(to.startedEventId ?? ''));
    const sched = scheduled?.workflowTaskScheduledEventAttributes;
    const start = started?.workflowTaskStartedEventAttributes;
    out.push({
      workflowId,
      attempt: sched?.attempt ?? 1,
      queue: sched?.taskQueue?.kind === STICKY_QUEUE ? 'sticky' : 'normal',
      scheduledS: s(scheduled),
      startedS: s(started),
      timedOutS: s(e),
      identity: start?.identity || 'unknown',
      requestId: start?.requestId || 'unknown',
    });
  }
  return out;
}
