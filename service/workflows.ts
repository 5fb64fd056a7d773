import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { DEFAULT_SWEEP_INTERVAL_MS, ensureModelSweep } from '../activities/schedules';
import { SEARCH_ATTRIBUTES, TASK_QUEUE, machineWorkflowId } from '../workflows/search-attributes';

/**
 * Starts and signals machine workflows. DynamoDB stays the source of truth:
 * a signal only wakes the workflow, which re-reads the machine. Signals go by
 * name (`retry`, `destroy`, as the workflow defines them) with signalWithStart,
 * so a machine whose workflow is missing gets one.
 */
export interface MachineWorkflows {
  start(model: string, machineId: string): Promise<void>;
  signal(model: string, machineId: string, signal: 'retry' | 'destroy'): Promise<void>;
  /** Makes sure the model's sweep schedule (strays and missing workflows) exists. */
  ensureSweep(model: string): Promise<void>;
}

export class TemporalMachineWorkflows implements MachineWorkflows {
  constructor(
    private readonly client: () => Promise<Client>,
    /** The worker's queue (`PROVISIONER_TASK_QUEUE`, shared by default). */
    private readonly taskQueue: string = TASK_QUEUE,
  ) {}

  async ensureSweep(model: string): Promise<void> {
    await ensureModelSweep(await this.client(), model, DEFAULT_SWEEP_INTERVAL_MS, this.taskQueue);
  }

  private options(model: string, machineId: string) {
    return {
      taskQueue: this.taskQueue,
      workflowId: machineWorkflowId(model, machineId),
      args: [{ model, machineId }],
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.model, value: model },
        { key: SEARCH_ATTRIBUTES.machine, value: machineId },
        { key: SEARCH_ATTRIBUTES.status, value: 'pending' },
      ],
    };
  }

  async start(model: string, machineId: string): Promise<void> {
    const client = await this.client();
    await client.workflow.start('machineWorkflow', {
      ...this.options(model, machineId),
      // a retried request finds the workflow already there and leaves it be
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  }

  async signal(model: string, machineId: string, signal: 'retry' | 'destroy'): Promise<void> {
    const client = await this.client();
    await client.workflow.signalWithStart('machineWorkflow', {
      ...this.options(model, machineId),
      signal,
      signalArgs: [],
    });
  }
}
