import { ServiceError, type Client } from '@temporalio/client';
import { DependencyUnavailableError } from '../../../service/errors';
import type { ServiceContext } from '../../../service/context';
import { retryMachine } from '../../../service/machines';
import {
  isWorkflowServiceUnavailable,
  TemporalMachineWorkflows,
  WorkflowServiceDeadlineError,
  type MachineWorkflows,
} from '../../../service/workflows';

/** An error as grpc-js gives it (code, details, metadata), wrapped as the SDK's client wraps it. */
function grpcError(code: number, details: string): ServiceError {
  const cause = Object.assign(new Error(`${code} ${details}`), {
    code,
    details,
    metadata: {},
  });
  return new ServiceError('Failed to signalWithStart Workflow', { cause });
}

describe('isWorkflowServiceUnavailable', () => {
  it.each<[string, unknown, boolean]>([
    ['UNAVAILABLE', grpcError(14, 'Connection refused'), true],
    ['DEADLINE_EXCEEDED', grpcError(4, 'Deadline exceeded'), true],
    ['RESOURCE_EXHAUSTED (a throttle)', grpcError(8, 'namespace rate limit exceeded'), true],
    ['connect timing out', new Error('Failed to connect before the deadline'), true],
    [
      'the SDK wrapping a connect failure',
      new ServiceError('Failed to connect to Temporal server', {
        cause: Object.assign(new Error('14 UNAVAILABLE'), { code: 14, details: '', metadata: {} }),
      }),
      true,
    ],
    [
      'a refused socket',
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      true,
    ],
    ['our own deadline', new WorkflowServiceDeadlineError('no answer'), true],
    ['PERMISSION_DENIED', grpcError(7, 'Request unauthorized'), false],
    ['an unknown namespace (NOT_FOUND)', grpcError(5, 'Namespace prod not found'), false],
    ['INVALID_ARGUMENT', grpcError(3, 'WorkflowId is not set'), false],
    ['a TypeError', new TypeError('x is not a function'), false],
    ['not an error', 'boom', false],
  ])('%s', (_name, err, expected) => {
    expect(isWorkflowServiceUnavailable(err)).toBe(expected);
  });
});

describe('TemporalMachineWorkflows.signal', () => {
  it('gives up within its deadline while connecting never finishes (a cold Lambda, Temporal away)', async () => {
    const workflows = new TemporalMachineWorkflows(
      () => new Promise<Client>(() => undefined),
      'q',
      300,
    );
    const started = Date.now();
    const err = await workflows.signal('m', '0', 'retry').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowServiceDeadlineError);
    expect(isWorkflowServiceUnavailable(err)).toBe(true);
    // the deadline is 300 ms; a busy machine gets generous room, far below the old 10 s + 10 s
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('counts the time connecting took against the signal: one deadline for both', async () => {
    let given: number | undefined;
    const client = {
      withDeadline: (deadline: number, fn: () => Promise<unknown>) => {
        given = deadline;
        return fn();
      },
      workflow: { signalWithStart: () => new Promise(() => undefined) },
    } as unknown as Client;
    const workflows = new TemporalMachineWorkflows(
      () => new Promise<Client>((resolve) => setTimeout(() => resolve(client), 200)),
      'q',
      600,
    );
    const started = Date.now();
    const err = await workflows.signal('m', '0', 'retry').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowServiceDeadlineError);
    // the signal's gRPC deadline is the request's, not 600 ms after the connection
    expect(given).toBeLessThanOrEqual(started + 600 + 50);
  });
});

describe('retry when the signal fails', () => {
  function ctxFailingWith(err: Error): ServiceContext {
    const workflows: MachineWorkflows = {
      start: () => Promise.resolve(),
      startMany: () => Promise.resolve(),
      ensureSweep: () => Promise.resolve(),
      signal: () => Promise.reject(err),
    };
    return {
      repo: {
        getModel: () => Promise.resolve({ name: 'm', constraints: '' }),
        getMachine: () => Promise.resolve({ id: '0', life: 'alive', status: 'error' }),
      },
      workflows,
      log: { warn: () => undefined, info: () => undefined },
    } as unknown as ServiceContext;
  }

  it('answers 503 unavailable when Temporal is away', async () => {
    const err = await retryMachine(
      ctxFailingWith(grpcError(14, 'Connection refused')),
      'm',
      '0',
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyUnavailableError);
    expect((err as Error).message).toBe(
      'cannot reach the workflow service to retry machine 0; try again',
    );
  });

  it('does not call a permanent refusal "try again": permission denied is rethrown as it is', async () => {
    const denied = grpcError(7, 'Request unauthorized');
    const err = await retryMachine(ctxFailingWith(denied), 'm', '0').catch((e: unknown) => e);
    expect(err).toBe(denied);
  });
});

describe('TemporalMachineWorkflows.startMany names who asked', () => {
  function recordingClient() {
    const starts: Array<{ type: string; options: Record<string, any> }> = [];
    const client = {
      workflow: {
        start: (type: string, options: Record<string, any>) => {
          starts.push({ type, options });
          return Promise.resolve();
        },
      },
    } as unknown as Client;
    return { client, starts };
  }

  it('a few machines: each workflow is started with the user in its details', async () => {
    const { client, starts } = recordingClient();
    await new TemporalMachineWorkflows(() => Promise.resolve(client), 'q').startMany(
      'm',
      ['0', '1'],
      'alice',
    );
    expect(starts.map((s) => [s.type, s.options.args, s.options.staticDetails])).toEqual([
      ['machine', [{ model: 'm', machineId: '0', requestedBy: 'alice' }], 'Requested by alice'],
      ['machine', [{ model: 'm', machineId: '1', requestedBy: 'alice' }], 'Requested by alice'],
    ]);
  });

  it('more than 20: the one bulk starter gets the user to pass on; without one, none', async () => {
    const ids = Array.from({ length: 21 }, (_, i) => String(i));
    const { client, starts } = recordingClient();
    const workflows = new TemporalMachineWorkflows(() => Promise.resolve(client), 'q');
    await workflows.startMany('m', ids, 'alice');
    await workflows.startMany('m', ids);
    expect(starts.map((s) => [s.type, s.options.args])).toEqual([
      ['startMachinesWorkflow', [{ model: 'm', machineIds: ids, requestedBy: 'alice' }]],
      ['startMachinesWorkflow', [{ model: 'm', machineIds: ids }]],
    ]);
  });

  it('hands what the request wrote (created) to each machine, directly or through the bulk starter', async () => {
    const created = {
      modelUid: 'uid-1',
      region: 'us-east-1',
      availabilitySets: false,
      base: 'ubuntu@24.04',
      constraints: 'mem=2G',
      applications: [],
    };
    const { client, starts } = recordingClient();
    const workflows = new TemporalMachineWorkflows(() => Promise.resolve(client), 'q');
    await workflows.startMany('m', ['0'], 'alice', created);
    const ids = Array.from({ length: 21 }, (_, i) => String(i));
    await workflows.startMany('m', ids, 'alice', created);
    expect(starts.map((s) => [s.type, s.options.args])).toEqual([
      ['machine', [{ model: 'm', machineId: '0', requestedBy: 'alice', created }]],
      ['startMachinesWorkflow', [{ model: 'm', machineIds: ids, requestedBy: 'alice', created }]],
    ]);
  });
});
