import type { Client } from '@temporalio/client';
import { dynamoDbClient, temporalClient } from '../config/clients';
import { logger } from '../config/logger';
import { optionalEnv, serviceEndpoints } from '../config/env';
import { TASK_QUEUE } from '../temporal/search-attributes';
import { AccessStore } from '../state/access';
import { LaunchRecordStore } from '../state/launch-record';
import { Repository } from '../state/repository';
import { temporalApiKey, type ServiceContext } from '../service/context';
import { Ec2InstanceLookup } from '../service/instances';
import { Ec2Offerings } from '../service/offerings';
import { Ec2Regions } from '../service/regions';
import { TEMPORAL_CONNECT_TIMEOUT_MS, TemporalMachineWorkflows } from '../service/workflows';
import { ec2PlanSources } from './plan-sources';

/**
 * The services' context as the API Lambdas (and the local API server) build
 * it: here, above service/, because it wires in readers the worker shares
 * (activities/: the plan's catalogue, offerings and prices), which service/
 * may not import.
 */

let context: ServiceContext | undefined;

/**
 * The context, with the request's `step` (Idempotency-Key) and caller when
 * given, and the time the request's operation began (a plan's deadline counts
 * from it).
 */
export function serviceContext(step?: ServiceContext['step'], user?: string): ServiceContext {
  const requestStartedAt = Date.now();
  return {
    ...sharedContext(),
    ...(step ? { step } : {}),
    ...(user ? { user } : {}),
    requestStartedAt,
  };
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
