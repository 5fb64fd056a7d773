import type { TemporalUse } from './figures';

/**
 * Counts over one workflow's history, read by attribute presence (the shape
 * of `temporal.api.history.v1.HistoryEvent`). An "action" follows Temporal
 * Cloud's billing: the workflow's start, each activity attempt (retries
 * included: a started event carries its attempt number), each timer, signal,
 * search-attribute upsert, marker (local activity, side effect), child
 * workflow start and external signal.
 */
export interface HistoryEventLike {
  workflowExecutionStartedEventAttributes?: unknown;
  workflowTaskStartedEventAttributes?: unknown;
  activityTaskScheduledEventAttributes?: unknown;
  activityTaskStartedEventAttributes?: { attempt?: number | null } | null;
  timerStartedEventAttributes?: unknown;
  workflowExecutionSignaledEventAttributes?: unknown;
  upsertWorkflowSearchAttributesEventAttributes?: unknown;
  markerRecordedEventAttributes?: unknown;
  startChildWorkflowExecutionInitiatedEventAttributes?: unknown;
  signalExternalWorkflowExecutionInitiatedEventAttributes?: unknown;
  workflowPropertiesModifiedEventAttributes?: unknown;
}

export function emptyTemporalUse(): TemporalUse {
  return {
    workflows: 0,
    events: 0,
    actions: 0,
    workflowTasks: 0,
    activityTasks: 0,
    activityRetries: 0,
  };
}

export function countHistory(events: readonly HistoryEventLike[], into: TemporalUse): void {
  into.workflows += 1;
  into.events += events.length;
  let scheduled = 0;
  let attempts = 0;
  let started = 0;
  for (const e of events) {
    if (e.workflowExecutionStartedEventAttributes) into.actions += 1;
    if (e.workflowTaskStartedEventAttributes) into.workflowTasks += 1;
    if (e.activityTaskScheduledEventAttributes) scheduled += 1;
    if (e.activityTaskStartedEventAttributes) {
      started += 1;
      attempts += Math.max(1, e.activityTaskStartedEventAttributes.attempt ?? 1);
    }
    if (
      e.timerStartedEventAttributes ||
      e.workflowExecutionSignaledEventAttributes ||
      e.upsertWorkflowSearchAttributesEventAttributes ||
      e.markerRecordedEventAttributes ||
      e.startChildWorkflowExecutionInitiatedEventAttributes ||
      e.signalExternalWorkflowExecutionInitiatedEventAttributes ||
      e.workflowPropertiesModifiedEventAttributes
    ) {
      into.actions += 1;
    }
  }
  // An activity still retrying has no started event yet: its attempts so far are not in the history.
  const activityAttempts = attempts + (scheduled - started);
  into.actions += activityAttempts;
  into.activityTasks += activityAttempts;
  into.activityRetries += attempts - started;
}
