import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { machineWorkflow } from '../workflows/machine';
import { SEARCH_ATTRIBUTES, TASK_QUEUE, machineWorkflowId } from '../workflows/search-attributes';

/** Starts and signals machine workflows; DynamoDB stays the source of truth, these only wake them. */
export interface MachineWorkflows {
  start(model: string, machineId: string): Promise<void>;
}

export class TemporalMachineWorkflows implements MachineWorkflows {
  constructor(private readonly client: () => Promise<Client>) {}

  async start(model: string, machineId: string): Promise<void> {
    const client = await this.client();
    await client.workflow.start<typeof machineWorkflow>('machineWorkflow', {
      taskQueue: TASK_QUEUE,
      workflowId: machineWorkflowId(model, machineId),
      args: [{ model, machineId }],
      // a retried request finds the workflow already there and leaves it be
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.model, value: model },
        { key: SEARCH_ATTRIBUTES.machine, value: machineId },
        { key: SEARCH_ATTRIBUTES.status, value: 'pending' },
      ],
    });
  }
}
