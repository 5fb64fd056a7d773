import { EC2Client } from '@aws-sdk/client-ec2';
import { localCredentialsFor } from '../config/clients';

/**
 * An EC2 client for the API's Lambdas (and the local API server): they read
 * only (regions, zones, offerings, an instance's state, a plan's catalogue)
 * inside API Gateway's 29 s, so each use says how many attempts it can afford
 * and how long one may take. The worker's client, paced and with capacity
 * errors never retried in place, is client.ts's `workerEc2Client`. The bench
 * drives the stack with it too.
 */
export interface LambdaEc2Options {
  readonly region: string;
  readonly endpoint: string | undefined;
  /** The SDK's attempts per call; its default (3) when absent. */
  readonly maxAttempts?: number;
  /** Connection and request timeout of one attempt; the SDK's defaults when absent. */
  readonly timeoutMs?: number;
  /** Fixed credentials (the bench's); else the environment's, or local ones for a local endpoint. */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

export function lambdaEc2Client(opts: LambdaEc2Options): EC2Client {
  return new EC2Client({
    region: opts.region,
    endpoint: opts.endpoint,
    credentials: opts.credentials ?? localCredentialsFor(opts.endpoint),
    ...(opts.maxAttempts === undefined ? {} : { maxAttempts: opts.maxAttempts }),
    ...(opts.timeoutMs === undefined
      ? {}
      : {
          requestHandler: {
            connectionTimeout: opts.timeoutMs,
            requestTimeout: opts.timeoutMs,
            // without it a breached request timeout is only a warning
            throwOnRequestTimeout: true,
          },
        }),
  });
}
