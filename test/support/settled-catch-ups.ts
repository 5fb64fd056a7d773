import { clearTimeout as realClearTimeout, setTimeout as realSetTimeout } from 'node:timers';
import {
  runningCatchUpsPending,
  runningCatchUpsSettled,
} from '../../activities/running-catch-up-in-flight';

/**
 * Every unit file's last word (jest.config.js, setupFilesAfterEnv): the
 * running catch-ups its launches opened are settled before the next file
 * runs. A window left open warns 1–3 s later in whatever file the Jest
 * worker runs next, and a log after that file's tests are done sets Jest's
 * exit code to 1. What settles within the bound is waited for; what does not
 * (a port that hangs, a window on a fake clock never advanced) fails the file
 * with the launches left.
 *
 * Hooks of the file's own top level run after this one (declaration order),
 * those of its describe blocks before it: a file that closes its catch-ups
 * itself at top level finds them settled already. It waits a leak out rather
 * than failing on it (a window still open at a file's end is routine timing
 * on a busy machine), so it keeps the next file clean; it does not find the
 * file that leaked.
 */

/** Generous: a window (≤ 3 s) and the region's pace (≤ 3 s) on a busy machine. */
export const SETTLE_BOUND_MS = 30_000;

// node:timers' own, which Jest's fake timers do not replace: the bound runs on the real clock

/** Resolves once settled; rejects naming the launches left if they do not settle within `boundMs`. */
export async function catchUpsSettledWithin(boundMs: number): Promise<void> {
  if (runningCatchUpsPending().length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = realSetTimeout(() => resolve('late'), boundMs);
  });
  try {
    const outcome = await Promise.race([runningCatchUpsSettled(), late]);
    if (outcome !== 'late') return;
  } finally {
    realClearTimeout(timer);
  }
  const left = runningCatchUpsPending();
  const named = left
    .slice(0, 10)
    .map((l) => `${l.region} ${l.model}/${l.machineId} ${l.instanceId}`)
    .join(', ');
  throw new Error(
    `running catch-ups of ${left.length} recorded launch(es) not settled ${boundMs} ms after ` +
      `the file's tests: ${named}${left.length > 10 ? ', …' : ''} (await runningCatchUpsSettled() ` +
      'where the file records launches, on the clock its windows run on)',
  );
}
