import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { ensureSweeper } from '../activities/sweeper-client';
import {
  REMOVAL_WORKFLOW_TYPE,
  removalSummary,
  removalWorkflowId,
  type RemovalTarget,
} from '../temporal/removal';
import {
  MACHINE_WORKFLOW_TYPE,
  START_MACHINES_WORKFLOW_TYPE,
  TASK_QUEUE,
  machineStartOptions,
} from '../temporal/search-attributes';

/**
 * How long a signal may take, the client's own retries included (they back
 * off for over 20 s when Temporal is away): well inside the API's 29 s, so
 * the caller answers `503` itself rather than being cut off by the gateway.
 */
export const SIGNAL_DEADLINE_MS = 10_000;

/** Up to this many machines a request starts their workflows itself; more go to one bulk starter workflow. */
export const DIRECT_START_LIMIT = 20;

/**
 * Starts and signals machine workflows. DynamoDB stays the source of truth:
 * a signal only wakes the workflow, which re-reads the machine. Signals go by
 * name (`retry`, `destroy`, `reprovision`, as the workflow defines them) with signalWithStart,
 * so a machine whose workflow is missing gets one.
 */
export interface MachineWorkflows {
  /** `requestedBy`: the user whose request this is, named in the workflow (API.md, "Audit"). */
  start(model: string, machineId: string, requestedBy?: string): Promise<void>;
  /**
   * Starts the workflows of many machines recorded by one request: a few
   * directly, more through one bulk starter workflow so the request answers
   * at once (its id is derived from the machines, so a retried request
   * never starts a second one).
   */
  startMany(model: string, machineIds: readonly string[], requestedBy?: string): Promise<void>;
  /**
   * `retry` takes `[{ by }]` (who asked), `reprovision` `[{ instanceId, by }]`:
   * the instance EC2 confirmed gone (workflows/definitions.ts); `destroy` nothing.
   * `requestedBy` also names the user in a workflow this signal starts.
   */
  signal(
    model: string,
    machineId: string,
    signal: 'retry' | 'destroy' | 'reprovision',
    args?: unknown[],
    requestedBy?: string,
  ): Promise<void>;
  /**
   * Makes sure the sweeper that sweeps the model (strays, missing workflows,
   * liveness) is running: one workflow for every model, started once.
   */
  ensureSweep(model: string): Promise<void>;
  /**
   * Starts the removal of an application or a model in the background
   * (workflows/removal.ts); a removal already running is left be. Absent
   * (tests' fakes): removals are written by the request itself.
   */
  startRemoval?(target: RemovalTarget): Promise<void>;
}

export class TemporalMachineWorkflows implements MachineWorkflows {
  constructor(
    private readonly client: () => Promise<Client>,
    /** The worker's queue (`PROVISIONER_TASK_QUEUE`, shared by default). */
    private readonly taskQueue: string = TASK_QUEUE,
  ) {}

  async ensureSweep(_model: string): Promise<void> {
    await ensureSweeper(await this.client(), this.taskQueue);
  }

  private options(model: string, machineId: string, requestedBy?: string) {
    return machineStartOptions(model, machineId, this.taskQueue, requestedBy);
  }

  async startMany(
    model: string,
    machineIds: readonly string[],
    requestedBy?: string,
  ): Promise<void> {
    if (machineIds.length <= DIRECT_START_LIMIT) {
      await Promise.all(machineIds.map((id) => this.start(model, id, requestedBy)));
      return;
    }
    const client = await this.client();
    await client.workflow.start(START_MACHINES_WORKFLOW_TYPE, {
      taskQueue: this.taskQueue,
      workflowId: `start-machines:${model}:${machineIds[0]}:${machineIds.length}`,
      args: [{ model, machineIds: [...machineIds] }],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  }

  async start(model: string, machineId: string, requestedBy?: string): Promise<void> {
    const client = await this.client();
    await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
      ...this.options(model, machineId, requestedBy),
      // a retried request finds the workflow already there and leaves it be
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  }

  async startRemoval(target: RemovalTarget): Promise<void> {
    const client = await this.client();
    await client.workflow.start(REMOVAL_WORKFLOW_TYPE, {
      taskQueue: this.taskQueue,
      workflowId: removalWorkflowId(target),
      args: [target],
      staticSummary: removalSummary(target),
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  }

  async signal(
    model: string,
    machineId: string,
    signal: 'retry' | 'destroy' | 'reprovision',
    args: unknown[] = [],
    requestedBy?: string,
  ): Promise<void> {
    const client = await this.client();
    await client.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
      client.workflow.signalWithStart(MACHINE_WORKFLOW_TYPE, {
        ...this.options(model, machineId, requestedBy),
        signal,
        signalArgs: args,
      }),
    );
  }
}
