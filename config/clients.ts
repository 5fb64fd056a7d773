import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Client, Connection } from '@temporalio/client';
import { meterFromEnv } from './capacity-meter';
import type { ServiceEndpoints } from './env';

/**
 * Local endpoints (DynamoDB Local, the EC2 proxy) accept any credentials;
 * in the cloud the default provider chain is used.
 */
const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/**
 * How long a DynamoDB call may sit on a silent socket (the handler's
 * `socketTimeout`: nothing sent or received, counted once the call has a
 * socket, not while it queues for one of the client's sockets in a burst)
 * before the attempt fails as a timeout and the SDK tries again (a
 * TransactWriteItems with the same ClientRequestToken). Without it a call
 * whose answer never came (a connection dropped silently) held its caller
 * until an outer timeout: a worker's local step's try now spans the step's
 * retries (up to 10 minutes, workflows/proxies.ts). (The API's Lambdas end
 * at their own 29–30 s first.) 30 s: what a local step's try had before,
 * far above any answer DynamoDB (or DynamoDB Local on a loaded machine)
 * gives.
 */
export const DYNAMODB_ATTEMPT_TIMEOUT_MS = 30_000;

/** With `PROVISIONER_METRICS_FILE` set, its capacity use is metered (config/capacity-meter.ts). */
export function dynamoDbClient(
  endpoints: Pick<ServiceEndpoints, 'region' | 'dynamodbEndpoint'>,
  attemptTimeoutMs: number = DYNAMODB_ATTEMPT_TIMEOUT_MS,
): DynamoDBClient {
  const client = new DynamoDBClient({
    region: endpoints.region,
    requestHandler: { socketTimeout: attemptTimeoutMs },
    ...(endpoints.dynamodbEndpoint
      ? { endpoint: endpoints.dynamodbEndpoint, credentials: LOCAL_CREDENTIALS }
      : {}),
  });
  meterFromEnv(client);
  return client;
}

export function localCredentialsFor(
  endpoint: string | undefined,
): typeof LOCAL_CREDENTIALS | undefined {
  return endpoint ? LOCAL_CREDENTIALS : undefined;
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** Temporal Cloud API key, when the service needs one. */
  apiKey?: string;
  /** How long the first connection may take (the SDK's default is 10 s). */
  connectTimeoutMs?: number;
}

export async function temporalClient(settings: TemporalSettings): Promise<Client> {
  const connection = await Connection.connect({
    address: settings.address,
    ...(settings.apiKey ? { apiKey: settings.apiKey, tls: true } : {}),
    ...(settings.connectTimeoutMs !== undefined
      ? { connectTimeout: settings.connectTimeoutMs }
      : {}),
  });
  return new Client({ connection, namespace: settings.namespace });
}
