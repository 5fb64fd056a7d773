/**
 * What one launch try may run: its batch window, EC2's RunInstances bucket
 * and the answer (activities/launch.ts LAUNCH_HEARTBEAT_EVERY_MS has the
 * figures). The launch step's start-to-close (workflows/proxies.ts
 * LAUNCH_OPTIONS); in the workflow task, where the step's start-to-close
 * spans its retries (LOCAL_LAUNCH_OPTIONS), what its batch still gives a try
 * (activities/launch.ts thisTry).
 */
export const LAUNCH_TRY_MS = 120_000;
