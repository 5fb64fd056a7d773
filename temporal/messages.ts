/**
 * The status messages a machine shows while it is provisioned, worded like
 * Juju's provisioner (internal/provisionertask). Pure, so workflows and tests
 * share them.
 */

import { goDuration } from '../core/duration';

export { goDuration };

/** While a launch is in flight: which zone and which attempt. */
export function startingMessage(zone: string, attempt: number, maxAttempts: number): string {
  return `starting in zone "${zone}" (attempt ${attempt} of ${maxAttempts})`;
}

/**
 * After a zone-specific failure, when another zone is left to try. Unlike
 * Juju, the next zone is tried at once (a capacity shortage in one zone says
 * nothing about the next), so the message names no delay.
 */
export function zoneFailoverMessage(machineId: string, zone: string, cause: string): string {
  return `failed to start machine ${machineId} in zone "${zone}", retrying with new availability zone: ${cause}`;
}

/**
 * The cause when an attempt ends because every zone left failed: names the
 * zones in the order they were tried, then the last zone's error. With one
 * zone (or none) the cause is that zone's error as it is.
 */
export function everyZoneFailedMessage(zones: readonly string[], lastCause: string): string {
  if (zones.length < 2) return lastCause;
  return `every zone tried failed (${zones.join(', ')}); the last: ${lastCause}`;
}

/** After an attempt is spent (every zone failed, or a zone-independent error): Juju's wording. */
export function attemptFailedMessage(
  machineId: string,
  cause: string,
  retryDelayMs: number,
  attemptsLeft: number,
): string {
  return `failed to start machine ${machineId} (${cause}), retrying in ${goDuration(retryDelayMs)} (${attemptsLeft} more attempts)`;
}

/** The instance was launched but could not be recorded, so it was terminated. */
export function recordFailedMessage(machineId: string, instanceId: string, cause: string): string {
  return `cannot record instance ${instanceId} for machine ${machineId} (terminated): ${cause}`;
}

/** An instance launched and not recorded that EC2 would not terminate either: kept, and said. */
export function unterminatedMessage(instanceIds: readonly string[], cause: string): string {
  return (
    `instance ${instanceIds.join(', ')} launched for it could not be terminated (${cause}): ` +
    'it is terminated when the machine is retried or destroyed'
  );
}

/** A launched instance that could be neither recorded nor terminated. */
export function recordFailedUnterminatedMessage(
  machineId: string,
  instanceId: string,
  cause: string,
  terminateCause: string,
): string {
  return `cannot record instance ${instanceId} for machine ${machineId}: ${cause}; ${unterminatedMessage(
    [instanceId],
    terminateCause,
  )}`;
}

/**
 * A step that ended without a result: out of its retries or its time
 * (proxies.ts), or refused for good. Names the activity and every cause
 * Temporal recorded (`activity ScheduleToClose timeout: Unavailable: …`).
 */
export function stepFailedMessage(err: {
  message: string;
  cause?: unknown;
  activityType?: string;
}): string {
  const causes: string[] = [];
  for (let e: unknown = err.cause, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e.message && !causes.includes(e.message)) causes.push(e.message);
    e = (e as { cause?: unknown }).cause;
  }
  const step = err.activityType ? `${err.activityType} failed` : 'a step failed';
  return causes.length > 0 ? `${step}: ${causes.join(': ')}` : `${step}: ${err.message}`;
}

/**
 * A Dead machine's status while it is torn down: the instances it
 * terminates, or keeps under its harvest mode (empty when it has none).
 */
export function teardownStatusMessage(
  instanceIds: readonly string[],
  terminate: boolean,
  harvestMode: string,
): string {
  if (instanceIds.length === 0) return '';
  return terminate
    ? `terminating instance ${instanceIds.join(', ')}`
    : `keeping instance ${instanceIds.join(', ')} (harvest mode "${harvestMode}")`;
}
