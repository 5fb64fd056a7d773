import { ConfigError } from '../../../config/env';
import {
  coreLogFilterFromEnv,
  longTaskWarningThreshold,
  WORKFLOW_TASK_DURATION_WARN_ENV,
  WORKFLOW_TASK_DURATION_WARN_SECONDS,
} from '../../../worker/telemetry';

describe('longTaskWarningThreshold', () => {
  it('sets 50 s when the environment says nothing (past the core’s 48 s task heartbeat)', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(longTaskWarningThreshold(env)).toBe('50');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('50');
    expect(WORKFLOW_TASK_DURATION_WARN_SECONDS).toBe(50);
  });

  it('keeps a threshold the environment sets', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: '8' };
    expect(longTaskWarningThreshold(env)).toBe('8');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('8');
  });

  it('treats a blank value as unset', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: ' ' };
    expect(longTaskWarningThreshold(env)).toBe('50');
  });

  it('writes a value back trimmed, as the core reads it', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: ' 40 ' };
    expect(longTaskWarningThreshold(env)).toBe('40');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('40');
  });

  it.each(['5s', '1.5', '-5', '0', '1234567890'])('refuses %j', (value) => {
    expect(() => longTaskWarningThreshold({ [WORKFLOW_TASK_DURATION_WARN_ENV]: value })).toThrow(
      new ConfigError(
        `environment variable TEMPORAL_WORKFLOW_TASK_DURATION_WARN_SECONDS: "${value}" is not a whole number of seconds (1 or more)`,
      ),
    );
  });
});

describe('coreLogFilterFromEnv', () => {
  it('leaves the core forwarding its warnings when unset or blank', () => {
    expect(coreLogFilterFromEnv({})).toBeUndefined();
    expect(coreLogFilterFromEnv({ PROVISIONER_TEMPORAL_CORE_LOG: '  ' })).toBeUndefined();
  });

  it('answers a filter of levels and targets, trimmed', () => {
    expect(
      coreLogFilterFromEnv({
        PROVISIONER_TEMPORAL_CORE_LOG: ' WARN,temporalio_client::retry=DEBUG ',
      }),
    ).toBe('WARN,temporalio_client::retry=DEBUG');
  });

  it('refuses text that is not a filter', () => {
    expect(() => coreLogFilterFromEnv({ PROVISIONER_TEMPORAL_CORE_LOG: 'debug please' })).toThrow(
      'environment variable PROVISIONER_TEMPORAL_CORE_LOG: "debug please" is not a log filter',
    );
  });
});
