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
/** A machine workflow's task timeout (see machineStartOptions). */
export const MACHINE_WORKFLOW_TASK_TIMEOUT = '1 minute' as const;

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
    // A machine's first task runs its quick steps (load, plan, claim a zone) as local
    // activities. When a thousand start at once those queue for DynamoDB, and with the
    // default 10 s the tasks timed out, their work was thrown away and done again, and
    // nothing launched for minutes (npm run bench). A worker that dies holding a task
    // delays that machine by this much at most.
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
