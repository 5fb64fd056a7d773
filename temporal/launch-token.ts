/**
 * A launch's token seed: one per machine run, pass, attempt and zone, so a
 * retried launch of the same attempt in the same zone (a retried activity,
 * a local activity run again after its workflow task was lost, a worker
 * that restarted) sends the very same RunInstances (same ClientToken) and
 * joins no second batch (state/launch-batches.ts). The workflow makes it;
 * the first read of a run whose first workflow task was lost reads it back
 * from the machine's launch marker (activities/records.ts
 * `zoneMarkedByThisRun`), so the format is kept here, in one place.
 */
export function launchTokenSeed(
  run: { workflowId: string; runId: string },
  pass: number,
  attempt: number,
  zone: string,
): string {
  return `${run.workflowId}/${run.runId}/${pass}/${attempt}/${zone}`;
}

/**
 * The pass, attempt and zone of a token seed made by `run`, or undefined
 * when another run made it (or it is not a token seed). Run ids and zone
 * names hold no `/`; a workflow id's slashes come before the run id.
 */
export function parseRunSeed(
  seed: string,
  run: { workflowId: string; runId: string },
): { pass: number; attempt: number; zone: string } | undefined {
  const prefix = `${run.workflowId}/${run.runId}/`;
  if (!seed.startsWith(prefix)) return undefined;
  const parts = seed.slice(prefix.length).split('/');
  if (parts.length !== 3) return undefined;
  const [pass, attempt, zone] = parts as [string, string, string];
  if (!/^\d+$/.test(pass) || !/^\d+$/.test(attempt) || zone === '') return undefined;
  return { pass: Number(pass), attempt: Number(attempt), zone };
}

/**
 * Who makes a zone claim, written with it (`claimedBy`): the machine run and
 * the attempt it claims for. A step of that run run again after its
 * workflow task was lost, for the same attempt, keeps the zone instead of
 * claiming again, so its launch has the lost one's token seed. The pass is
 * not named (the activities are not told it): a claimant is read only with
 * the claim it made (`zoneClaim`), and every pass ends with that claim gone
 * (a recorded launch makes it the zone, an error or a reprovision releases
 * it), so a later pass's attempt 1 never finds an earlier pass's claim.
 */
export function claimantOf(run: { workflowId: string; runId: string }, attempt: number): string {
  return `${run.workflowId}/${run.runId}/${attempt}`;
}
