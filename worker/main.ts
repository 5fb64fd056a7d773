import { EC2Client } from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { InstancePrices, pricingClientFromEnv } from '../activities/pricing';
import { regionalEc2 } from '../activities/regional';
import { dynamoDbClient, localCredentialsFor } from '../config/clients';
import { optionalEnv, provisioningTuning, serviceEndpoints } from '../config/env';
import { ProvisioningStore } from '../state/provisioning';
import { Repository } from '../state/repository';
import { TASK_QUEUE } from '../workflows/search-attributes';

/**
 * The Temporal worker: registers the machine and sweep workflows and their
 * activities and drains cleanly on SIGTERM/SIGINT (the SDK's default
 * shutdown signals). `PROVISIONER_TASK_QUEUE` moves it off the shared queue
 * (tests run a private worker they can kill).
 */
async function main(): Promise<void> {
  const endpoints = serviceEndpoints();
  const tuning = provisioningTuning();
  const taskQueue = optionalEnv('PROVISIONER_TASK_QUEUE', TASK_QUEUE);
  const ec2ForRegion = regionalEc2(
    (region) =>
      new EC2Client({
        region,
        endpoint: endpoints.ec2Endpoint,
        credentials: localCredentialsFor(endpoints.ec2Endpoint),
        // One try per call: throttling is retried by Temporal with backoff, and
        // capacity errors (HTTP 500 from EC2) must reach zone failover at once.
        maxAttempts: 1,
      }),
  );
  const ddb = dynamoDbClient(endpoints);
  const repo = new Repository(ddb, endpoints.tableName);
  const store = new ProvisioningStore(ddb, endpoints.tableName);
  // In the cloud the deployment hands the worker its Temporal API key as TEMPORAL_API_KEY (an ECS secret).
  const apiKey = process.env.TEMPORAL_API_KEY?.trim() || undefined;
  const temporalOptions = {
    address: endpoints.temporalAddress,
    ...(apiKey ? { apiKey, tls: true } : {}),
  };
  const connection = await NativeConnection.connect(temporalOptions);
  // The sweep's activities restart machine workflows and keep their schedule in line.
  const clientConnection = await Connection.connect(temporalOptions);
  const temporal = new Client({
    connection: clientConnection,
    namespace: endpoints.temporalNamespace,
  });
  const worker = await Worker.create({
    connection,
    namespace: endpoints.temporalNamespace,
    taskQueue,
    workflowsPath: require.resolve('../workflows'),
    activities: createActivities({
      repo,
      store,
      ec2ForRegion,
      defaultRegion: endpoints.region,
      prices: new InstancePrices(pricingClientFromEnv()),
      tuning,
      deployment: optionalEnv('PROVISIONER_DEPLOYMENT', 'local'),
      temporal,
      taskQueue,
    }),
    shutdownGraceTime: '10 seconds',
  });
  console.log(
    `worker polling ${taskQueue} on ${endpoints.temporalAddress} (${endpoints.temporalNamespace})`,
  );
  try {
    await worker.run();
  } finally {
    await clientConnection.close();
    await connection.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
