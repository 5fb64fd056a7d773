import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Which part of the worker an EC2 call is made for (`teardown:terminate`,
 * `sweep`, …), so the local EC2 proxy can count calls per caller (issue 30:
 * a teardown's calls told from the sweeper's). Sent as CALLER_HEADER only
 * when PROVISIONER_EC2_CALLER_HEADER is `on`, which only the local stack sets
 * (not whenever EC2_ENDPOINT is set: a cloud deployment may name a VPC
 * endpoint of EC2's there).
 */
export const CALLER_HEADER = 'x-provisioner-caller';

const callers = new AsyncLocalStorage<string>();

/** Runs `fn` with the EC2 calls it makes (and the timers it starts) attributed to `caller`. */
export function asCaller<T>(caller: string, fn: () => T): T {
  return callers.run(caller, fn);
}

/** The caller the current EC2 call is made for, if one was named. */
export function currentCaller(): string | undefined {
  return callers.getStore();
}
