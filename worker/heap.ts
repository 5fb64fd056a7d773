/**
 * The V8 heap the worker runs with, the same everywhere: the task
 * definition's `NODE_OPTIONS` (infra/constructs/worker.ts) and the local
 * stack's worker command (local/stack.ts), so the heap `npm run bench`
 * measures is the one the cloud runs.
 *
 * Why it is set at all: left alone, Node sizes V8's heap from the memory the
 * process may use, a container's limit included. The old generation gets a
 * quarter of it, and the young generation's semi-space is derived from that:
 * 1 MiB (V8's minimum) in dev's and staging's 1 GiB task, 4 MiB in prod's
 * 2 GiB, and 16 MiB (V8's maximum) on a machine with 16 GiB or more, the
 * only size any figure of the README was measured at. A semi-space sixteen
 * times smaller means a scavenge of each thread's young generation sixteen
 * times as often, in the main thread and in the workflow thread alike (a V8
 * flag holds for every isolate of the process). README, "Worker tuning",
 * "The young generation", has the figures.
 */
export const WORKER_SEMI_SPACE_MIB = 16;

/** Node's options for the worker process, in the form `NODE_OPTIONS` and a command line take. */
export function workerNodeOptions(): string[] {
  return [`--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`];
}
