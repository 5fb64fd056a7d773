import { spawnManaged, type ManagedProcess } from '../../local/processes';
import { PROJECT_ROOT, tsEntry } from '../../local/stack';
import { stackEnv, waitForLogLine } from '../support/stack-process';
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
      ...stackEnv(stack, opts.ec2Endpoint !== undefined ? { ec2: opts.ec2Endpoint } : {}),
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
  // the caller never gets the process on a timeout: waitForLogLine stops it
  await waitForLogLine(proc, opts.logFile, `worker polling ${opts.taskQueue}`);
  return proc;
}
