import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/processes';
import { artifactsFromEnv } from '../../local/shipped';
import { startStack, type RunningStack } from '../../local/stack';

declare global {
  var __PROVISIONER_STACK__: RunningStack | undefined;
}

/**
 * Starts a private stack on free loopback ports for the integration tests, so
 * they never collide with a running `npm start`; short tuning keeps retry
 * paths fast. The stack's description travels to test files by file.
 */
export default async function globalSetup(): Promise<void> {
  // Node 20 is what this machine has; the SDK's notice about Node 22 is known (Lambdas run on 22).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const dir = mkdtempSync(join(tmpdir(), 'provisioner-it-'));
  // PROVISIONER_ARTIFACTS=shipped (npm run test:shipped): the API runs the Lambda bundles of a
  // `cdk synth` made once for this run (or PROVISIONER_CDK_OUT's), the worker its image's build
  const artifacts = artifactsFromEnv();
  const ports = {
    api: await freePort(),
    temporal: await freePort(),
    temporalUi: await freePort(),
    dynamodb: await freePort(),
    ec2: await freePort(),
    moto: await freePort(),
  };
  const stack = await startStack({
    ports,
    token: randomBytes(16).toString('hex'),
    dataDir: join(dir, 'data'),
    workerEnv: {
      PROVISIONER_START_ATTEMPTS: '3',
      PROVISIONER_RETRY_DELAY: '500ms',
      PROVISIONER_SWEEP_INTERVAL: '5s',
      // moto lists a model's instances slowly once it holds hundreds: two sweeps at a time
      // leave room for the tests' own calls (with 8, teardown's DescribeInstances timed out)
      PROVISIONER_SWEEP_CONCURRENCY: '2',
      PROVISIONER_STRAY_GRACE: '2s',
      // zone states and capacity as they are now: tests change them between machines
      PROVISIONER_ZONE_CACHE: '0',
      PROVISIONER_CAPACITY_MEMORY: '0',
      // containers look at their host and their Run Command often
      PROVISIONER_CONTAINER_POLL: '500ms',
    },
    artifacts,
    // every AWS action the worker and each API group call, for the IAM check (zz-aws-calls.test.ts);
    // the bundles carry their own SDK, which the recorder does not wrap
    ...(artifacts === 'sources' ? { awsCallsFile: join(dir, 'aws-calls.txt') } : {}),
    log: (line) => process.stderr.write(`[stack] ${line}\n`),
  });
  globalThis.__PROVISIONER_STACK__ = stack;
  const file = join(dir, 'stack.json');
  writeFileSync(file, JSON.stringify(stack.info));
  process.env.PROVISIONER_TEST_STACK_FILE = file;
  process.env.PROVISIONER_TEST_AWS_CALLS_FILE = join(dir, 'aws-calls.txt');
}
