import type { WorkerOptions } from '@temporalio/worker';
import { ConfigError, optionalEnv, positiveIntEnv } from '../config/env';
import { backlogTuner } from './tuner';

/**
 * The worker's own Temporal settings: the sandbox, the workflow cache and the
 * task slots, each from the environment so the bench can measure them one at
 * a time (README, "Worker tuning": the table of what each costs). An unset
 * variable keeps the value chosen there.
 */
/** The SDK options the settings always set. */
type SetOptions =
  | 'reuseV8Context'
  | 'maxConcurrentActivityTaskExecutions'
  | 'maxConcurrentLocalActivityExecutions'
  | 'maxConcurrentWorkflowTaskExecutions'
  | 'stickyQueueScheduleToStartTimeout'
  | 'maxCachedWorkflows';

export type WorkerSettings = Required<Pick<WorkerOptions, SetOptions>> &
  Pick<WorkerOptions, 'workflowThreadPoolSize'> & {
    /**
     * Workflow tasks the worker holds and has not yet begun (worker/backlog-gate.ts), at most
     * the workflow-task slots, or `off`: the SDK's fixed-size slots alone, as before the gate.
     */
    workflowTaskBacklog: number | 'off';
  };

/**
 * What Worker.create gets from the settings: the slots either as the three
 * maxConcurrent* options (the SDK builds its fixed-size suppliers from them)
 * or as a tuner, never both (the SDK refuses a tuner with any of them).
 */
export type WorkerTuningOptions = Pick<
  WorkerOptions,
  SetOptions | 'workflowThreadPoolSize' | 'tuner'
>;

/**
 * The default backlog. Starved to ~14 % of a core, the worker begins roughly
 * 10-20 first tasks a second, so 100 is 5-10 s of backlog, well inside the
 * 20 s workflow-task timeout (MACHINE_WORKFLOW_TASK_TIMEOUT); on a quiet
 * machine tasks begin as fast as they come and the backlog stays far below it.
 */
const WORKFLOW_TASK_BACKLOG = 100;

/**
 * The least backlog taken. With a tuner the SDK runs 10 workflow-task
 * pollers, 2 on the shared queue and 8 on the sticky one, in two poll loops,
 * and each loop takes its next slot before it waits for a free poller
 * (sdk-core pollers/poll_buffer.rs): idle, the sticky loop holds up to 9
 * slots (8 polls and the next one) and the shared one up to 3, so idle
 * pollers take up to 12 of the backlog. 10 leaves the shared queue, where
 * new machines' first tasks wait, at least one; with less, idle sticky polls
 * could hold it all and those tasks wait a long poll.
 */
const MIN_WORKFLOW_TASK_BACKLOG = 10;

// Each variable is read by its literal name (test/unit/infra/environment.test.ts finds the
// variables a bundle reads by scanning for names passed to the config getters).

function onOff(name: string, text: string): boolean {
  if (text.trim() === 'on') return true;
  if (text.trim() === 'off') return false;
  throw new ConfigError(`environment variable ${name}: "${text.trim()}" is not on or off`);
}

/**
 * PROVISIONER_WORKFLOW_TASK_BACKLOG as set, or undefined when unset (the
 * default then depends on the slots). `off` is taken however it is padded,
 * as onOff takes the file's other on/off variables; a number is read as
 * positiveIntEnv reads an integer: not trimmed, digits only (`0010` is 10,
 * as there).
 */
function workflowTaskBacklogEnv(env: NodeJS.ProcessEnv): number | 'off' | undefined {
  const text = optionalEnv('PROVISIONER_WORKFLOW_TASK_BACKLOG', '', env);
  if (text === '') return undefined;
  if (text.trim() === 'off') return 'off';
  if (!/^\d+$/.test(text)) {
    throw new ConfigError(
      `environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: "${text}" is not a positive integer or off`,
    );
  }
  const limit = Number(text);
  if (limit < MIN_WORKFLOW_TASK_BACKLOG) {
    throw new ConfigError(
      `environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: must be at least ${MIN_WORKFLOW_TASK_BACKLOG} (idle, the sticky poll loop holds up to 9 workflow-task slots, 8 polls and the next one; 10 leaves the shared queue at least one), or off`,
    );
  }
  return limit;
}

export function workerSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerSettings {
  const activities = positiveIntEnv('PROVISIONER_MAX_CONCURRENT_ACTIVITIES', 1000, env);
  // Not the SDK's default, which it derives from the heap limit: ~2,300 runs on the bench machine
  // but 34 in dev's 1 GiB task (60 with worker/heap.ts's semi-spaces), and a cache below the
  // workflow-task slots lowers the slots to it. A 1,000-machine burst then replayed most runs
  // at their second task (README, "Worker tuning": 38.4 ms of worker CPU per machine with dev's
  // heap, 23.1 ms with this cache, 624 MiB peak RSS in dev's heap limits).
  const maxCachedWorkflows = positiveIntEnv('PROVISIONER_MAX_CACHED_WORKFLOWS', 1000, env);
  // As many workflow-task slots as cached runs (the core allows no more): a machine's first task
  // holds its slot while its launch runs in it (workflows/patches.ts LAUNCH_IN_TASK), seconds
  // each. With 200, a 1,000-machine burst reached the batcher 200 at a time: all launched in
  // 45.5 s, 37 RunInstances; with 1,000, 26.6 s and 15 (npm run bench, README).
  const workflowTasks = positiveIntEnv(
    'PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS',
    // the core's floor with a cache: 2
    Math.max(2, maxCachedWorkflows),
    env,
  );
  // threads: a positive integer when set; unset leaves the SDK's default
  const workflowThreadPoolSize = optionalEnv('PROVISIONER_WORKFLOW_THREADS', '', env)
    ? positiveIntEnv('PROVISIONER_WORKFLOW_THREADS', 1, env)
    : undefined;
  if (workflowTasks < 2) {
    // With a workflow cache (this worker always has one) the SDK only warns and raises fewer than
    // 2 slots to 2; a setting the worker would not run with is refused here instead.
    throw new ConfigError(
      'environment variable PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: must be at least 2 with a workflow cache',
    );
  }
  const backlogSet = workflowTaskBacklogEnv(env);
  // With the gate the SDK runs 10 pollers whatever the slots (off: min(10, the slots)), and the
  // core balances sticky against normal polls on the cache, not the slots, since a custom
  // supplier tells it no free slots: under 10 slots the sticky polls could hold them all and
  // leave new machines' first tasks a long poll on the shared queue. Refused rather than
  // switched off quietly, so the worker runs with what it was told or not at all.
  const slots = Math.min(workflowTasks, Math.max(2, maxCachedWorkflows));
  if (backlogSet !== 'off' && slots < MIN_WORKFLOW_TASK_BACKLOG) {
    throw new ConfigError(
      `environment variable PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: ${slots} workflow-task slots (with PROVISIONER_MAX_CACHED_WORKFLOWS) is below ${MIN_WORKFLOW_TASK_BACKLOG}, the least PROVISIONER_WORKFLOW_TASK_BACKLOG runs with; raise them or set PROVISIONER_WORKFLOW_TASK_BACKLOG=off`,
    );
  }
  // A backlog above the slots bounds nothing the slots do not (the tasks not begun are some of
  // the slots out), and the start-up line would show a bound the worker does not run with:
  // refused when set, as the slot cap below 10 is. Unset, the default is lowered to the slots.
  if (typeof backlogSet === 'number' && backlogSet > slots) {
    throw new ConfigError(
      `environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: ${backlogSet} is above the ${slots} workflow-task slots the worker runs with (PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS with PROVISIONER_MAX_CACHED_WORKFLOWS); set at most ${slots}, or off`,
    );
  }
  const workflowTaskBacklog = backlogSet ?? Math.min(WORKFLOW_TASK_BACKLOG, slots);
  return {
    // one sandbox context per workflow thread, shared by every run it hosts (the SDK's default)
    reuseV8Context: onOff(
      'PROVISIONER_REUSE_V8_CONTEXT',
      optionalEnv('PROVISIONER_REUSE_V8_CONTEXT', 'on', env),
    ),
    // Launches and zone claims wait together to be batched: many in flight at once, each mostly waiting.
    maxConcurrentActivityTaskExecutions: activities,
    maxConcurrentLocalActivityExecutions: activities,
    // A workflow task holds its slot while its local activities (planning, a zone claim waiting
    // for its batch) run: with the default 40 slots, a thousand machines started at once queued
    // for half a minute before their first task and then timed out (measured in npm run bench).
    maxConcurrentWorkflowTaskExecutions: workflowTasks,
    // No maxConcurrentWorkflowTaskPolls: @temporalio/worker 1.24 never reads it (its pollers come
    // from workflowTaskPollerBehavior, by default min(10, the slots above)); main's 20 was dead.
    // A machine's next workflow task goes to this worker's sticky queue (its run is cached
    // here); one not picked up within this time goes back to the shared queue, costing
    // the server a timeout and two more history events and the worker a replay of the run
    // from its whole history. The default 10 s was exceeded about once per machine in a
    // 1,000-machine burst (tasks waited 5.5 s median in the queue). A worker that dies
    // leaves its sticky tasks waiting this long before another takes them (a shutdown
    // hands them over at once); a dead worker's open tasks wait their task timeout
    // (MACHINE_WORKFLOW_TASK_TIMEOUT, 20 s; 60 s for machines started before it was).
    stickyQueueScheduleToStartTimeout: `${positiveIntEnv('PROVISIONER_STICKY_TIMEOUT_S', 30, env)} seconds`,
    maxCachedWorkflows,
    ...(workflowThreadPoolSize !== undefined ? { workflowThreadPoolSize } : {}),
    workflowTaskBacklog,
  };
}

/**
 * The workflow-task slots the worker really runs with: @temporalio/worker
 * 1.24 folds the slots into its tuner and the Rust core caps workflow-task
 * permits at max(2, the cache) whatever the supplier (sdk-core worker/mod.rs,
 * MeteredPermitDealer). So a cache below the slots lowers them, silently.
 */
export function workflowTaskSlots(settings: WorkerSettings): number {
  return Math.min(
    settings.maxConcurrentWorkflowTaskExecutions,
    Math.max(2, settings.maxCachedWorkflows),
  );
}

/**
 * The options Worker.create takes from the settings. With a backlog, a tuner
 * of the same slots (fixed-size activities, local activities of the same
 * count) whose workflow-task slots also hold the backlog; `off`: the
 * maxConcurrent* options as they were. Each call builds a new tuner: one per
 * Worker, since its gate counts that worker's slots.
 */
export function workerOptions(settings: WorkerSettings): WorkerTuningOptions {
  const {
    workflowTaskBacklog,
    maxConcurrentActivityTaskExecutions,
    maxConcurrentLocalActivityExecutions,
    maxConcurrentWorkflowTaskExecutions,
    ...rest
  } = settings;
  if (workflowTaskBacklog === 'off') {
    return {
      ...rest,
      maxConcurrentActivityTaskExecutions,
      maxConcurrentLocalActivityExecutions,
      maxConcurrentWorkflowTaskExecutions,
    };
  }
  return {
    ...rest,
    tuner: backlogTuner({
      workflowTaskBacklog,
      workflowTaskSlots: workflowTaskSlots(settings),
      activitySlots: maxConcurrentActivityTaskExecutions,
      localActivitySlots: maxConcurrentLocalActivityExecutions,
    }),
  };
}

/** The start-up line's fields: what the worker's heap, cache and workflow-task slots really are. */
export interface WorkerStartupFields {
  heapLimitMiB: number;
  maxCachedWorkflows: number;
  workflowTaskSlots: number;
  workflowTaskBacklog: number | 'off';
}

export function workerStartupFields(
  settings: WorkerSettings,
  heapSizeLimitBytes: number,
): WorkerStartupFields {
  return {
    // what the task's memory gave V8 (each workflow thread's isolate gets the same limit)
    heapLimitMiB: Math.round(heapSizeLimitBytes / 2 ** 20),
    maxCachedWorkflows: settings.maxCachedWorkflows,
    // not the SDK's compiled options, which drop the slots into its tuner: the number it runs with
    workflowTaskSlots: workflowTaskSlots(settings),
    workflowTaskBacklog: settings.workflowTaskBacklog,
  };
}
