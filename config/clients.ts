import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Client, Connection } from '@temporalio/client';
import { meterFromEnv } from './capacity-meter';
import type { ServiceEndpoints } from './env';

/**
 * Local endpoints (DynamoDB Local, the EC2 proxy) accept any credentials;
 * in the cloud the default provider chain is used.
 */
const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** With `PROVISIONER_METRICS_FILE` set, its capacity use is metered (config/capacity-meter.ts). */
export function dynamoDbClient(
  endpoints: Pick<ServiceEndpoints, 'region' | 'dynamodbEndpoint'>,
): DynamoDBClient {
  const client = new DynamoDBClient({
    region: endpoints.region,
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
