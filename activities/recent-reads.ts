import { Context } from '@temporalio/activity';
import type { MachineRecord } from '../state/types';
import type { MachineRef } from './types';

import { RECENT_READ_MS } from '../core/cache-ttl';
export { RECENT_READ_MS };

/**
 * The machine records this worker read moments ago, for the next step of the
 * same workflow run: a machine's first workflow task loads the machine and
 * then plans its launch, and the plan used to read the machine again (with
 * DynamoDB Local answering ~200 reads a second, a thousand machines paid
 * five seconds for the second read). Keyed by the workflow's run, so a
 * machine removed and recorded again under the same id (another run) never
 * sees the old record; outside an activity (tests) nothing is kept.
 *
 * Not on lru-cache: nothing is loaded (a read is handed in), and a read is
 * taken once, not kept for its lifetime.
 */
export class RecentReads {
  private readonly reads = new Map<string, { at: number; machine: MachineRecord }>();

  constructor(
    private readonly ttlMs: number = RECENT_READ_MS,
    private readonly now: () => number = Date.now,
  ) {}

  remember(ref: MachineRef, machine: MachineRecord): void {
    const key = runKey(ref);
    if (key === undefined) return;
    this.prune();
    this.reads.set(key, { at: this.now(), machine });
  }

  /** The record read for this run within the TTL, taken (each read serves one step). */
  take(ref: MachineRef): MachineRecord | undefined {
    const key = runKey(ref);
    if (key === undefined) return undefined;
    const hit = this.reads.get(key);
    this.reads.delete(key);
    if (!hit || this.now() - hit.at > this.ttlMs) return undefined;
    return hit.machine;
  }

  get size(): number {
    return this.reads.size;
  }

  private prune(): void {
    if (this.reads.size < 1000) return;
    const now = this.now();
    for (const [k, v] of this.reads) if (now - v.at > this.ttlMs) this.reads.delete(k);
  }
}

/** The calling workflow run and the machine, or undefined outside an activity. */
function runKey(ref: MachineRef): string | undefined {
  let runId: string | undefined;
  try {
    runId = Context.current().info.workflowExecution?.runId;
  } catch {
    return undefined;
  }
  return runId === undefined ? undefined : `${runId}/${ref.model}/${ref.machineId}`;
}
