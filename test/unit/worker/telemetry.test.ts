import { ConfigError } from '../../../config/env';
import {
  coreLogFilterFromEnv,
  longTaskWarningThreshold,
  WORKFLOW_TASK_DURATION_WARN_ENV,
  WORKFLOW_TASK_DURATION_WARN_SECONDS,
} from '../../../worker/telemetry';
import {
  MACHINE_WORKFLOW_TASK_TIMEOUT,
  MACHINE_WORKFLOW_TASK_TIMEOUT_S,
  machineStartOptions,
} from '../../../temporal/search-attributes';

describe('longTaskWarningThreshold', () => {
  it('sets 18 s when the environment says nothing (past the core’s task heartbeat at 16 s of 20)', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(longTaskWarningThreshold(env)).toBe('18');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('18');
    expect(WORKFLOW_TASK_DURATION_WARN_SECONDS).toBe(18);
  });

  it('keeps a threshold the environment sets', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: '8' };
    expect(longTaskWarningThreshold(env)).toBe('8');
    expect(env[WORKFLOW_TASK_DURATION_WARN_ENV]).toBe('8');
  });

  it('treats a blank value as unset', () => {
    const env: NodeJS.ProcessEnv = { [WORKFLOW_TASK_DURATION_WARN_ENV]: ' ' };
    expect(longTaskWarningThreshold(env)).toBe('18');
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

describe('the machine workflow task timeout and the long-task warning', () => {
  it('starts machines with a 20 s task timeout (a lost first task costs its machine that)', () => {
    expect(MACHINE_WORKFLOW_TASK_TIMEOUT).toBe('20 seconds');
    expect(machineStartOptions('m', '0', 'provisioner').workflowTaskTimeout).toBe(
      MACHINE_WORKFLOW_TASK_TIMEOUT,
    );
  });

  it('warns of a task past the core’s heartbeat (80 % of the timeout) and before the timeout', () => {
    expect(WORKFLOW_TASK_DURATION_WARN_SECONDS).toBeGreaterThan(
      MACHINE_WORKFLOW_TASK_TIMEOUT_S * 0.8,
    );
    expect(WORKFLOW_TASK_DURATION_WARN_SECONDS).toBeLessThan(MACHINE_WORKFLOW_TASK_TIMEOUT_S);
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
