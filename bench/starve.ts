import { setTimeout as sleep } from 'node:timers/promises';

/**
 * `npm run bench -- --starve-worker STOP/RUN` (seconds, e.g. `0.3/0.05`):
 * through the launch phase each worker process group is stopped (SIGSTOP)
 * for STOP seconds and let run (SIGCONT) for RUN, in turn, so it gets at most
 * RUN / (STOP + RUN) of the CPU it would: a worker starved while the server,
 * DynamoDB and EC2 answer at full speed (an overloaded task, a noisy
 * neighbour), which a busy machine cannot give, since it slows them all.
 */
export interface Starvation {
  stopMs: number;
  runMs: number;
}

/** Parses `STOP/RUN` in seconds; a string saying what is wrong when it is not that. */
export function parseStarvation(text: string | undefined): Starvation | string {
  const m = /^(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(text ?? '');
  const stopMs = m ? Math.round(Number(m[1]) * 1000) : NaN;
  const runMs = m ? Math.round(Number(m[2]) * 1000) : NaN;
  if (!(stopMs >= 10 && stopMs <= 10_000 && runMs >= 10 && runMs <= 10_000)) {
    return `--starve-worker takes STOP/RUN in seconds, each from 0.01 to 10 (e.g. 0.3/0.05), got ${String(text)}`;
  }
  return { stopMs, runMs };
}

/** The share of the time a starved worker may run. */
export function runningShare(s: Starvation): number {
  return s.runMs / (s.stopMs + s.runMs);
}

export interface Starver {
  /**
   * Ends the pulses at once; every group is continued (SIGCONT) before it
   * resolves. Rejects with a signal's error other than a group gone (ESRCH).
   */
  stop(): Promise<void>;
  /** Pulses sent so far (each a stop and a continue). */
  readonly pulses: number;
}

type Kill = (pid: number, signal: NodeJS.Signals) => void;

/**
 * Pulses the process groups led by `pids` (the stack's workers are spawned
 * detached, each its own group, local/processes.ts) until `stop()`. A group
 * gone (ESRCH) is skipped; any other refusal (EPERM) ends the pulses and is
 * what `stop()` rejects with. Whatever happens, the last signal each gets is
 * SIGCONT, on `stop()` and on the bench's exit: a worker left stopped would
 * hold the stack's shutdown.
 */
export function starve(
  pids: number[],
  s: Starvation,
  kill: Kill = (pid, sig) => process.kill(pid, sig),
): Starver {
  if (pids.length === 0) throw new Error('--starve-worker: no worker process to starve');
  const halt = new AbortController();
  let pulses = 0;
  let failure: Error | undefined;
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        kill(-pid, sig);
      } catch (err) {
        // the group is gone: nothing to starve or continue
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
          failure ??= err instanceof Error ? err : new Error(String(err));
        }
      }
    }
  };
  const onExit = () => signal('SIGCONT');
  process.once('exit', onExit);
  const pause = (ms: number) =>
    sleep(ms, undefined, { signal: halt.signal }).catch(() => undefined);
  const loop = (async () => {
    try {
      while (!halt.signal.aborted && failure === undefined) {
        signal('SIGSTOP');
        await pause(s.stopMs);
        signal('SIGCONT');
        pulses += 1;
        await pause(s.runMs);
      }
    } finally {
      signal('SIGCONT');
      process.removeListener('exit', onExit);
    }
  })();
  return {
    async stop() {
      halt.abort();
      await loop;
      if (failure !== undefined) throw failure;
    },
    get pulses() {
      return pulses;
    },
  };
}
