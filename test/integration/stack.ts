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
