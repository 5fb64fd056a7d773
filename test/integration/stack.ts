import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { readFileSync } from 'node:fs';
import type { StackInfo } from '../../local/stack-info';

export type { StackInfo };

/** The stack the integration project's globalSetup started; its file path travels in the environment. */
export function loadTestStack(): StackInfo {
  const file = process.env.PROVISIONER_TEST_STACK_FILE;
  if (!file)
    throw new Error('PROVISIONER_TEST_STACK_FILE is not set: run integration tests through jest');
  return JSON.parse(readFileSync(file, 'utf8')) as StackInfo;
}

const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/**
 * An EC2 client for the stack's endpoint (or another, e.g. a private proxy),
 * with one attempt per call so a test sees EC2's answer, not the SDK's retries.
 */
export function ec2ClientFor(stack: StackInfo, endpoint: string = stack.ec2Endpoint): EC2Client {
  return new EC2Client({
    region: stack.region,
    endpoint,
    credentials: TEST_CREDENTIALS,
    maxAttempts: 1,
  });
}

export function dynamoClientFor(stack: StackInfo): DynamoDBClient {
  return new DynamoDBClient({
    region: stack.region,
    endpoint: stack.dynamodbEndpoint,
    credentials: TEST_CREDENTIALS,
  });
}
