/**
 * The running catch-ups of this process still at work (running-catch-up.ts),
 * kept apart from it and importing nothing, so that what only waits for them
 * (the unit tests' guard after every file) does not load EC2's client.
 */

/** A launch just recorded on its machine (instanceStatus `pending`). */
export interface RecordedLaunch {
  region: string;
  model: string;
  machineId: string;
  instanceId: string;
}

/** Launches recorded and not yet asked (and written) by any catch-up of this process. */
const inFlight = new Map<Promise<void>, RecordedLaunch>();

/** `asked` (never rejects) settles once `launch` was asked of EC2 and, if running, written. */
export function trackCatchUp(asked: Promise<void>, launch: RecordedLaunch): void {
  inFlight.set(asked, launch);
  void asked.finally(() => inFlight.delete(asked));
}

/**
 * Resolves once every launch recorded so far in this process was asked of EC2
 * and, if running, written (a window still open is waited out: at most its
 * 3 s and the region's pace). A draining worker waits for it before it
 * closes, so a launch recorded in its last seconds still hears its `running`;
 * a test waits for it before it drops its table. Never rejects.
 */
export async function runningCatchUpsSettled(): Promise<void> {
  while (inFlight.size > 0) await Promise.all([...inFlight.keys()]);
}

/** The launches recorded and not yet asked (and written): what `runningCatchUpsSettled` waits for. */
export function runningCatchUpsPending(): RecordedLaunch[] {
  return [...inFlight.values()];
}
