import { EC2Client, type EC2ClientConfig } from '@aws-sdk/client-ec2';
import { AdaptiveRetryStrategy } from '@smithy/core/retry';
import { classifyError } from './ec2-errors';
import { throttled } from './metrics';

type Strategy = Pick<
  AdaptiveRetryStrategy,
  'acquireInitialRetryToken' | 'refreshRetryTokenForRetry' | 'recordSuccess'
>;
type RetryToken = Awaited<ReturnType<Strategy['acquireInitialRetryToken']>>;
type StandardRetryToken = Parameters<Strategy['recordSuccess']>[0];
type RetryErrorInfo = Parameters<Strategy['refreshRetryTokenForRetry']>[1];

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

/** An EC2 client for the worker: adaptive rate limiting and retries, capacity errors never retried. */
export function workerEc2Client(config: EC2ClientConfig): EC2Client {
  return new EC2Client({ ...config, retryStrategy: new Ec2RetryStrategy() });
}
