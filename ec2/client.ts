import { AsyncLocalStorage } from 'node:async_hooks';
import { EC2Client, type EC2ClientConfig } from '@aws-sdk/client-ec2';
import { AdaptiveRetryStrategy } from '@smithy/core/retry';
import { provisioningTuning, type ProvisioningTuning } from '../config/env';
import { classifyError } from './errors';
import { METRIC } from '../config/metrics';
import { workerMetrics, type WorkerMetrics } from '../config/worker-metrics';
import { teardownPacing } from './pacing';
import { CALLER_HEADER, currentCaller } from './caller';

type Strategy = Pick<
  AdaptiveRetryStrategy,
  'acquireInitialRetryToken' | 'refreshRetryTokenForRetry' | 'recordSuccess'
>;
type RetryToken = Awaited<ReturnType<Strategy['acquireInitialRetryToken']>>;
type StandardRetryToken = Parameters<Strategy['recordSuccess']>[0];
type RetryErrorInfo = Parameters<Strategy['refreshRetryTokenForRetry']>[1];

/** An EC2 call EC2 throttled (one per throttled attempt). */
function throttled(m: WorkerMetrics = workerMetrics): void {
  m.count(METRIC.throttledCalls);
}

/** Set while a call paced by its caller is made: a throttled attempt is not retried here. */
const pacedByCaller = new AsyncLocalStorage<true>();

/**
 * Runs `fn` with its EC2 calls' throttled attempts given back to the caller
 * instead of retried by the SDK: a call paced on a bucket shared with other
 * workers (the launch batcher's RunInstances) takes a fresh turn there before
 * it is repeated, where the SDK's own retry would go out unpaced, on top of
 * the calls sent on their turns. Other errors are retried as usual.
 */
export function throttlesToCaller<T>(fn: () => Promise<T>): Promise<T> {
  return pacedByCaller.run(true, fn);
}

/** Attempts per EC2 call, throttled ones included, before Temporal's activity retry takes over. */
export const EC2_MAX_ATTEMPTS = 6;

/**
 * The AWS SDK's adaptive retry mode (a client-side token bucket that slows
 * down when EC2 throttles, plus jittered backoff), except for capacity
 * errors: EC2 answers `InsufficientInstanceCapacity` with HTTP 500, which the
 * SDK counts as transient and would repeat in the same zone. Those go
 * straight back to the caller, whose zone failover handles them, and so do
 * errors no retry can fix (an endpoint that does not resolve, included).
 */
export class Ec2RetryStrategy implements Strategy {
  readonly mode = 'adaptive';
  private readonly inner: AdaptiveRetryStrategy;

  constructor(maxAttempts = EC2_MAX_ATTEMPTS) {
    this.inner = new AdaptiveRetryStrategy(maxAttempts);
  }

  acquireInitialRetryToken(scope: string): Promise<RetryToken> {
    return this.inner.acquireInitialRetryToken(scope);
  }

  refreshRetryTokenForRetry(token: StandardRetryToken, info: RetryErrorInfo): Promise<RetryToken> {
    const kind = classifyError(info.error);
    if (kind === 'throttling') throttled();
    if (kind === 'throttling' && pacedByCaller.getStore() === true) {
      return Promise.reject(new Error('a throttled call paced by its caller is repaced there'));
    }
    if (kind === 'zone' || kind === 'permanent') {
      // the middleware rethrows the call's own error when no retry token is given
      return Promise.reject(
        new Error(`${kind === 'zone' ? 'capacity' : 'permanent'} errors are not retried in place`),
      );
    }
    return this.inner.refreshRetryTokenForRetry(token, info);
  }

  recordSuccess(token: StandardRetryToken): void {
    this.inner.recordSuccess(token);
  }
}

/** Sockets for the EC2 calls no bucket paces (planning's lookups, the sweep's listings, groups). */
export const UNPACED_EC2_SOCKETS = 32;

/**
 * Sockets of a region's EC2 client: as many as the worker's buckets let be
 * sent at once (the launch burst, teardown's TerminateInstances and
 * DescribeInstances bursts) plus UNPACED_EC2_SOCKETS, 187 by default. A
 * call that has its pacing token is then never queued for a socket (the
 * SDK's default is 50: issue 30 saw 950 teardown calls queued behind them,
 * their activities' timeouts burning while they waited).
 */
export function ec2MaxSockets(tuning: Partial<ProvisioningTuning>): number {
  const teardown = teardownPacing(tuning);
  return (
    (tuning.launchBurst ?? 5) +
    teardown.terminate.burst +
    teardown.describe.burst +
    UNPACED_EC2_SOCKETS
  );
}

/**
 * How long a worker's EC2 call may sit on a silent socket (nothing sent or
 * received: the handler's `socketTimeout`, counted once the call has a
 * socket, not while it queues for one) before the attempt fails as a
 * timeout and the SDK's retry strategy, or the activity's, tries again on
 * another socket (RunInstances with its ClientToken: no second instance; the
 * SDK's repeat is not paced by the batcher, as for a 5xx). Without it a call
 * whose answer never came (a connection dropped silently on the way) held
 * its try until the step's own timeout: up to 211 s in the launch step, 10
 * minutes in a first read that launches (workflows/proxies.ts, ended by
 * their last try). 90 s: far above any answer EC2 gives (the local proxy's
 * longest injected RunInstances, in failure-semantics, is 70 s), below a
 * launch try's 120 s.
 */
export const EC2_ATTEMPT_TIMEOUT_MS = 90_000;

/**
 * An EC2 client for the worker: adaptive rate limiting and retries, capacity
 * errors never retried, sockets sized by `ec2MaxSockets` (the worker's
 * tuning from the environment unless given), each attempt bounded by
 * `attemptTimeoutMs` (EC2_ATTEMPT_TIMEOUT_MS).
 */
export function workerEc2Client(
  config: EC2ClientConfig,
  tuning: Partial<ProvisioningTuning> = provisioningTuning(),
  attemptTimeoutMs: number = EC2_ATTEMPT_TIMEOUT_MS,
): EC2Client {
  const agent = { keepAlive: true, maxSockets: ec2MaxSockets(tuning) };
  const client = new EC2Client({
    requestHandler: {
      httpAgent: agent,
      httpsAgent: agent,
      socketTimeout: attemptTimeoutMs,
    },
    ...config,
    retryStrategy: new Ec2RetryStrategy(),
  });
  if (tuning.ec2CallerHeader === true) nameCallers(client);
  return client;
}

/**
 * Each request says which caller made it (ec2/caller.ts), for the local
 * proxy's per-caller counts; only when the worker is told to
 * (PROVISIONER_EC2_CALLER_HEADER=on, which only the local stack sets).
 */
function nameCallers(client: EC2Client): void {
  client.middlewareStack.add(
    (next) => (args) => {
      const caller = currentCaller();
      const request = args.request as { headers?: Record<string, string> } | undefined;
      if (caller !== undefined && request?.headers) request.headers[CALLER_HEADER] = caller;
      return next(args);
    },
    { step: 'build', name: 'provisionerCallerHeader' },
  );
}
