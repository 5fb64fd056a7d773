import { heartbeat } from '@temporalio/activity';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { MACHINE_WORKFLOW_TYPE, machineStartOptions } from '../temporal/search-attributes';
import type { CreatedMachine } from '../temporal/created-machine';
import type { ActivityDeps } from './deps';

/** Workflow starts in flight at once: enough to hide round trips, few enough not to flood the frontend. */
const START_CONCURRENCY = 32;

/**
 * Starts the workflows of machines a bulk request recorded. Idempotent: a
 * machine whose workflow already runs is left alone (USE_EXISTING), so a
 * retried activity or request never starts a second one.
 */
export function starterActivities(deps: ActivityDeps) {
  return {
    async startMachineWorkflows(input: {
      model: string;
      machineIds: string[];
      /** Who asked (workflows/starter.ts); absent from runs started before it was passed. */
      requestedBy?: string;
      /** What the request wrote of every machine; absent from runs started before issue 26. */
      created?: CreatedMachine;
    }): Promise<number> {
      const client = deps.temporal;
      if (!client) throw new Error('no Temporal client to start machine workflows with');
      let next = 0;
      let started = 0;
      const worker = async () => {
        for (;;) {
          const id = input.machineIds[next++];
          if (id === undefined) return;
          await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
            ...machineStartOptions(
              input.model,
              id,
              deps.taskQueue,
              input.requestedBy,
              input.created,
            ),
            workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          });
          started += 1;
          if (started % 50 === 0) heartbeat(started);
        }
      };
      await Promise.all(Array.from({ length: START_CONCURRENCY }, worker));
      return started;
    },
  };
}
