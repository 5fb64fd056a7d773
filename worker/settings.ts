import type { WorkerOptions } from '@temporalio/worker';
import { ConfigError, optionalEnv, positiveIntEnv } from '../config/env';

/**
 * The worker's own Temporal settings: the sandbox, the workflow cache and the
 * task slots, each from the environment so the bench can measure them one at
 * a time (README, "Worker tuning": the table of what each costs). An unset
 * variable keeps the value chosen there.
 */
export type WorkerSettings = Required<
  Pick<
    WorkerOptions,
    | 'reuseV8Context'
    | 'maxConcurrentActivityTaskExecutions'
    | 'maxConcurrentLocalActivityExecutions'
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxConcurrentWorkflowTaskPolls'
    | 'stickyQueueScheduleToStartTimeout'
  >
> &
  Pick<WorkerOptions, 'maxCachedWorkflows' | 'workflowThreadPoolSize'>;

function onOffEnv(name: string, fallback: boolean, env: NodeJS.ProcessEnv): boolean {
  const text = optionalEnv(name, fallback ? 'on' : 'off', env).trim();
  if (text === 'on') return true;
  if (text === 'off') return false;
  throw new ConfigError(`environment variable ${name}: "${text}" is not on or off`);
}

/** A positive integer when set; undefined (the SDK's default) when not. */
function optionalIntEnv(name: string, env: NodeJS.ProcessEnv): number | undefined {
  return env[name] === undefined || env[name] === '' ? undefined : positiveIntEnv(name, 1, env);
}

export function workerSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerSettings {
  const activities = positiveIntEnv('PROVISIONER_MAX_CONCURRENT_ACTIVITIES', 1000, env);
  const workflowTasks = positiveIntEnv('PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS', 200, env);
  const maxCachedWorkflows = optionalIntEnv('PROVISIONER_MAX_CACHED_WORKFLOWS', env);
  const workflowThreadPoolSize = optionalIntEnv('PROVISIONER_WORKFLOW_THREADS', env);
  if (workflowTasks < 2) {
    // the SDK's own rule for a worker with a workflow cache (this one always has one)
    throw new ConfigError(
      'environment variable PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: must be at least 2 with a workflow cache',
    );
  }
  return {
    // one sandbox context per workflow thread, shared by every run it hosts (the SDK's default)
    reuseV8Context: onOffEnv('PROVISIONER_REUSE_V8_CONTEXT', true, env),
    // Launches and zone claims wait together to be batched: many in flight at once, each mostly waiting.
    maxConcurrentActivityTaskExecutions: activities,
    maxConcurrentLocalActivityExecutions: activities,
    // A workflow task holds its slot while its local activities (planning, a zone claim waiting
    // for its batch) run: with the default 40 slots, a thousand machines started at once queued
    // for half a minute before their first task and then timed out (measured in npm run bench).
    maxConcurrentWorkflowTaskExecutions: workflowTasks,
    maxConcurrentWorkflowTaskPolls: positiveIntEnv('PROVISIONER_WORKFLOW_TASK_POLLS', 20, env),
    // A machine's next workflow task goes to this worker's sticky queue (its run is cached
    // here); one not picked up within this time goes back to the shared queue, costing
    // the server a timeout and two more history events and the worker a replay of the run
    // from its whole history. The default 10 s was exceeded about once per machine in a
    // 1,000-machine burst (tasks waited 5.5 s median in the queue). A worker that dies
    // leaves its sticky tasks waiting this long before another takes them (a shutdown
    // hands them over at once); a dead worker's open tasks already wait their 1-minute
    // task timeout (MACHINE_WORKFLOW_TASK_TIMEOUT).
    stickyQueueScheduleToStartTimeout: `${positiveIntEnv('PROVISIONER_STICKY_TIMEOUT_S', 30, env)} seconds`,
    ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
    ...(workflowThreadPoolSize !== undefined ? { workflowThreadPoolSize } : {}),
  };
}
