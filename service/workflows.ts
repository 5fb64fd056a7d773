import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { ensureSweeper } from '../temporal/sweeper-client';
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
import type { CreatedMachine } from '../temporal/created-machine';

/**
 * How long a signal may take, connecting to Temporal (a cold Lambda's first
 * request) and the client's own retries included (they back off for over
 * 20 s when Temporal is away): well inside the API's 29 s, so the caller
 * answers `503` itself rather than being cut off by the gateway.
 */
export const SIGNAL_DEADLINE_MS = 10_000;

/** How long the API's first connection to Temporal may take (within SIGNAL_DEADLINE_MS). */
export const TEMPORAL_CONNECT_TIMEOUT_MS = 5_000;

/** The workflow service did not answer within SIGNAL_DEADLINE_MS (connecting included). */
export class WorkflowServiceDeadlineError extends Error {
  override name = 'WorkflowServiceDeadlineError';
}

/** gRPC codes of a workflow service that is away, out of time or throttling: worth repeating. */
const TRANSIENT_GRPC_CODES = new Set([
  4, // DEADLINE_EXCEEDED
  8, // RESOURCE_EXHAUSTED (a throttle)
  14, // UNAVAILABLE
]);

/** Node's codes for a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether a failure to reach a machine's workflow is Temporal being away or
 * slow (a repeat may succeed: `503`), not a permanent refusal such as
 * permission denied, an unknown namespace or a bad argument (a fault to
 * report as such). Looks through the SDK's wrapping (`cause`).
 */
export function isWorkflowServiceUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof WorkflowServiceDeadlineError) return true;
    const { code } = e as { code?: unknown };
    if (typeof code === 'number' && TRANSIENT_GRPC_CODES.has(code)) return true;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
    // grpc-js's waitForReady, and the SDK's connect around it
    if (/^Failed to connect\b/.test(e.message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** `promise`, or a WorkflowServiceDeadlineError once `deadline` (ms since the epoch) passes. */
function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new WorkflowServiceDeadlineError('no answer from the workflow service in time')),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

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
  start(
    model: string,
    machineId: string,
    requestedBy?: string,
    created?: CreatedMachine,
  ): Promise<void>;
  /**
   * Starts the workflows of many machines recorded by one request: a few
   * directly, more through one bulk starter workflow so the request answers
   * at once (its id is derived from the machines, so a retried request
   * never starts a second one). `created`: what the request wrote of every
   * one of them (MachineWorkflowInput.created), handed to each workflow.
   */
  startMany(
    model: string,
    machineIds: readonly string[],
    requestedBy?: string,
    created?: CreatedMachine,
  ): Promise<void>;
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
    /** How long a signal may take, connecting included. */
    private readonly signalDeadlineMs: number = SIGNAL_DEADLINE_MS,
  ) {}

  async ensureSweep(_model: string): Promise<void> {
    await ensureSweeper(await this.client(), this.taskQueue);
  }

  private options(
    model: string,
    machineId: string,
    requestedBy?: string,
    created?: CreatedMachine,
  ) {
    return machineStartOptions(model, machineId, this.taskQueue, requestedBy, created);
  }

  async startMany(
    model: string,
    machineIds: readonly string[],
    requestedBy?: string,
    created?: CreatedMachine,
  ): Promise<void> {
    if (machineIds.length <= DIRECT_START_LIMIT) {
      await Promise.all(machineIds.map((id) => this.start(model, id, requestedBy, created)));
      return;
    }
    const client = await this.client();
    await client.workflow.start(START_MACHINES_WORKFLOW_TYPE, {
      taskQueue: this.taskQueue,
      workflowId: `start-machines:${model}:${machineIds[0]}:${machineIds.length}`,
      args: [
        {
          model,
          machineIds: [...machineIds],
          ...(requestedBy ? { requestedBy } : {}),
          ...(created ? { created } : {}),
        },
      ],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  }

  async start(
    model: string,
    machineId: string,
    requestedBy?: string,
    created?: CreatedMachine,
  ): Promise<void> {
    const client = await this.client();
    await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
      ...this.options(model, machineId, requestedBy, created),
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
    // one deadline for connecting (a cold Lambda's first request) and signalling
    const deadline = Date.now() + this.signalDeadlineMs;
    const client = await beforeDeadline(this.client(), deadline);
    await beforeDeadline(
      client.withDeadline(deadline, () =>
        client.workflow.signalWithStart(MACHINE_WORKFLOW_TYPE, {
          ...this.options(model, machineId, requestedBy),
          signal,
          signalArgs: args,
        }),
      ),
      deadline,
    );
  }
}
