import type { Client } from '@temporalio/client';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Logger } from '@aws-lambda-powertools/logger';
import { dynamoDbClient, temporalClient } from '../config/clients';
import { logger } from '../config/logger';
import { optionalEnv, serviceEndpoints } from '../config/env';
import { TASK_QUEUE } from '../temporal/search-attributes';
import { AccessStore } from '../state/access';
import { LaunchRecordStore } from '../state/launch-record';
import { Repository } from '../state/repository';
import { Ec2InstanceLookup, type InstanceLookup } from './instances';
import { Ec2Offerings, type RegionOfferings } from './offerings';
import { Ec2Regions, type RegionCheck } from './regions';
import { ec2PlanSources, type PlanSources } from './plan-sources';
import {
  TEMPORAL_CONNECT_TIMEOUT_MS,
  TemporalMachineWorkflows,
  type MachineWorkflows,
} from './workflows';

/** What the services need; built once per Lambda container (or local API process). */
export interface ServiceContext {
  repo: Repository;
  workflows: MachineWorkflows;
  defaultRegion: string;
  /** The regions EC2 offers; absent (tests), only a region's shape is checked. */
  regions?: RegionCheck;
  /** The region's zones and instance types (service/offerings.ts); absent (tests), not checked. */
  offerings?: RegionOfferings;
  /** EC2's state of an instance (reprovision); absent (tests), reprovision is refused. */
  instances?: InstanceLookup;
  now(): Date;
  log: Pick<Logger, 'warn' | 'info' | 'error'>;
  /**
   * Runs one step of a request at most once per Idempotency-Key (see
   * functions/http.ts): a retry of a request that was cut off gets the first
   * run's result, e.g. the ids it reserved. Absent: the step just runs.
   */
  step?: <T>(name: string, run: () => Promise<T>) => Promise<T>;
  /** Who made the request (API.md, "Who is calling"): named in the workflows it starts or retries. */
  user?: string;
  /** Model grants (state/access.ts); absent (tests), models are created without grants. */
  access?: AccessStore;
  /** EC2's zones, catalogue and prices for plans (dry runs); absent (tests), plans say so. */
  planSources?: PlanSources;
  /**
   * This deployment's recent launches (the worker records each RunInstances):
   * plans count them in `estimatedSeconds`; absent, plans take EC2's buckets as full and say so.
   */
  launchRecord?: Pick<LaunchRecordStore, 'read'>;
}

/** Runs `run` as a step of the request (once per Idempotency-Key), or just runs it. */
export function requestStep<T>(
  ctx: ServiceContext,
  name: string,
  run: () => Promise<T>,
): Promise<T> {
  return ctx.step ? ctx.step(name, run) : run();
}

export async function temporalApiKey(): Promise<string | undefined> {
  const arn = process.env.TEMPORAL_API_KEY_SECRET_ARN;
  if (!arn) return undefined;
  const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn }));
  return out.SecretString?.trim() || undefined;
}

let context: ServiceContext | undefined;

/** The context, with the request's `step` (Idempotency-Key) and caller when given. */
export function serviceContext(step?: ServiceContext['step'], user?: string): ServiceContext {
  const base = sharedContext();
  return step || user ? { ...base, ...(step ? { step } : {}), ...(user ? { user } : {}) } : base;
}

function sharedContext(): ServiceContext {
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
          connectTimeoutMs: TEMPORAL_CONNECT_TIMEOUT_MS,
        }),
      )
      .catch((err: unknown) => {
        client = undefined; // retry the connection on the next request
        throw err;
      });
    return client;
  };
  const ddb = dynamoDbClient(endpoints);
  context = {
    repo: new Repository(ddb, endpoints.tableName),
    access: new AccessStore(ddb, endpoints.tableName),
    workflows: new TemporalMachineWorkflows(
      connect,
      optionalEnv('PROVISIONER_TASK_QUEUE', TASK_QUEUE),
    ),
    defaultRegion: endpoints.region,
    regions: Ec2Regions.fromEndpoint(endpoints.region, endpoints.ec2Endpoint),
    offerings: new Ec2Offerings(endpoints.ec2Endpoint),
    instances: new Ec2InstanceLookup(endpoints.ec2Endpoint),
    planSources: ec2PlanSources(endpoints.ec2Endpoint),
    // the deployment the worker records its launches under (the same variable as the worker's)
    launchRecord: new LaunchRecordStore(
      ddb,
      endpoints.tableName,
      optionalEnv('PROVISIONER_DEPLOYMENT', 'local'),
    ),
    now: () => new Date(),
    log: logger,
  };
  return context;
}
