/**
 * Node options the worker process runs with, wherever it runs: the deployed
 * task's `NODE_OPTIONS` (infra/constructs/worker.ts, which the shipped local
 * stack copies from the synthesized task definition) and the local stack's
 * worker started from sources (local/stack.ts).
 *
 * `--max-semi-space-size`: V8's young generation. By default a semi-space
 * grows to at most 16 MiB, so a burst of launches (each workflow task and
 * activity allocates protobuf messages, AWS SDK requests and answers,
 * promises) runs a scavenge every few milliseconds and promotes short-lived
 * objects to the old generation, which the major collector then walks: at
 * N = 1,000 the garbage collector was the top item of the worker's CPU
 * profile (issue 26). A larger semi-space makes each scavenge rarer and lets
 * more objects die young. It is a ceiling, not a reservation: the space
 * starts at 1 MiB and grows only under allocation pressure. Each isolate has
 * its own (the main thread and the workflow thread), so the most it can
 * take is 2 isolates × 3 × the size (README, "Worker settings, measured",
 * has the figures and the peak RSS against the task's 1 GiB).
 */
export const WORKER_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=32'];
