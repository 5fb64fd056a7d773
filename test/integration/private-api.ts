import { freePort, spawnManaged, type ManagedProcess } from '../../local/processes';
import { PROJECT_ROOT, tsEntry } from '../../local/stack';
import { stackEnv, waitForLogLine } from '../support/stack-process';
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
      ...stackEnv(stack),
      PRICING_ENDPOINT: stack.pricingEndpoint,
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
  await waitForLogLine(proc, opts.logFile, `API listening on ${url}`);
  return { proc, stack: { ...stack, apiUrl: url } };
}
