import { bearerToken, tokenSourceFromEnv, tokensMatch } from '../../../config/auth';
import { FIRST_TASK_LAUNCH_BUDGET_MS } from '../../../activities/launch';
import {
  ConfigError,
  durationEnv,
  MAX_FIRST_LAUNCH_BUDGET_MS,
  parseDuration,
  positiveIntEnv,
  provisioningTuning,
  requireEnv,
  serviceEndpoints,
} from '../../../config/env';

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['1.5s', 1500],
    ['1m', 60_000],
    ['2h', 7_200_000],
  ])('parses %s as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '10', 's', '-1s', '1d', '1 m x'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('names the variable when it is malformed', () => {
    expect(() =>
      durationEnv('PROVISIONER_RETRY_DELAY', '10s', { PROVISIONER_RETRY_DELAY: 'soon' }),
    ).toThrow(
      new ConfigError(
        'environment variable PROVISIONER_RETRY_DELAY: "soon" is not a duration like 500ms, 10s, 1m or 2h',
      ),
    );
  });
});

describe('worker tuning', () => {
  it("defaults to Juju's 10 attempts, 10 s apart", () => {
    expect(provisioningTuning({})).toEqual({
      startAttempts: 10,
      retryDelayMs: 10_000,
      sweepIntervalMs: 60_000,
      sweepConcurrency: 8,
      strayGraceMs: 60_000,
      launchBatchIdleMs: 1000,
      launchBatchMaxMs: 5000,
      capacityMemoryMs: 180_000,
      zoneCacheMs: 5000,
      launchBurst: 5,
      launchRatePerSecond: 2,
      launchInstanceBurst: 1000,
      launchInstanceRatePerSecond: 2,
      firstLaunchBudgetMs: 12_000,
      // every worker of the deployment paces its RunInstances in the one launch record
      launchSharedPacing: true,
      reprovisionCap: 20,
      containerPollMs: 5000,
      containerOnlineTimeoutMs: 600_000,
      blockedHistoryEvents: 2000,
      // EC2's published TerminateInstances bucket; half its DescribeInstances one
      teardownTerminateBurst: 100,
      teardownTerminateRatePerSecond: 5,
      teardownDescribeBurst: 50,
      teardownDescribeRatePerSecond: 10,
      teardownBatchIdleMs: 1000,
      teardownBatchMaxMs: 5000,
      // only the local stack turns it on (ec2/caller.ts)
      ec2CallerHeader: false,
      ddbWriteBatching: true,
    });
  });

  it('reads each variable', () => {
    expect(
      provisioningTuning({
        PROVISIONER_START_ATTEMPTS: '3',
        PROVISIONER_RETRY_DELAY: '500ms',
        PROVISIONER_SWEEP_INTERVAL: '5s',
        PROVISIONER_SWEEP_CONCURRENCY: '2',
        PROVISIONER_STRAY_GRACE: '2s',
        PROVISIONER_LAUNCH_BATCH_IDLE: '35ms',
        PROVISIONER_LAUNCH_BATCH_MAX: '2s',
        PROVISIONER_CAPACITY_MEMORY: '0',
        PROVISIONER_ZONE_CACHE: '1m',
        PROVISIONER_LAUNCH_BURST: '10',
        PROVISIONER_LAUNCH_RATE: '0.5',
        PROVISIONER_LAUNCH_INSTANCE_BURST: '5000',
        PROVISIONER_LAUNCH_INSTANCE_RATE: '20',
        PROVISIONER_FIRST_LAUNCH_BUDGET: '7s',
        PROVISIONER_LAUNCH_SHARED_PACING: 'off',
        PROVISIONER_REPROVISION_CAP: '5',
        PROVISIONER_CONTAINER_POLL: '500ms',
        PROVISIONER_CONTAINER_ONLINE_TIMEOUT: '1m',
        PROVISIONER_BLOCKED_HISTORY: '60',
        PROVISIONER_TEARDOWN_TERMINATE_BURST: '20',
        PROVISIONER_TEARDOWN_TERMINATE_RATE: '1.5',
        PROVISIONER_TEARDOWN_DESCRIBE_BURST: '10',
        PROVISIONER_TEARDOWN_DESCRIBE_RATE: '4',
        PROVISIONER_TEARDOWN_BATCH_IDLE: '200ms',
        PROVISIONER_TEARDOWN_BATCH_MAX: '2s',
        PROVISIONER_EC2_CALLER_HEADER: 'on',
        PROVISIONER_DDB_WRITE_BATCHING: 'off',
      }),
    ).toEqual({
      startAttempts: 3,
      retryDelayMs: 500,
      sweepIntervalMs: 5000,
      sweepConcurrency: 2,
      strayGraceMs: 2000,
      launchBatchIdleMs: 35,
      launchBatchMaxMs: 2000,
      capacityMemoryMs: 0,
      // DESIGN.md: zone states are never cached longer than 5 s
      zoneCacheMs: 5000,
      launchBurst: 10,
      launchRatePerSecond: 0.5,
      launchInstanceBurst: 5000,
      launchInstanceRatePerSecond: 20,
      firstLaunchBudgetMs: 7_000,
      launchSharedPacing: false,
      reprovisionCap: 5,
      containerPollMs: 500,
      containerOnlineTimeoutMs: 60_000,
      blockedHistoryEvents: 60,
      teardownTerminateBurst: 20,
      teardownTerminateRatePerSecond: 1.5,
      teardownDescribeBurst: 10,
      teardownDescribeRatePerSecond: 4,
      teardownBatchIdleMs: 200,
      teardownBatchMaxMs: 2000,
      ec2CallerHeader: true,
      ddbWriteBatching: false,
    });
  });

  it.each(['0', '-2', 'ten', '1.5'])('refuses %j attempts', (value) => {
    expect(() =>
      positiveIntEnv('PROVISIONER_START_ATTEMPTS', 10, { PROVISIONER_START_ATTEMPTS: value }),
    ).toThrow(
      `environment variable PROVISIONER_START_ATTEMPTS: "${value}" is not a positive integer`,
    );
  });

  it('refuses a write-batching switch that is neither on nor off', () => {
    expect(() => provisioningTuning({ PROVISIONER_DDB_WRITE_BATCHING: 'false' })).toThrow(
      'environment variable PROVISIONER_DDB_WRITE_BATCHING: "false" is neither on nor off',
    );
  });

  it('fails at start when a required variable is missing', () => {
    expect(() => requireEnv('PROVISIONER_TABLE', {})).toThrow(
      new ConfigError('environment variable PROVISIONER_TABLE is required but not set'),
    );
  });
});

describe('PROVISIONER_LAUNCH_KEY_SPACING', () => {
  const spacing = (v?: string) =>
    provisioningTuning(v === undefined ? {} : { PROVISIONER_LAUNCH_KEY_SPACING: v })
      .launchKeySpacingMs;

  it('unset or empty: no setting (the batch’s max window applies)', () => {
    expect(spacing()).toBeUndefined();
    expect(spacing('')).toBeUndefined();
  });

  it('0 turns key spacing off; a duration sets it', () => {
    expect(spacing('0')).toBe(0);
    expect(spacing('2s')).toBe(2_000);
    expect(spacing('30s')).toBe(30_000);
  });

  it('refuses more than 30 s (a batch waits up to two spacings, inside a launch try) and a non-duration', () => {
    expect(() => spacing('31s')).toThrow(ConfigError);
    expect(() => spacing('1m')).toThrow(/over 30s/);
    expect(() => spacing('soon')).toThrow(ConfigError);
  });
});

describe('PROVISIONER_FIRST_LAUNCH_BUDGET', () => {
  const budget = (v?: string) =>
    provisioningTuning(v === undefined ? {} : { PROVISIONER_FIRST_LAUNCH_BUDGET: v })
      .firstLaunchBudgetMs;

  it('unset or empty: 12 s (FIRST_TASK_LAUNCH_BUDGET_MS)', () => {
    expect(budget()).toBe(FIRST_TASK_LAUNCH_BUDGET_MS);
    expect(budget('')).toBe(12_000);
  });

  it('a duration sets it, up to 15 s', () => {
    expect(budget('2500ms')).toBe(2_500);
    expect(budget('15s')).toBe(MAX_FIRST_LAUNCH_BUDGET_MS);
  });

  it.each(['0s', '16s', '1m'])(
    'refuses %j at start (at most 15 s: the task heartbeat is at 16 s)',
    (v) => {
      expect(() => budget(v)).toThrow(
        new ConfigError(
          `environment variable PROVISIONER_FIRST_LAUNCH_BUDGET: "${v}" is not above 0 and at most 15s (the first workflow task's heartbeat is at 16s)`,
        ),
      );
    },
  );

  it.each(['10000', 'ten'])('refuses %j, not a duration, naming the variable', (v) => {
    expect(() => budget(v)).toThrow(
      new ConfigError(
        `environment variable PROVISIONER_FIRST_LAUNCH_BUDGET: "${v}" is not a duration like 500ms, 10s, 1m or 2h`,
      ),
    );
  });
});

describe('bearer auth', () => {
  it('extracts the token of a Bearer header only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('compares tokens exactly', () => {
    expect(tokensMatch('abc', 'abc')).toBe(true);
    expect(tokensMatch('abc', 'abd')).toBe(false);
    expect(tokensMatch('ab', 'abc')).toBe(false);
    expect(tokensMatch('', 'abc')).toBe(false);
  });

  it('takes the token from the environment, or refuses to start without a source', async () => {
    await expect(tokenSourceFromEnv({ PROVISIONER_API_TOKEN: 't0k' })()).resolves.toBe('t0k');
    expect(() => tokenSourceFromEnv({})).toThrow(
      'environment variable PROVISIONER_API_TOKEN or PROVISIONER_API_TOKEN_SECRET_ARN is required but not set',
    );
  });
});

describe('SSM endpoint', () => {
  const base = { PROVISIONER_TABLE: 't', TEMPORAL_ADDRESS: '127.0.0.1:7233' };
  it('is the EC2 endpoint locally (the proxy serves SSM), unless SSM_ENDPOINT moves it', () => {
    expect(serviceEndpoints({ ...base, EC2_ENDPOINT: 'http://127.0.0.1:5000' }).ssmEndpoint).toBe(
      'http://127.0.0.1:5000',
    );
    expect(
      serviceEndpoints({
        ...base,
        EC2_ENDPOINT: 'http://127.0.0.1:5000',
        SSM_ENDPOINT: 'http://127.0.0.1:6000',
      }).ssmEndpoint,
    ).toBe('http://127.0.0.1:6000');
    expect(serviceEndpoints(base).ssmEndpoint).toBeUndefined();
  });
});
