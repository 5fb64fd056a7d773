import { defineSearchAttributeKey } from '@temporalio/common';
import { createdFor, type CreatedMachine } from './created-machine';

/**
 * Custom search attributes set by the machine workflow so a person can find,
 * in the Temporal UI, e.g. every machine in error in one model:
 * `ProvisionerModel = "demo" AND ProvisionerStatus = "error"`.
 * The list is registered on the dev server by the local stack and on the
 * cloud namespace by the deployment.
 */
export const SEARCH_ATTRIBUTES = {
  model: defineSearchAttributeKey('ProvisionerModel', 'KEYWORD'),
  machine: defineSearchAttributeKey('ProvisionerMachine', 'KEYWORD'),
  applications: defineSearchAttributeKey('ProvisionerApplications', 'KEYWORD_LIST'),
  zone: defineSearchAttributeKey('ProvisionerZone', 'KEYWORD'),
  status: defineSearchAttributeKey('ProvisionerStatus', 'KEYWORD'),
  /** EC2's state of the machine's instance (`running`, `terminated`, `unknown`, …). */
  instanceStatus: defineSearchAttributeKey('ProvisionerInstanceStatus', 'KEYWORD'),
} as const;

/** Names and types as the Temporal CLI spells them (`--search-attribute Name=Type`). */
export const SEARCH_ATTRIBUTE_REGISTRATIONS: ReadonlyArray<{
  readonly name: string;
  readonly cliType: string;
}> = Object.values(SEARCH_ATTRIBUTES).map((key) => ({
  name: key.name,
  cliType: key.type === 'KEYWORD_LIST' ? 'KeywordList' : 'Keyword',
}));

export const TASK_QUEUE = 'provisioner';

/** Deterministic, readable workflow id: a retried request never starts a second workflow. */
export function machineWorkflowId(model: string, machineId: string): string {
  return `machine:${model}:${machineId}`;
}

/**
 * The machine a machine workflow id names (the inverse of `machineWorkflowId`;
 * a model's name holds no ':'), or undefined for another workflow's id.
 */
export function machineOfWorkflowId(
  workflowId: string,
): { model: string; machineId: string } | undefined {
  const m = /^machine:([^:]+):(.+)$/.exec(workflowId);
  return m ? { model: m[1]!, machineId: m[2]! } : undefined;
}

/** Workflow type names, as clients start them. */
export const MACHINE_WORKFLOW_TYPE = 'machine';
/** Machine workflows begun before the `machine` type (workflows/patches.ts); still served. */
export const LEGACY_MACHINE_WORKFLOW_TYPE = 'machineWorkflow';
/** A visibility-query clause matching machine workflows of either type. */
export const MACHINE_WORKFLOW_TYPES_QUERY = `WorkflowType IN ("${MACHINE_WORKFLOW_TYPE}", "${LEGACY_MACHINE_WORKFLOW_TYPE}")`;
export const SWEEPER_WORKFLOW_TYPE = 'sweeperWorkflow';
/** What earlier versions' per-model sweep Schedules started (`sweep:<model>`); the worker deletes those Schedules. */
export const LEGACY_MODEL_SWEEP_WORKFLOW_TYPE = 'modelSweepWorkflow';

/** The one sweeper of a task queue (every model, on a timer): a deterministic id, so it is started once. */
export function sweeperWorkflowId(taskQueue: string): string {
  return `sweeper:${taskQueue}`;
}

/** Starts machine workflows in bulk for one request (see workflows/starter.ts). */
export const START_MACHINES_WORKFLOW_TYPE = 'startMachinesWorkflow';

/** The static summary of a machine's workflow: the line the Temporal UI's workflow list shows. */
export function machineSummary(model: string, machineId: string): string {
  return `Machine ${machineId} in model ${model}`;
}

/** How a machine's workflow is started, by the API and by the bulk starter alike. */
/**
 * A machine workflow's task timeout (see machineStartOptions), in seconds.
 *
 * It bounds what a workflow task the server recorded started but no worker
 * ever got costs the machine: the Temporal server's matching gives a
 * sync-matched task 1 s to record its start in history; when history writes
 * it later than that (the dev server's SQLite under a 1,000-machine burst),
 * matching drops the poll's answer and the task as "already started", and
 * only this timeout brings it back (README, "Lost first workflow tasks").
 * With 60 s such a machine launched ~60 s after the rest; with 20 s, ~20 s
 * after the server started its task.
 *
 * It must not cut off a task whose local activities still run: the SDK's
 * core completes such a task at 80 % of this (16 s after it got the task)
 * and asks for the next, where the activities' results land; that answer
 * needs the worker's event loop and threads. Measured on a loaded machine
 * (two CPU hogs, the worker stopped half the time in 100 ms and 300 ms
 * pulses): those tasks completed 16.0–16.3 s after the server started them,
 * 3.7 s inside the timeout, and failure-semantics, whose record step retries
 * ~90 s in local activities, passed. In the 1,000-machine bench no first
 * task reached the 16 s heartbeat, and a lost one was taken up 20 s after
 * its start (README, "Lost first workflow tasks"). The failure that took
 * 30 s back (a fresh-clone CI: failure-semantics' machine said "Activity
 * timed out") was not the task timeout: that file started its machines with
 * the server's default 10 s, and the record step's end was a race in the
 * SDK's core (workflows/proxies.ts endedByLastTry).
 * A run keeps the timeout it was started with across continue-as-new
 * (workflows/carry.ts sets none): machines started with 60 s keep it.
 */
export const MACHINE_WORKFLOW_TASK_TIMEOUT_S = 20;
export const MACHINE_WORKFLOW_TASK_TIMEOUT = `${MACHINE_WORKFLOW_TASK_TIMEOUT_S} seconds` as const;

export function machineStartOptions(
  model: string,
  machineId: string,
  taskQueue: string,
  requestedBy?: string,
  created?: CreatedMachine,
) {
  return {
    taskQueue,
    workflowId: machineWorkflowId(model, machineId),
    args: [
      {
        model,
        machineId,
        ...(requestedBy ? { requestedBy } : {}),
        ...(created ? { created: createdFor(created, machineId) } : {}),
      },
    ] as [{ model: string; machineId: string; requestedBy?: string; created?: CreatedMachine }],
    // A machine's first task runs its steps (load, plan, claim a zone, launch) as local
    // activities, which the SDK keeps alive past 80 % of this by going on in a next task.
    // The SDK's default 10 s (8 s of them before that) was too short for a busy worker: tasks
    // timed out, their work was thrown away and done again (npm run bench). A task lost on its
    // way to the worker, or held by a worker that died, delays its machine by this much.
    workflowTaskTimeout: MACHINE_WORKFLOW_TASK_TIMEOUT,
    // the line the Temporal UI's workflow list shows; current details come from the workflow
    staticSummary: machineSummary(model, machineId),
    // who asked for it (API.md, "Audit"); retries and reprovisions update the current details
    ...(requestedBy ? { staticDetails: `Requested by ${requestedBy}` } : {}),
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.model, value: model },
      { key: SEARCH_ATTRIBUTES.machine, value: machineId },
      { key: SEARCH_ATTRIBUTES.status, value: 'pending' },
    ],
  };
}
