import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ensureTable } from '../../state/table';
import type { StackInfo } from '../../local/stack-info';

export type { StackInfo };

/** The stack the integration project's globalSetup started; its file path travels in the environment. */
export function loadTestStack(): StackInfo {
  const file = process.env.PROVISIONER_TEST_STACK_FILE;
  if (!file)
    throw new Error('PROVISIONER_TEST_STACK_FILE is not set: run integration tests through jest');
  return JSON.parse(readFileSync(file, 'utf8')) as StackInfo;
}

export const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/**
 * An EC2 client for the stack's endpoint (or another, e.g. a private proxy),
 * with one attempt per call by default so a test sees EC2's answer, not the
 * SDK's retries; `maxAttempts` for a test that stands for the worker, whose
 * client tries again after a keep-alive socket was reset as it was reused
 * (the proxy, a Node server, closes one idle 5 s).
 */
export function ec2ClientFor(
  stack: StackInfo,
  endpoint: string = stack.ec2Endpoint,
  maxAttempts = 1,
): EC2Client {
  return new EC2Client({
    region: stack.region,
    endpoint,
    credentials: TEST_CREDENTIALS,
    maxAttempts,
  });
}

export function dynamoClientFor(stack: StackInfo): DynamoDBClient {
  return new DynamoDBClient({
    region: stack.region,
    endpoint: stack.dynamodbEndpoint,
    credentials: TEST_CREDENTIALS,
  });
}

/**
 * A DynamoDB table of one test file's own, on the stack's DynamoDB Local, for
 * tests of the state layer that write models and machines straight into a
 * table. Written into the stack's table, those machines would be found by the
 * sweeper, which starts their workflows and launches their instances
 * (status-cost alone writes 1,000): the worker and moto then spend minutes on
 * them while every later test file waits behind. Create it in `beforeAll`,
 * drop it in `afterAll`.
 */
export function privateTable(client: DynamoDBClient, label: string) {
  const tableName = `${label}-${randomBytes(4).toString('hex')}`;
  return {
    tableName,
    create: () => ensureTable(client, tableName),
    drop: () => client.send(new DeleteTableCommand({ TableName: tableName })).then(() => undefined),
  };
}
