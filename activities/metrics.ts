import { METRIC } from '../config/metrics';
import { workerMetrics, type WorkerMetrics } from '../config/worker-metrics';
import { classifyError, ec2ErrorCode } from '../ec2/errors';

/**
 * The worker's metric events, each one call at the place it happens (so the
 * files that call them change by a line): counter additions only, written
 * out by config/worker-metrics.ts's periodic flush.
 */

/** A RunInstances answered: `served` of its `size` members got an instance; the rest fail over. */
export function launchSent(size: number, served: number, m: WorkerMetrics = workerMetrics): void {
  m.observe(METRIC.batchSize, size);
  m.count(METRIC.launches, served);
  if (served < size) {
    m.count(METRIC.launchErrors, size - served, { Code: 'InsufficientInstanceCapacity' });
    m.count(METRIC.zoneFailovers, size - served);
  }
}

/** A RunInstances refused for its `size` members: by EC2's code, and a failover when it is the zone's. */
export function launchFailed(err: unknown, size: number, m: WorkerMetrics = workerMetrics): void {
  m.observe(METRIC.batchSize, size);
  m.count(METRIC.launchErrors, size, { Code: ec2ErrorCode(err) ?? 'Unknown' });
  if (classifyError(err) === 'zone') m.count(METRIC.zoneFailovers, size);
}

/** A machine's first read left its launch to an activity: its budget ran out (activities/launch.ts). */
export function firstLaunchDeferred(m: WorkerMetrics = workerMetrics): void {
  m.count(METRIC.firstLaunchesDeferred);
}

/** A machine or container put in status `error`. */
export function machineInError(m: WorkerMetrics = workerMetrics): void {
  m.count(METRIC.machinesInError);
}

/** A teardown newly blocked (workflows/teardown.ts says so through the worker's metrics sink). */
export function teardownBlocked(m: WorkerMetrics = workerMetrics): void {
  m.count(METRIC.teardownBlocked);
}
