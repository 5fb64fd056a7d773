import type { Client } from '@temporalio/client';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Logger } from '@aws-lambda-powertools/logger';
import { dynamoDbClient, temporalClient } from '../config/clients';
import { logger } from '../config/logger';
import { optionalEnv, serviceEndpoints } from '../config/env';
import { TASK_QUEUE } from '../workflows/search-attributes';
import { Repository } from '../state/repository';
import { TemporalMachineWorkflows, type MachineWorkflows } from './workflows';

/** What the services need; built once per Lambda container (or local API process). */
export interface ServiceContext {
  repo: Repository;
  workflows: MachineWorkflows;
  defaultRegion: string;
  now(): Date;
  log: Pick<Logger, 'warn' | 'info' | 'error'>;
}

async function temporalApiKey(): Promise<string | undefined> {
  const arn = process.env.TEMPORAL_API_KEY_SECRET_ARN;
  if (!arn) return undefined;
  const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn }));
  return out.SecretString?.trim() || undefined;
}

let context: ServiceContext | undefined;

export function serviceContext(): ServiceContext {
  if (context) return context;
  const endpoints = serviceEndpoints();
  let client: Promise<Client> | undefined;
  const connect = () => {
    client ??= temporalApiKey()
      .then((apiKey) =>
        temporalClient({
          address: endpoints.temporalAddress,
          namespace: endpoints.temporalNamespace,
          apiKey,
        }),
      )
      .catch((err: unknown) => {
        client = undefined; // retry the connection on the next request
        throw err;
      });
    return client;
  };
  context = {
    repo: new Repository(dynamoDbClient(endpoints), endpoints.tableName),
    workflows: new TemporalMachineWorkflows(
      connect,
      optionalEnv('PROVISIONER_TASK_QUEUE', TASK_QUEUE),
    ),
    defaultRegion: endpoints.region,
    now: () => new Date(),
    log: logger,
  };
  return context;
}
