import type { LaunchBatch, LaunchBatchCall, LaunchMarker } from '../../state/launch-batches';

/**
 * The launch batches' records (state/launch-batches.ts) in memory, as the
 * table keeps them: one live batch per token seed, a takeover only of the
 * batch named as settled. With `hold.mark` (`hold.commit`) the first mark
 * (commit) waits: `firstMark` (`firstCommit`) resolves when it is reached,
 * and `releaseMark()` (`releaseCommit()`) lets it go on.
 */
export function fakeLaunchBatches(hold: { mark?: boolean; commit?: boolean } = {}) {
  const markers = new Map<string, LaunchMarker>();
  const batches = new Map<string, LaunchBatch>();
  const markHold = heldStep();
  const commitHold = heldStep();
  let marks = 0;
  let commits = 0;
  return {
    markers,
    batches,
    firstMark: markHold.reached,
    releaseMark: markHold.release,
    firstCommit: commitHold.reached,
    releaseCommit: commitHold.release,
    store: {
      async mark(
        _model: string,
        machineId: string,
        marker: LaunchMarker,
        options: { replaces?: string } = {},
      ) {
        marks += 1;
        if (marks === 1 && hold.mark) await markHold.wait();
        const now = markers.get(machineId);
        const refused =
          options.replaces !== undefined
            ? now?.batchId !== marker.batchId && now?.batchId !== options.replaces
            : now !== undefined &&
              now.tokenSeed === marker.tokenSeed &&
              now.batchId !== marker.batchId;
        if (refused) return { marked: false, claimedBy: now?.batchId ?? '' };
        markers.set(machineId, marker);
        return { marked: true };
      },
      written: (_model: string, id: string) => Promise.resolve(batches.has(id)),
      marker: (_model: string, machineId: string) => Promise.resolve(markers.get(machineId)),
      async commit(_model: string, b: { id: string; members: string[]; call: LaunchBatchCall }) {
        commits += 1;
        if (commits === 1 && hold.commit) await commitHold.wait();
        if (batches.has(b.id)) return false;
        batches.set(b.id, { id: b.id, state: 'sent', members: b.members, call: b.call });
        return true;
      },
      settle(_model: string, id: string) {
        const known = batches.get(id);
        if (known) return Promise.resolve(known);
        const abandoned: LaunchBatch = { id, state: 'abandoned', members: [] };
        batches.set(id, abandoned);
        return Promise.resolve(abandoned);
      },
    },
  };
}

/** A step that, once reached, waits for its release. */
function heldStep() {
  let reachedNow!: () => void;
  const reached = new Promise<void>((r) => (reachedNow = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  return {
    reached,
    release,
    wait: () => {
      reachedNow();
      return released;
    },
  };
}
