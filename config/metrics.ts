import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/** One of Powertools' units (`Count`, `Milliseconds`, …). */
export type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];
import { optionalEnv } from './env';

/**
 * The provisioner's CloudWatch metrics (embedded metric format, EMF): one
 * catalogue of names for the API Lambdas and the worker, one namespace per
 * environment (`POWERTOOLS_METRICS_NAMESPACE`, set by the CDK stack to
 * `Provisioner/<env>`; `Provisioner/local` on a laptop). Every record is one
 * JSON line on the process's stdout: in Lambda and in the worker's ECS task
 * CloudWatch Logs turns it into metrics (no PutMetricData, no agent); locally
 * it lands in `.provisioner/data/logs/api.log` and `worker.log`.
 */
export const METRIC = {
  /** API: one per request, by `Route` (API Gateway's route key). */
  requests: 'Requests',
  /** API: time from the handler's start to its answer, by `Route`. */
  latency: 'Latency',
  /** API: 4xx answers, by `Route`. */
  clientErrors: 'ClientErrors',
  /** API: 5xx answers, by `Route`. */
  serverErrors: 'ServerErrors',
  /** API: audit entries that could not be written (the request's answer stood; functions/access.ts). */
  auditWriteFailures: 'AuditWriteFailures',
  /** Worker: instances EC2 launched. */
  launches: 'Launches',
  /** Worker: members of a launch batch that got no instance, by EC2's error `Code`. */
  launchErrors: 'LaunchErrors',
  /** Worker: machines in one RunInstances (one sample per batch sent). */
  batchSize: 'BatchSize',
  /** Worker: EC2 calls EC2 throttled (each retried throttled attempt counts). */
  throttledCalls: 'ThrottledCalls',
  /** Worker: launches that failed over to another zone (a zone's capacity failure). */
  zoneFailovers: 'ZoneFailovers',
  /** Worker: machines (and containers) put in status `error`. */
  machinesInError: 'MachinesInError',
  /**
   * Worker: machines whose first read left its launch to an activity, its
   * budget spent (activities/launch.ts FIRST_TASK_LAUNCH_BUDGET_MS).
   */
  firstLaunchesDeferred: 'FirstLaunchesDeferred',
  /** Worker: teardowns newly blocked (a step EC2 refused or that ran out of retries). */
  teardownBlocked: 'TeardownBlocked',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export const DIMENSION = { route: 'Route', code: 'Code' } as const;

/** The services (Powertools' `service` dimension) the metrics are published under. */
export const API_SERVICE = 'provisioner-api';
export const WORKER_SERVICE = 'provisioner-worker';

export const NAMESPACE_ENV = 'POWERTOOLS_METRICS_NAMESPACE';
export const LOCAL_NAMESPACE = 'Provisioner/local';

/** The environment's namespace (`Provisioner/<env>` in the cloud). */
export function metricsNamespace(env: NodeJS.ProcessEnv = process.env): string {
  return optionalEnv('POWERTOOLS_METRICS_NAMESPACE', LOCAL_NAMESPACE, env);
}

/** The namespace the CDK stack gives an environment. */
export function namespaceFor(environment: string): string {
  return `Provisioner/${environment}`;
}

const UNITS: Readonly<Record<MetricName, Unit>> = {
  Requests: MetricUnit.Count,
  Latency: MetricUnit.Milliseconds,
  ClientErrors: MetricUnit.Count,
  ServerErrors: MetricUnit.Count,
  AuditWriteFailures: MetricUnit.Count,
  Launches: MetricUnit.Count,
  LaunchErrors: MetricUnit.Count,
  BatchSize: MetricUnit.Count,
  ThrottledCalls: MetricUnit.Count,
  ZoneFailovers: MetricUnit.Count,
  MachinesInError: MetricUnit.Count,
  FirstLaunchesDeferred: MetricUnit.Count,
  TeardownBlocked: MetricUnit.Count,
};

export function unitOf(name: MetricName): Unit {
  return UNITS[name];
}

let apiMetrics: Metrics | undefined;

/** The API's Powertools Metrics, made on first use (its namespace read then). */
function api(): Metrics {
  apiMetrics ??= new Metrics({ namespace: metricsNamespace(), serviceName: API_SERVICE });
  return apiMetrics;
}

/**
 * One request's metrics, published at once as one EMF record under two
 * dimension sets: by route (`service`, `Route`) and for the whole API
 * (`service`), which the alarms watch. Synchronous from the first call to
 * the publish, so concurrent requests of one process never mix their
 * dimensions.
 */
export function recordRequest(
  route: string,
  status: number,
  latencyMs: number,
  requestId?: string,
): void {
  const m = api();
  m.addDimension(DIMENSION.route, route || 'unknown');
  m.addDimensions({});
  // not a dimension: links the record to the request's log lines (Logs Insights)
  if (requestId) m.addMetadata('requestId', requestId);
  m.addMetric(METRIC.requests, MetricUnit.Count, 1);
  m.addMetric(METRIC.latency, MetricUnit.Milliseconds, Math.round(latencyMs * 100) / 100);
  m.addMetric(METRIC.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0);
  m.addMetric(METRIC.serverErrors, MetricUnit.Count, status >= 500 ? 1 : 0);
  m.publishStoredMetrics();
}
