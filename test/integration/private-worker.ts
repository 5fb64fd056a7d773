import { existsSync, readFileSync } from 'node:fs';
import { spawnManaged, type ManagedProcess } from '../../local/processes';
import { PROJECT_ROOT, tsEntry } from '../../local/stack';
import { eventually } from './api-client';
import type { StackInfo } from './stack';

export interface PrivateWorkerOptions {
  /** The process's name in the stack's logs. */
  name: string;
  /** Its own task queue: workflows started there run on this worker alone. */
  taskQueue: string;
  /** Where its output goes (tests read it). */
  logFile: string;
  /** The EC2 endpoint it calls: a private proxy's, or the stack's by default. */
  ec2Endpoint?: string;
  /** Added to (or replacing) the defaults below. */
  env?: Record<string, string>;
}

/**
 * Starts a worker process of a test file's own, on the stack's DynamoDB and
 * Temporal, polling a task queue no other worker polls; resolves once it
 * polls. Files that set EC2 faults or stop workers use one, so what they do
 * never reaches the shared worker's machines. Stop it in `afterAll`; a worker
 * that does not poll in time is stopped here and the call rejects.
 */
export async function startPrivateWorker(
  stack: StackInfo,
  opts: PrivateWorkerOptions,
): Promise<ManagedProcess> {
  const [command, args] = tsEntry('worker/main.ts');
  const proc = spawnManaged(opts.name, command, args, {
    cwd: PROJECT_ROOT,
    logFile: opts.logFile,
    env: {
      ...process.env,
      AWS_REGION: stack.region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_EC2_METADATA_DISABLED: 'true',
      PROVISIONER_TABLE: stack.tableName,
      DYNAMODB_ENDPOINT: stack.dynamodbEndpoint,
      EC2_ENDPOINT: opts.ec2Endpoint ?? stack.ec2Endpoint,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.temporalNamespace,
      PROVISIONER_TASK_QUEUE: opts.taskQueue,
      PROVISIONER_START_ATTEMPTS: '3',
      PROVISIONER_RETRY_DELAY: '500ms',
      PROVISIONER_SWEEP_INTERVAL: '5s',
      PROVISIONER_STRAY_GRACE: '2s',
      // the shared worker's sweeper sweeps every model; a second one would restart workflows onto this queue
      PROVISIONER_SWEEPER: 'off',
      // every test sees zones and capacity as they are now (the caches have tests of their own)
      PROVISIONER_ZONE_CACHE: '0',
      PROVISIONER_CAPACITY_MEMORY: '0',
      ...opts.env,
    },
  });
  // a busy machine takes its time to compile and start a worker: a generous bound
  try {
    await eventually(
      () => Promise.resolve(existsSync(opts.logFile) ? readFileSync(opts.logFile, 'utf8') : ''),
      (log) => log.includes(`worker polling ${opts.taskQueue}`),
      90_000,
      200,
    );
  } catch (err) {
    // the caller never gets the process: stop it here, or it outlives the test run
    await proc.stop();
    throw err;
  }
  return proc;
}
