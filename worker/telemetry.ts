import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { MetricsBuffer, Runtime, type InjectedSinks } from '@temporalio/worker';
import { ConfigError, optionalEnv } from '../config/env';
import type { Unit } from '../config/metrics';
import { workerMetrics, type WorkerMetrics } from '../config/worker-metrics';
import { teardownBlocked } from '../activities/metrics';
import type { ProvisionerSinks } from '../workflows/metrics';
import type { WorkerLogger } from './logging';
import { MACHINE_WORKFLOW_TASK_TIMEOUT_S } from '../temporal/search-attributes';

/**
 * Where the Temporal SDK's own metrics (task slots, schedule-to-start and
 * poll latencies, workflow and activity outcomes, request failures) go:
 * - `emf` (default, and the cloud's): buffered in the SDK, drained every
 *   second into the worker's metrics and written as EMF with them, so
 *   CloudWatch gets them from the task's log stream without a collector;
 * - `prometheus:127.0.0.1:9464`: a Prometheus endpoint on that address
 *   (`curl http://127.0.0.1:9464/metrics`), for reading them locally;
 * - `off`.
 */
export type TemporalMetrics =
  { kind: 'emf' } | { kind: 'prometheus'; bindAddress: string } | { kind: 'off' };

export const TEMPORAL_METRICS_ENV = 'PROVISIONER_TEMPORAL_METRICS';

export function temporalMetricsFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalMetrics {
  const text = optionalEnv('PROVISIONER_TEMPORAL_METRICS', 'emf', env).trim();
  if (text === 'emf') return { kind: 'emf' };
  if (text === 'off') return { kind: 'off' };
  const match = /^prometheus:(.+:\d+)$/.exec(text);
  if (match) return { kind: 'prometheus', bindAddress: match[1]! };
  throw new ConfigError(
    `environment variable ${TEMPORAL_METRICS_ENV}: "${text}" is not emf, off or prometheus:<host>:<port>`,
  );
}

export const CORE_LOG_ENV = 'PROVISIONER_TEMPORAL_CORE_LOG';

/**
 * Where the SDK's core (its Rust side: pollers, workflow cache, gRPC
 * retries) logs, and how much:
 * - unset (the default, and the cloud's): warnings and errors, forwarded to
 *   the worker's logger (JSON lines with the worker's own);
 * - a filter in the core's env-filter format, e.g.
 *   `WARN,temporalio_client::retry=DEBUG,temporalio_sdk_core::pollers=DEBUG`:
 *   written by the core straight to stdout as JSON (at DEBUG it logs workflow
 *   payloads too: local diagnosis only, never set in the cloud), so its debug lines are
 *   not dropped by the worker logger's level. For diagnosis only (a poll that
 *   failed and was retried is logged at debug: README, "Lost first
 *   workflow tasks").
 */
export function coreLogFilterFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const text = optionalEnv('PROVISIONER_TEMPORAL_CORE_LOG', '', env).trim();
  if (text === '') return undefined;
  // the core would refuse a filter with spaces or quotes only at install, with a less clear message
  if (!/^[A-Za-z0-9_:=,.-]+$/.test(text)) {
    throw new ConfigError(
      `environment variable ${CORE_LOG_ENV}: "${text}" is not a log filter (levels and targets such as WARN,temporalio_client=DEBUG)`,
    );
  }
  return text;
}

/** How often the worker writes its metrics as EMF. */
export const FLUSH_INTERVAL_MS = 10_000;
const DRAIN_INTERVAL_MS = 1_000;

function unitOf(sdkUnit: string | undefined): Unit {
  if (sdkUnit === 'ms') return MetricUnit.Milliseconds;
  if (sdkUnit === 's') return MetricUnit.Seconds;
  return MetricUnit.Count;
}

/**
 * Answers the worker's client gets routinely, which the SDK counts as failed
 * requests: a workflow already gone when the sweep describes or signals it, a
 * sweeper or workflow that already exists. The client shares the core's
 * metrics since it runs on a native connection (worker/main.ts).
 */
const ROUTINE_REFUSALS = new Set(['NOT_FOUND', 'ALREADY_EXISTS']);
const REQUEST_FAILURE = 'temporal_request_failure';
/** Where ROUTINE_REFUSALS are counted instead, so the dashboard's failed requests stay failures. */
export const ROUTINE_REFUSED_REQUESTS = 'temporal_request_routine_refusal';

/**
 * Adds drained SDK metric updates to the worker's metrics: counters summed,
 * the rest sampled (EMF keeps no SDK labels). A request failure whose status
 * is a routine refusal is counted as ROUTINE_REFUSED_REQUESTS.
 */
export function addSdkUpdates(
  updates: Iterable<{
    metric: { name: string; kind: string; unit?: string };
    value: number;
    attributes?: Record<string, unknown>;
  }>,
  into: WorkerMetrics = workerMetrics,
): void {
  for (const { metric, value, attributes } of updates) {
    if (metric.kind === 'counter') {
      const routine =
        metric.name === REQUEST_FAILURE &&
        typeof attributes?.['status_code'] === 'string' &&
        ROUTINE_REFUSALS.has(attributes['status_code']);
      into.add(routine ? ROUTINE_REFUSED_REQUESTS : metric.name, MetricUnit.Count, value);
    } else into.sample(metric.name, unitOf(metric.unit), value);
  }
}

/**
 * The SDK's core warns of every workflow task that took longer than this
 * (`[TMPRL1104] … Workflow task duration exceeded 5 seconds`, read once
 * from TEMPORAL_WORKFLOW_TASK_DURATION_WARN_SECONDS, whole seconds). A
 * machine's first task runs its launch (workflows/patches.ts
 * LAUNCH_IN_TASK): it waits for its batch (up to PROVISIONER_LAUNCH_BATCH_MAX,
 * 5 s), its RunInstances turn and EC2's answer, so at the SDK's 5 s a
 * 1,000-machine burst logged 999 such warnings. The core completes a task
 * whose local activities still run at 80 % of the task timeout
 * (MACHINE_WORKFLOW_TASK_TIMEOUT, 20 s: 16 s) and goes on in the next:
 * a task longer than 18 s is one that is stuck, or late for its timeout.
 * (Machines started before the timeout was 20 s keep 60 s for life: their
 * tasks of 18–48 s are routine and warn all the same.)
 */
export const WORKFLOW_TASK_DURATION_WARN_SECONDS =
  Math.ceil(MACHINE_WORKFLOW_TASK_TIMEOUT_S * 0.8) + 2;
export const WORKFLOW_TASK_DURATION_WARN_ENV = 'TEMPORAL_WORKFLOW_TASK_DURATION_WARN_SECONDS';

/**
 * Sets the core's long-task warning threshold unless the environment has
 * one, and answers it. A value the core would not read (not whole seconds:
 * it would fall back to 5 s without a word) is refused.
 */
export function longTaskWarningThreshold(env: NodeJS.ProcessEnv = process.env): string {
  const set = env[WORKFLOW_TASK_DURATION_WARN_ENV]?.trim();
  if (set === undefined || set === '') {
    env[WORKFLOW_TASK_DURATION_WARN_ENV] = String(WORKFLOW_TASK_DURATION_WARN_SECONDS);
    return env[WORKFLOW_TASK_DURATION_WARN_ENV];
  }
  // the core parses the raw value as whole seconds (u64); anything else it reads as its 5 s
  if (!/^[1-9]\d{0,8}$/.test(set)) {
    throw new ConfigError(
      `environment variable ${WORKFLOW_TASK_DURATION_WARN_ENV}: "${set}" is not a whole number of seconds (1 or more)`,
    );
  }
  env[WORKFLOW_TASK_DURATION_WARN_ENV] = set;
  return set;
}

/**
 * Installs the SDK's Runtime with the worker's logger and the chosen metrics
 * exporter, and starts the worker's periodic EMF flush. Must run before the
 * first connection is made.
 */
export function installTelemetry(
  logger: WorkerLogger,
  mode: TemporalMetrics,
  coreLogFilter: string | undefined = coreLogFilterFromEnv(),
): () => void {
  let buffer: MetricsBuffer | undefined;
  if (mode.kind === 'emf') buffer = new MetricsBuffer({ maxBufferSize: 100_000 });
  // before the core's first workflow task reads it (it reads the process environment once)
  longTaskWarningThreshold();
  Runtime.install({
    logger,
    telemetryOptions: {
      logging:
        coreLogFilter === undefined
          ? { forward: {}, filter: 'WARN' }
          : { console: { format: 'json' }, filter: coreLogFilter },
      ...(buffer ? { metrics: { buffer } } : {}),
      ...(mode.kind === 'prometheus'
        ? { metrics: { prometheus: { bindAddress: mode.bindAddress } } }
        : {}),
    },
  });
  let drainer: NodeJS.Timeout | undefined;
  if (buffer) {
    const drain = () => {
      try {
        addSdkUpdates(buffer.retrieveUpdates());
      } catch (err) {
        logger.warn('could not read the Temporal SDK metrics', { error: String(err) });
      }
    };
    drainer = setInterval(drain, DRAIN_INTERVAL_MS);
    drainer.unref();
  }
  workerMetrics.start(FLUSH_INTERVAL_MS);
  return () => {
    if (drainer) clearInterval(drainer);
    if (buffer) addSdkUpdates(buffer.retrieveUpdates());
    workerMetrics.stop();
  };
}

/** What the backlog gate is read for (worker/backlog-gate.ts WorkflowBacklogGate). */
export interface BacklogGateCounts {
  readonly issued: number;
  readonly backlog: number;
  readonly waiters: number;
  readonly localActivitiesRunning: number;
  readonly slotCap: number;
}

/**
 * Samples the backlog gate's counts into the worker's metrics. With the gate
 * on, the SDK stops reporting temporal_worker_task_slots_available for
 * workflow tasks and local activities (its core knows no free slots of a
 * custom supplier), so `workflow_task_slots_free` is that series again, with
 * the same meaning; waiting reservations above 0 mean the gate is shut.
 */
export function sampleBacklogGate(
  gate: BacklogGateCounts,
  into: WorkerMetrics = workerMetrics,
): void {
  into.sample('workflow_task_slots_free', MetricUnit.Count, gate.slotCap - gate.issued);
  into.sample('workflow_task_backlog', MetricUnit.Count, gate.backlog);
  into.sample('workflow_task_reservations_waiting', MetricUnit.Count, gate.waiters);
  into.sample('local_activities_running', MetricUnit.Count, gate.localActivitiesRunning);
}

/** Samples the gate once a second (not per slot: the slots are the hot path) until stopped. */
export function watchBacklogGate(
  gate: BacklogGateCounts,
  into: WorkerMetrics = workerMetrics,
): () => void {
  const timer = setInterval(() => sampleBacklogGate(gate, into), DRAIN_INTERVAL_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    sampleBacklogGate(gate, into);
  };
}

/** The workflows' metric sink (workflows/metrics.ts), never called during replay. */
export function metricSinks(): InjectedSinks<ProvisionerSinks> {
  return {
    metrics: {
      teardownBlocked: { fn: () => teardownBlocked(), callDuringReplay: false },
    },
  };
}
