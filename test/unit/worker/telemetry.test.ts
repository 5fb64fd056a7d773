import {
  longTaskWarningThreshold,
  WORKFLOW_TASK_DURATION_WARN_ENV,
  WORKFLOW_TASK_DURATION_WARN_SECONDS,
} from '../../../worker/telemetry';

describe('longTaskWarningThreshold', () => {
  it('sets half the task timeout when the environment says nothing (a launch task is seconds long)', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(longTaskWarningThreshold(env)).toBe('30');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('30');
    expect(WORKFLOW_TASK_DURATION_WARN_SECONDS).toBe(30);
  });

  it('keeps a threshold the environment sets', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: '8' };
    expect(longTaskWarningThreshold(env)).toBe('8');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('8');
  });

  it('treats a blank value as unset', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: ' ' };
    expect(longTaskWarningThreshold(env)).toBe('30');
  });
});
