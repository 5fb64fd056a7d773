import { z } from 'zod';
import { isActionKey, issueKey, keyedRecord, parseAdminBody } from './admin-body';

/**
 * `PUT /_admin/latency` (API.md, section 2): milliseconds the proxy waits
 * before answering each call of an EC2 action (lower-camel action names,
 * `default` for every other action), and `pendingToRunning`, how long a newly
 * launched instance reports `pending` before `running` (lifecycle.ts).
 * All 0 by default and after `DELETE`.
 */

/** Lower-camel action name, `default` or `pendingToRunning` → milliseconds. */
export type LatencySet = Readonly<Record<string, number>>;

export const NO_LATENCY: LatencySet = { default: 0, pendingToRunning: 0 };

/**
 * Keys that are not an action's delay: `default`, `pendingToRunning`, and
 * `runInstancesAnswer`, how long a RunInstances answer is held after the
 * instances were launched (a launch that happened and whose answer is late:
 * tests kill a worker in that window).
 */
const SPECIAL_KEYS = new Set(['default', 'pendingToRunning', 'runInstancesAnswer']);
/** More than ten minutes is a typo, not a simulation. */
export const MAX_LATENCY_MS = 600_000;

/** Validates a `PUT /_admin/latency` body; keys absent are 0. */
export function parseLatencySet(
  body: unknown,
  isKnownAction: (action: string) => boolean,
): LatencySet {
  const delay = (iss: { path?: PropertyKey[] | undefined }) =>
    `"${issueKey(iss)}" must be an integer number of milliseconds from 0 to ${MAX_LATENCY_MS}`;
  const schema = keyedRecord(
    z.string().refine((key) => SPECIAL_KEYS.has(key) || isActionKey(key, isKnownAction)),
    z
      .number({ error: delay })
      .refine((ms) => Number.isInteger(ms) && ms >= 0 && ms <= MAX_LATENCY_MS, { error: delay }),
    {
      badKey: (key) =>
        `unknown field "${key}" (expected "default", "pendingToRunning", "runInstancesAnswer" or lower-camel EC2 action names such as "runInstances")`,
      notObject: 'the body must be a JSON object',
    },
  );
  return { ...NO_LATENCY, ...parseAdminBody(schema, body) };
}

/** The delay before answering a call to `action` (upper-camel, as in `Action=`). */
export function latencyFor(latency: LatencySet, action: string): number {
  const key = action.charAt(0).toLowerCase() + action.slice(1);
  if (!SPECIAL_KEYS.has(key) && Object.hasOwn(latency, key)) {
    return latency[key] ?? 0;
  }
  return latency.default ?? 0;
}

/** How long a RunInstances answer is held once its instances were launched. */
export function runInstancesAnswerMs(latency: LatencySet): number {
  return latency.runInstancesAnswer ?? 0;
}

export function pendingToRunningMs(latency: LatencySet): number {
  return latency.pendingToRunning ?? 0;
}
