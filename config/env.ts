/**
 * Configuration getters. Each throws at cold start when a required variable is
 * missing or malformed, naming the variable, rather than running on a blank.
 */
import { parseDuration } from '../core/duration';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function requireEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ConfigError(`environment variable ${name} is required but not set`);
  }
  return value;
}

export function optionalEnv(
  name: string,
  fallback: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const value = env[name];
  return value === undefined || value === '' ? fallback : value;
}

export { parseDuration };

export function durationEnv(
  name: string,
  fallback: string,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const text = optionalEnv(name, fallback, env);
  const ms = parseDuration(text);
  if (ms === undefined) {
    throw new ConfigError(
      `environment variable ${name}: "${text}" is not a duration like 500ms, 10s, 1m or 2h`,
    );
  }
  return ms;
}

/** A duration that may be `0` (off). */
function zeroableDurationEnv(name: string, fallback: string, env: NodeJS.ProcessEnv): number {
  return optionalEnv(name, fallback, env).trim() === '0' ? 0 : durationEnv(name, fallback, env);
}

/**
 * The most PROVISIONER_LAUNCH_KEY_SPACING may be: a batch waits for spacing
 * up to two spacings at the gate, which must end well inside a launch try
 * (its members' liveUntil, 105 s of the 2-minute start-to-close).
 */
export const MAX_LAUNCH_KEY_SPACING_MS = 30_000;

/** `launchKeySpacingMs` when PROVISIONER_LAUNCH_KEY_SPACING is set (empty is unset: the batch's max window). */
function keySpacingEnv(env: NodeJS.ProcessEnv): { launchKeySpacingMs?: number } {
  const name = 'PROVISIONER_LAUNCH_KEY_SPACING';
  if (optionalEnv(name, '', env) === '') return {};
  const ms = zeroableDurationEnv(name, '0s', env);
  if (ms > MAX_LAUNCH_KEY_SPACING_MS) {
    throw new ConfigError(
      `environment variable ${name}: "${env[name]}" is over ${MAX_LAUNCH_KEY_SPACING_MS / 1000}s (a batch waits up to two spacings, inside a launch try)`,
    );
  }
  return { launchKeySpacingMs: ms };
}

/**
 * The most PROVISIONER_FIRST_LAUNCH_BUDGET may be: the SDK's core sends the
 * first workflow task's heartbeat at 16 s (80 % of its 20 s timeout), and a
 * budget near or past that no longer ends the task's launch before it.
 */
export const MAX_FIRST_LAUNCH_BUDGET_MS = 15_000;

/** PROVISIONER_FIRST_LAUNCH_BUDGET: above 0 and at most MAX_FIRST_LAUNCH_BUDGET_MS. */
function firstLaunchBudgetEnv(env: NodeJS.ProcessEnv): number {
  const name = 'PROVISIONER_FIRST_LAUNCH_BUDGET';
  // the same as activities/launch.ts FIRST_TASK_LAUNCH_BUDGET_MS (test/unit/config/env.test.ts checks it)
  const ms = durationEnv(name, '12s', env);
  if (ms <= 0 || ms > MAX_FIRST_LAUNCH_BUDGET_MS) {
    throw new ConfigError(
      `environment variable ${name}: "${env[name]}" is not above 0 and at most ${MAX_FIRST_LAUNCH_BUDGET_MS / 1000}s (the first workflow task's heartbeat is at 16s)`,
    );
  }
  return ms;
}

/** A number above 0 (`2`, `0.5`). */
export function positiveNumberEnv(
  name: string,
  fallback: number,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const text = optionalEnv(name, String(fallback), env);
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(n > 0)) {
    throw new ConfigError(`environment variable ${name}: "${text}" is not a positive number`);
  }
  return n;
}

/** A switch: `on` or `off`, nothing else. */
function onOff(name: string, text: string): boolean {
  if (text !== 'on' && text !== 'off') {
    throw new ConfigError(`environment variable ${name}: "${text}" is neither on nor off`);
  }
  return text === 'on';
}

export function positiveIntEnv(
  name: string,
  fallback: number,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const text = optionalEnv(name, String(fallback), env);
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw new ConfigError(`environment variable ${name}: "${text}" is not a positive integer`);
  }
  return Number(text);
}

/** Tuning of the provisioning workflow (API.md, "Worker tuning"). */
export interface ProvisioningTuning {
  startAttempts: number;
  retryDelayMs: number;
  sweepIntervalMs: number;
  strayGraceMs: number;
  /** Launch coalescing: a batch goes out this long after its latest launch arrived… */
  launchBatchIdleMs: number;
  /** …and at most this long after its first. */
  launchBatchMaxMs: number;
  /** How long a zone's capacity failure for a type steers the next machines elsewhere (0: never). */
  capacityMemoryMs: number;
  /** How long zone states are cached (at most 5 s; 0: asked for every choice). */
  zoneCacheMs: number;
  /** RunInstances calls the worker makes at once per region, then per second (EC2's published bucket: 5, 2). */
  launchBurst: number;
  launchRatePerSecond: number;
  /**
   * EC2's instance bucket as this account has it (EC2's default: 1,000 at
   * once, then 2 a second): the worker does not pace on it (EC2 enforces
   * it), it records its launches against it for plans (state/launch-record.ts).
   */
  launchInstanceBurst?: number;
  launchInstanceRatePerSecond?: number;
  /**
   * Every worker of the deployment paces its RunInstances in the one launch
   * record (state/launch-record.ts `reserve`), so K workers together spend
   * the account's bucket once: `PROVISIONER_LAUNCH_SHARED_PACING=on` (the
   * default); `off`: each worker paces alone on its own bucket (as before).
   */
  launchSharedPacing?: boolean;
  /**
   * With shared pacing, another worker's RunInstances of the same launch key
   * (region, zone, spec) spaces this worker's next one of it by this long
   * (activities/launch-batcher.ts `gate`): `PROVISIONER_LAUNCH_KEY_SPACING`,
   * default the batch's max window (PROVISIONER_LAUNCH_BATCH_MAX); 0: off.
   */
  launchKeySpacingMs?: number;
  /**
   * How long a machine's first read may hold its launch in the first workflow
   * task before its batch is dispatched (activities/launch.ts `launchPrepared`),
   * counted from when the workflow scheduled the read: a launch whose batch
   * has not been dispatched by then is withdrawn and made by the workflow's
   * launch activity instead: `PROVISIONER_FIRST_LAUNCH_BUDGET`, default 12 s,
   * at most MAX_FIRST_LAUNCH_BUDGET_MS; absent (deps built by hand in tests),
   * FIRST_TASK_LAUNCH_BUDGET_MS.
   */
  firstLaunchBudgetMs?: number;
  /** How long a reservation in the launch record may take before the worker paces alone (default RESERVE_TIMEOUT_MS). */
  launchReserveTimeoutMs?: number;
  /** How long one read or write of the launch record may take before it is aborted (default RECORD_REQUEST_TIMEOUT_MS). */
  launchRecordRequestTimeoutMs?: number;
  /** The first wait after a throttled RunInstances before it is paced again, doubled per throttle up to 16× (default THROTTLE_BACKOFF_MS). */
  launchThrottleBackoffMs?: number;
  /** `reprovisionLost`: machines one model's sweep reprovisions at most. */
  reprovisionCap: number;
  /** Models the sweeper sweeps at once (each sweep lists the model's instances on EC2). */
  sweepConcurrency?: number;
  /** Containers: how often a container's workflow looks at its host and its Run Command. */
  containerPollMs?: number;
  /** Containers: how long a running host may take to come online in SSM before its container is in error. */
  containerOnlineTimeoutMs?: number;
  /** History events a blocked teardown's run holds before it continues as new. */
  blockedHistoryEvents?: number;
  /**
   * Teardown's own TerminateInstances bucket per region: calls at once, then
   * per second (EC2's published bucket: 100, 5). README "Teardown at scale".
   */
  teardownTerminateBurst?: number;
  teardownTerminateRatePerSecond?: number;
  /** Teardown's DescribeInstances bucket per region (half of EC2's non-mutating 100, 20: 50, 10). */
  teardownDescribeBurst?: number;
  teardownDescribeRatePerSecond?: number;
  /** Termination coalescing: a batch goes out this long after its latest request… */
  teardownBatchIdleMs?: number;
  /** …and at most this long after its first. */
  teardownBatchMaxMs?: number;
  /**
   * Each EC2 call names its caller in a header (ec2/caller.ts), for the
   * local EC2 proxy's per-caller counts: `PROVISIONER_EC2_CALLER_HEADER=on`,
   * set by the local stack only; off by default, so nothing is added to a
   * call to AWS (or to a VPC endpoint that EC2_ENDPOINT may name).
   */
  ec2CallerHeader?: boolean;
  /**
   * The launch path's single-item DynamoDB writes (a batch's marks, the
   * records of launched instances) made close together go out as one
   * BatchExecuteStatement (state/statement-batch.ts): on unless
   * `PROVISIONER_DDB_WRITE_BATCHING=off`, which sends each as one UpdateItem.
   */
  ddbWriteBatching?: boolean;
}

export function provisioningTuning(env: NodeJS.ProcessEnv = process.env): ProvisioningTuning {
  return {
    startAttempts: positiveIntEnv('PROVISIONER_START_ATTEMPTS', 10, env),
    retryDelayMs: durationEnv('PROVISIONER_RETRY_DELAY', '10s', env),
    sweepIntervalMs: durationEnv('PROVISIONER_SWEEP_INTERVAL', '1m', env),
    strayGraceMs: durationEnv('PROVISIONER_STRAY_GRACE', '60s', env),
    launchBatchIdleMs: durationEnv('PROVISIONER_LAUNCH_BATCH_IDLE', '1s', env),
    launchBatchMaxMs: durationEnv('PROVISIONER_LAUNCH_BATCH_MAX', '5s', env),
    capacityMemoryMs: zeroableDurationEnv('PROVISIONER_CAPACITY_MEMORY', '3m', env),
    zoneCacheMs: Math.min(zeroableDurationEnv('PROVISIONER_ZONE_CACHE', '5s', env), 5_000),
    launchBurst: positiveIntEnv('PROVISIONER_LAUNCH_BURST', 5, env),
    launchRatePerSecond: positiveNumberEnv('PROVISIONER_LAUNCH_RATE', 2, env),
    launchInstanceBurst: positiveIntEnv('PROVISIONER_LAUNCH_INSTANCE_BURST', 1000, env),
    launchInstanceRatePerSecond: positiveNumberEnv('PROVISIONER_LAUNCH_INSTANCE_RATE', 2, env),
    launchSharedPacing: onOff(
      'PROVISIONER_LAUNCH_SHARED_PACING',
      optionalEnv('PROVISIONER_LAUNCH_SHARED_PACING', 'on', env),
    ),
    ...keySpacingEnv(env),
    firstLaunchBudgetMs: firstLaunchBudgetEnv(env),
    reprovisionCap: positiveIntEnv('PROVISIONER_REPROVISION_CAP', 20, env),
    sweepConcurrency: positiveIntEnv('PROVISIONER_SWEEP_CONCURRENCY', 8, env),
    containerPollMs: durationEnv('PROVISIONER_CONTAINER_POLL', '5s', env),
    containerOnlineTimeoutMs: durationEnv('PROVISIONER_CONTAINER_ONLINE_TIMEOUT', '10m', env),
    blockedHistoryEvents: positiveIntEnv('PROVISIONER_BLOCKED_HISTORY', 2_000, env),
    teardownTerminateBurst: positiveIntEnv('PROVISIONER_TEARDOWN_TERMINATE_BURST', 100, env),
    teardownTerminateRatePerSecond: positiveNumberEnv(
      'PROVISIONER_TEARDOWN_TERMINATE_RATE',
      5,
      env,
    ),
    teardownDescribeBurst: positiveIntEnv('PROVISIONER_TEARDOWN_DESCRIBE_BURST', 50, env),
    teardownDescribeRatePerSecond: positiveNumberEnv('PROVISIONER_TEARDOWN_DESCRIBE_RATE', 10, env),
    teardownBatchIdleMs: durationEnv('PROVISIONER_TEARDOWN_BATCH_IDLE', '1s', env),
    teardownBatchMaxMs: durationEnv('PROVISIONER_TEARDOWN_BATCH_MAX', '5s', env),
    ec2CallerHeader: onOff(
      'PROVISIONER_EC2_CALLER_HEADER',
      optionalEnv('PROVISIONER_EC2_CALLER_HEADER', 'off', env),
    ),
    ddbWriteBatching: onOff(
      'PROVISIONER_DDB_WRITE_BATCHING',
      optionalEnv('PROVISIONER_DDB_WRITE_BATCHING', 'on', env),
    ),
  };
}

/** Where the services are. Locally these point at loopback; in the cloud they are unset or real. */
export interface ServiceEndpoints {
  region: string;
  tableName: string;
  dynamodbEndpoint?: string;
  ec2Endpoint?: string;
  /** SSM (Run Command on container hosts): `SSM_ENDPOINT`, else the EC2 endpoint when set. */
  ssmEndpoint?: string;
  temporalAddress: string;
  temporalNamespace: string;
}

export function serviceEndpoints(env: NodeJS.ProcessEnv = process.env): ServiceEndpoints {
  return {
    region: optionalEnv('AWS_REGION', 'us-east-1', env),
    tableName: requireEnv('PROVISIONER_TABLE', env),
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
    ec2Endpoint: env.EC2_ENDPOINT || undefined,
    // locally the EC2 proxy serves SSM too
    ssmEndpoint: env.SSM_ENDPOINT || env.EC2_ENDPOINT || undefined,
    temporalAddress: requireEnv('TEMPORAL_ADDRESS', env),
    temporalNamespace: optionalEnv('TEMPORAL_NAMESPACE', 'default', env),
  };
}
