/** How a store waits between tries; tests hand in their own clock and dice. */
export interface BackoffOptions {
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Full jitter over a ceiling that grows 10 ms a try up to 250 ms: racing
 * writers of one item spread out instead of colliding again in step.
 */
export async function jitteredPause(attempt: number, options: BackoffOptions = {}): Promise<void> {
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  await sleep(Math.floor(random() * Math.min(250, 10 * attempt)));
}

/** Doubling from 50 ms (after the first try) up to 1 s, no jitter. */
export async function doublingPause(attempt: number): Promise<void> {
  await realSleep(Math.min(1000, 50 * 2 ** (attempt - 1)));
}

/**
 * Before writes DynamoDB refused for throughput (a statement of a
 * BatchExecuteStatement, which the SDK does not retry) are tried again:
 * 250 ms plus up to 250 ms of jitter, so the partition gets a moment and
 * the writers of one burst do not come back in step.
 */
export async function throttledPause(options: BackoffOptions = {}): Promise<void> {
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  await sleep(THROTTLED_PAUSE_MS + Math.floor(random() * THROTTLED_PAUSE_MS));
}

/** The least pause of throttledPause (and its most jitter). */
export const THROTTLED_PAUSE_MS = 250;
