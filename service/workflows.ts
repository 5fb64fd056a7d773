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

/** Up to this many machines a request starts their workflows itself; more go to one bulk starter workflow. */
export const DIRECT_START_LIMIT = 20;

/**
 * Starts and signals machine workflows. DynamoDB stays the source of truth:
 * a signal only wakes the workflow, which re-reads the machine. Signals go by
 * name (`retry`, `destroy`, as the workflow defines them) with signalWithStart,
 * so a machine whose workflow is missing gets one.
 */
export interface MachineWorkflows {
  start(model: string, machineId: string): Promise<void>;
  /**
   * Starts the workflows of many machines recorded by one request: a few
   * directly, more through one bulk starter workflow so the request answers
   * at once (its id is derived from the machines, so a retried request
   * never starts a second one).
   */
  startMany(model: string, machineIds: readonly string[]): Promise<void>;
  signal(model: string, machineId: string, signal: 'retry' | 'destroy'): Promise<void>;
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

  private options(model: string, machineId: string) {
    return machineStartOptions(model, machineId, this.taskQueue);
  }

  async startMany(model: string, machineIds: readonly string[]): Promise<void> {
    if (machineIds.length <= DIRECT_START_LIMIT) {
      await Promise.all(machineIds.map((id) => this.start(model, id)));
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

  async start(model: string, machineId: string): Promise<void> {
    const client = await this.client();
    await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
      ...this.options(model, machineId),
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

  async signal(model: string, machineId: string, signal: 'retry' | 'destroy'): Promise<void> {
    const client = await this.client();
    await client.workflow.signalWithStart(MACHINE_WORKFLOW_TYPE, {
      ...this.options(model, machineId),
      signal,
      signalArgs: [],
    });
  }
}
