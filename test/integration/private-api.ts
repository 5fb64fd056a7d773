import { existsSync, readFileSync } from 'node:fs';
import { freePort, spawnManaged, type ManagedProcess } from '../../local/processes';
import { PROJECT_ROOT, tsEntry } from '../../local/stack';
import { eventually } from './api-client';
import type { StackInfo } from './stack';

export interface PrivateApiOptions {
  /** The process's name in the stack's logs. */
  name: string;
  /** Where its output goes. */
  logFile: string;
  /** Added to (or replacing) the stack's settings below, e.g. another Price List endpoint. */
  env?: Record<string, string>;
}

/**
 * Starts an API server of a test file's own (local/api-server-main.ts, the
 * same handlers as the stack's), on the stack's DynamoDB, EC2 proxy,
 * Price List emulator and Temporal, with the stack's token, on a free
 * loopback port; resolves with it and the stack as seen through it once it
 * listens. Files that need the API under other settings (an unreachable price
 * list, another deployment's launch record) use one, so the shared API keeps
 * its own. Stop it in `afterAll`.
 */
export async function startPrivateApi(
  stack: StackInfo,
  opts: PrivateApiOptions,
): Promise<{ proc: ManagedProcess; stack: StackInfo }> {
  const port = await freePort();
  const [command, args] = tsEntry('local/api-server-main.ts');
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
      EC2_ENDPOINT: stack.ec2Endpoint,
      PRICING_ENDPOINT: stack.pricingEndpoint,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.temporalNamespace,
      PROVISIONER_API_TOKEN: stack.token,
      PROVISIONER_API_PORT: String(port),
      PROVISIONER_USER_POOL_ID: stack.userPoolId,
      PROVISIONER_USER_POOL_CLIENT_ID: stack.userPoolClientId,
      PROVISIONER_COGNITO_ENDPOINT: stack.cognitoEndpoint,
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'WARN',
      ...opts.env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  // a busy machine takes its time to compile and start a server: a generous bound
  try {
    await eventually(
      () => Promise.resolve(existsSync(opts.logFile) ? readFileSync(opts.logFile, 'utf8') : ''),
      (log) => log.includes(`API listening on ${url}`),
      90_000,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { proc, stack: { ...stack, apiUrl: url } };
}
