import { getHeapStatistics } from 'node:v8';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { workerEc2Client } from '../ec2/client';
import { InstancePrices, pricingClientFromEnv } from '../activities/pricing';
import { runningCatchUpsSettled } from '../activities/running-catch-up';
import { regionalEc2, warmRegion } from '../ec2/regional';
import { ensureSweeper, removeLegacySweepSchedules } from '../temporal/sweeper-client';
import { regionalSsm, workerSsmClient } from '../activities/ssm';
import { dynamoDbClient, localCredentialsFor } from '../config/clients';
import { optionalEnv, provisioningTuning, serviceEndpoints } from '../config/env';
import { ContainerStore } from '../state/containers';
import { LaunchRecordStore } from '../state/launch-record';
import { ProvisioningStore } from '../state/provisioning';
import { Repository } from '../state/repository';
import { TASK_QUEUE } from '../temporal/search-attributes';
import { workerLogger } from './logging';
import {
  installTelemetry,
  metricSinks,
  temporalMetricsFromEnv,
  watchBacklogGate,
} from './telemetry';
import { backlogGateOf } from './tuner';
import { workflowBundlerOptions } from './preload';
import { withLeanSandbox, workflowGuardsFromEnv } from './sandbox';
import { workerOptions, workerSettingsFromEnv, workerStartupFields } from './settings';

/**
 * How long after SIGTERM/SIGINT the worker exits whatever its drain still
 * waits for: inside ECS's 30 s stopTimeout (infra/constructs/worker.ts), and
 * so that `node --cpu-prof` writes its profiles (it writes them on an exit,
 * never on the SIGKILL that would follow; `npm run bench -- --cpu-prof`).
 */
const SHUTDOWN_DEADLINE_MS = 25_000;

/**
 * The AWS SDK clients' logger: a no-op, like the SDK's default, but without
 * `info`, so that the SDK's logger middleware does not copy every request
 * and answer through its sensitive-field filter for a logger that drops
 * them (1.4 % of the worker's CPU in a 1,000-machine launch, issue 26).
 */
const AWS_SDK_LOGGER = {
  trace: () => undefined,
  debug: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as unknown as DynamoDBClient['config']['logger'];

/**
 * The Temporal worker: registers the machine and sweeper workflows and their
 * activities and drains cleanly on SIGTERM/SIGINT (the SDK's default
 * shutdown signals), then exits; a drain still running
 * {@link SHUTDOWN_DEADLINE_MS} after the signal is cut short by an exit with
 * code 1.
 * `PROVISIONER_TASK_QUEUE` moves it off the shared queue (tests run a
 * private worker they can kill).
 */
async function main(): Promise<void> {
  // before any connection: the SDK's Runtime logs through the worker's logger and exports its metrics
  const stopTelemetry = installTelemetry(workerLogger, temporalMetricsFromEnv());
  const endpoints = serviceEndpoints();
  const tuning = provisioningTuning();
  const taskQueue = optionalEnv('PROVISIONER_TASK_QUEUE', TASK_QUEUE);
  const ec2ForRegion = regionalEc2(
    (region) =>
      // adaptive rate limiting and backoff for throttling; capacity errors go straight to zone failover
      workerEc2Client({
        region,
        endpoint: endpoints.ec2Endpoint,
        credentials: localCredentialsFor(endpoints.ec2Endpoint),
        logger: AWS_SDK_LOGGER,
      }),
    tuning.zoneCacheMs,
  );
  // Warm the home region's catalogue and offerings in the background: the first machines plan from memory.
  void warmRegion(ec2ForRegion(endpoints.region)).catch((err: unknown) => {
    workerLogger.warn('could not warm the instance-type catalogue', {
      region: endpoints.region,
      error: String(err),
    });
  });
  const ddb = dynamoDbClient(endpoints);
  ddb.config.logger = AWS_SDK_LOGGER;
  // a client (and sockets) of its own for the launch record: a turn is booked just before its
  // RunInstances, and queued behind a burst's member marks for a socket it would reach EC2 late,
  // or time out. Quiet like the main one (no logger-middleware CPU on ~3 record calls per call)
  const recordDdb = dynamoDbClient(endpoints);
  recordDdb.config.logger = AWS_SDK_LOGGER;
  const repo = new Repository(ddb, endpoints.tableName);
  const store = new ProvisioningStore(
    ddb,
    endpoints.tableName,
    tuning.ddbWriteBatching === false ? { batching: false } : {},
  );
  // In the cloud the deployment hands the worker its Temporal API key as TEMPORAL_API_KEY (an ECS secret).
  const apiKey = process.env.TEMPORAL_API_KEY?.trim() || undefined;
  const temporalOptions = {
    address: endpoints.temporalAddress,
    ...(apiKey ? { apiKey, tls: true } : {}),
  };
  const connection = await NativeConnection.connect(temporalOptions);
  // The sweep's activities restart machine workflows; the worker starts the sweeper, and a
  // bulk request's machine workflows (activities/starter.ts: one start a machine). A native
  // connection of its own (the SDK's core, in Rust) rather than the gRPC-js `Connection`:
  // a start costs the worker ~0.4 ms of CPU less (0.98 → 0.58 ms, issue 26; README "Figures measured", the `cpu` branch).
  const clientConnection = await NativeConnection.connect(temporalOptions);
  const temporal = new Client({
    connection: clientConnection,
    namespace: endpoints.temporalNamespace,
  });
  const deployment = optionalEnv('PROVISIONER_DEPLOYMENT', 'local');
  // the sandbox, cache and slots (worker/settings.ts); the start-up line logs what they come to
  const settings = workerSettingsFromEnv();
  const tuningOptions = workerOptions(settings);
  // the SDK's per-promise stack traces off, its deadlock detector kept (worker/sandbox.ts)
  const create = workflowGuardsFromEnv() ? (f: () => Promise<Worker>) => f() : withLeanSandbox;
  const worker = await create(() =>
    Worker.create({
      connection,
      namespace: endpoints.temporalNamespace,
      taskQueue,
      workflowsPath: require.resolve('../workflows'),
      // stateless modules evaluated once per workflow thread, not once per run (worker/preload.ts)
      bundlerOptions: workflowBundlerOptions(),
      activities: createActivities({
        repo,
        store,
        ec2ForRegion,
        defaultRegion: endpoints.region,
        prices: new InstancePrices(pricingClientFromEnv(), {
          log: (line) => workerLogger.warn(line),
        }),
        tuning,
        deployment,
        launchRecord: new LaunchRecordStore(recordDdb, endpoints.tableName, deployment, {
          requestTimeoutMs: tuning.launchRecordRequestTimeoutMs,
        }),
        temporal,
        taskQueue,
        containers: new ContainerStore(ddb, endpoints.tableName),
        // the CDK stack's profile: lets the SSM agent of launched instances register (containers)
        instanceProfile: optionalEnv('PROVISIONER_INSTANCE_PROFILE', '') || undefined,
        ssmForRegion: regionalSsm((region) =>
          workerSsmClient({
            region,
            endpoint: endpoints.ssmEndpoint,
            credentials: localCredentialsFor(endpoints.ssmEndpoint),
          }),
        ),
      }),
      sinks: metricSinks(),
      shutdownGraceTime: '10 seconds',
      // the sandbox, cache and slots, and the backlog gate on the workflow-task slots
      // (worker/settings.ts; README, "Worker tuning" has what each costs)
      ...tuningOptions,
    }),
  );
  // the gate's counts in the worker's metrics, once a second (the SDK reports no free slots for it)
  const gate = backlogGateOf(tuningOptions);
  const stopGateMetrics = gate ? watchBacklogGate(gate) : () => undefined;
  if (optionalEnv('PROVISIONER_SWEEPER', 'on') !== 'off') void startSweeper(temporal, taskQueue);
  workerLogger.info(`worker polling ${taskQueue}`, {
    taskQueue,
    temporalAddress: endpoints.temporalAddress,
    namespace: endpoints.temporalNamespace,
    // the heap the task got, and the cache and slots the worker runs with (README, "Worker tuning")
    ...workerStartupFields(settings, getHeapStatistics().heap_size_limit),
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      setTimeout(() => {
        workerLogger.warn(
          `worker still draining ${SHUTDOWN_DEADLINE_MS / 1000} s after ${signal}: exiting`,
        );
        stopTelemetry();
        // non-zero: a drain cut short is not a clean stop
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
    });
  }
  try {
    await worker.run();
    // the launches recorded in the last seconds still hear their `running` (bounded by the deadline above)
    await runningCatchUpsSettled();
  } finally {
    stopGateMetrics();
    await clientConnection.close();
    await connection.close();
    stopTelemetry();
  }
}

/**
 * The task queue's sweeper (idempotent: a running one is left be), and the
 * per-model sweep Schedules of earlier versions deleted (README, "The sweeper").
 */
async function startSweeper(temporal: Client, taskQueue: string): Promise<void> {
  try {
    await ensureSweeper(temporal, taskQueue);
    const removed = await removeLegacySweepSchedules(temporal);
    if (removed.length > 0) workerLogger.info('deleted legacy sweep schedules', { removed });
  } catch (err) {
    // the API starts the sweeper too, when a model is created or machines are added
    workerLogger.warn('could not start the sweeper', { error: String(err) });
  }
}

main().then(
  // a timer or socket left open (a client's keep-alive, a cache's refresh) must not keep a drained worker alive
  () => process.exit(0),
  (err: unknown) => {
    workerLogger.error('worker stopped', { error: err instanceof Error ? err : String(err) });
    process.exit(1);
  },
);
