import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { AccessStore } from '../state/access';
import type { LaunchRecordStore } from '../state/launch-record';
import type { Repository } from '../state/repository';
import type { InstanceLookup } from './instances';
import type { RegionOfferings } from './offerings';
import type { RegionCheck } from './regions';
import type { PlanSources } from './plan-sources';
import type { MachineWorkflows } from './workflows';

/**
 * What the services need; built once per Lambda container (or local API
 * process) by functions/context.ts, which wires the EC2 readers the worker
 * shares (activities/) to the interfaces named here.
 */
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
  /**
   * When the request began (ms since the epoch), as functions/context.ts
   * takes it: a plan's EC2 read deadline counts from here, so the time spent
   * before its first read (DynamoDB reads, the decision) is counted too.
   * Absent (tests), the deadline counts from the plan's first read.
   */
  requestStartedAt?: number;
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
