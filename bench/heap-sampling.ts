/**
 * Preload for a worker process, after tsx:
 * `npm run bench -- --worker-node-option=--import=tsx --worker-node-option=--import=./bench/heap-sampling.ts`.
 * Samples the main thread's allocations from start to exit, objects the
 * garbage collector has already freed included (what `--heap-prof` leaves
 * out, so this shows what the collector has to clear, not what stays), and
 * writes them as a `.heapprofile` (Chrome DevTools' format) to
 * BENCH_HEAP_PROFILE_DIR (default: the temporary directory) when the
 * process exits. Summarize with `node --import tsx bench/heap-summary.ts FILE`.
 * Bench tooling only: the worker never loads it otherwise.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const session = new Session();
session.connect();
// a session on its own thread answers synchronously, so the exit handler below can stop and write
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', {
  samplingInterval: 64 * 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
process.on('exit', () => {
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err || !result) return;
    const dir = process.env.BENCH_HEAP_PROFILE_DIR || tmpdir();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `worker-${process.pid}.heapprofile`), JSON.stringify(result.profile));
  });
});
