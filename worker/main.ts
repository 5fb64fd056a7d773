import { EC2Client } from '@aws-sdk/client-ec2';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { dynamoDbClient, localCredentialsFor } from '../config/clients';
import { optionalEnv, provisioningTuning, serviceEndpoints } from '../config/env';
import { Repository } from '../state/repository';
import { TASK_QUEUE } from '../workflows/search-attributes';

/**
 * The Temporal worker: registers the machine workflow and its activities and
 * drains cleanly on SIGTERM/SIGINT (the SDK's default shutdown signals).
 */
async function main(): Promise<void> {
  const endpoints = serviceEndpoints();
  const tuning = provisioningTuning();
  const ec2 = new EC2Client({
    region: endpoints.region,
    endpoint: endpoints.ec2Endpoint,
    credentials: localCredentialsFor(endpoints.ec2Endpoint),
    // One try per call: throttling is retried by Temporal with backoff, and
    // capacity errors (HTTP 500 from EC2) must reach zone failover at once.
    maxAttempts: 1,
  });
  const repo = new Repository(dynamoDbClient(endpoints), endpoints.tableName);
  const connection = await NativeConnection.connect({ address: endpoints.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: endpoints.temporalNamespace,
    taskQueue: TASK_QUEUE,
    workflowsPath: require.resolve('../workflows'),
    activities: createActivities({
      repo,
      ec2,
      region: endpoints.region,
      tuning,
      deployment: optionalEnv('PROVISIONER_DEPLOYMENT', 'local'),
    }),
    shutdownGraceTime: '10 seconds',
  });
  console.log(
    `worker polling ${TASK_QUEUE} on ${endpoints.temporalAddress} (${endpoints.temporalNamespace})`,
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
