import { existsSync, readFileSync } from 'node:fs';
import type { ManagedProcess } from '../../local/processes';
import { eventually } from '../integration/api-client';
import type { StackInfo } from '../integration/stack';

/**
 * The environment a process of the test run's own (an API server, a worker)
 * needs to reach the local stack: its region and dummy credentials, the
 * table, DynamoDB, EC2 and Temporal. The caller adds its own variables.
 */
export function stackEnv(
  stack: StackInfo,
  endpoints: { dynamodb?: string; ec2?: string } = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    AWS_REGION: stack.region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_EC2_METADATA_DISABLED: 'true',
    PROVISIONER_TABLE: stack.tableName,
    DYNAMODB_ENDPOINT: endpoints.dynamodb ?? stack.dynamodbEndpoint,
    EC2_ENDPOINT: endpoints.ec2 ?? stack.ec2Endpoint,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: stack.temporalNamespace,
  };
}

/**
 * Waits until the process's log file holds `line` (a busy machine takes its
 * time to compile and start a process: a generous bound); on a timeout the
 * process is stopped here, or it would outlive the test run, and the call rejects.
 */
export async function waitForLogLine(
  proc: ManagedProcess,
  logFile: string,
  line: string,
  timeoutMs = 90_000,
): Promise<void> {
  try {
    await eventually(
      () => Promise.resolve(existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      (log) => log.includes(line),
      timeoutMs,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
}
