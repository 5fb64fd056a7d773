import { ConfigError } from '../../../config/env';
import { workerSettingsFromEnv, workerStartupFields } from '../../../worker/settings';

describe('workerSettingsFromEnv', () => {
  it('keeps the chosen values when nothing is set (threads: the SDK default)', () => {
    expect(workerSettingsFromEnv({})).toEqual({
      reuseV8Context: true,
      // not the SDK's heap-based default (34 runs in a 1 GiB task): a 1,000-machine burst's worth
      maxCachedWorkflows: 1000,
      maxConcurrentActivityTaskExecutions: 1000,
      maxConcurrentLocalActivityExecutions: 1000,
      // as many as the cache: a first task holds its slot while its launch runs in it
      maxConcurrentWorkflowTaskExecutions: 1000,
      stickyQueueScheduleToStartTimeout: '30 seconds',
      // tasks held and not yet begun: 5-10 s of work for a worker at ~14 % of a core
      workflowTaskBacklog: 100,
    });
  });

  it('takes each setting from its variable', () => {
    expect(
      workerSettingsFromEnv({
        PROVISIONER_REUSE_V8_CONTEXT: 'off',
        PROVISIONER_MAX_CACHED_WORKFLOWS: '500',
        PROVISIONER_WORKFLOW_THREADS: '2',
        PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: '100',
        PROVISIONER_MAX_CONCURRENT_ACTIVITIES: '300',
        PROVISIONER_STICKY_TIMEOUT_S: '10',
        PROVISIONER_WORKFLOW_TASK_BACKLOG: '40',
      }),
    ).toEqual({
      reuseV8Context: false,
      maxCachedWorkflows: 500,
      workflowThreadPoolSize: 2,
      maxConcurrentWorkflowTaskExecutions: 100,
      maxConcurrentActivityTaskExecutions: 300,
      maxConcurrentLocalActivityExecutions: 300,
      stickyQueueScheduleToStartTimeout: '10 seconds',
      workflowTaskBacklog: 40,
    });
  });

  it.each([
    ['off', 'off'],
    ['10', 10],
    // as many as the slots: allowed (it bounds nothing the slots do not)
    ['1000', 1000],
    // digits as positiveIntEnv reads them
    ['0010', 10],
    ['', 100],
  ])('reads PROVISIONER_WORKFLOW_TASK_BACKLOG=%j as %j', (text, limit) => {
    expect(
      workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: text }).workflowTaskBacklog,
    ).toBe(limit);
  });

  it('lowers the default backlog to the slots when they are fewer, and takes one set up to them', () => {
    expect(
      workerSettingsFromEnv({ PROVISIONER_MAX_CACHED_WORKFLOWS: '34' }).workflowTaskBacklog,
    ).toBe(34);
    expect(
      workerSettingsFromEnv({ PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: '60' })
        .workflowTaskBacklog,
    ).toBe(60);
    expect(
      workerSettingsFromEnv({
        PROVISIONER_MAX_CACHED_WORKFLOWS: '34',
        PROVISIONER_WORKFLOW_TASK_BACKLOG: '34',
      }).workflowTaskBacklog,
    ).toBe(34);
  });

  it('takes off padded, as the on/off variables take it, and the gate is then off', () => {
    for (const text of [' off ', 'off\n', '\toff']) {
      expect(workerSettingsFromEnv({ PROVISIONER_REUSE_V8_CONTEXT: text }).reuseV8Context).toBe(
        false,
      );
      expect(
        workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: text }).workflowTaskBacklog,
      ).toBe('off');
    }
  });

  it('reads the backlog and positiveIntEnv alike: untrimmed, digits only', () => {
    // what positiveIntEnv does with the same texts (PROVISIONER_MAX_CACHED_WORKFLOWS is one)
    expect(() => workerSettingsFromEnv({ PROVISIONER_MAX_CACHED_WORKFLOWS: ' 100' })).toThrow(
      new ConfigError(
        'environment variable PROVISIONER_MAX_CACHED_WORKFLOWS: " 100" is not a positive integer',
      ),
    );
    expect(
      workerSettingsFromEnv({ PROVISIONER_MAX_CACHED_WORKFLOWS: '0010' }).maxCachedWorkflows,
    ).toBe(10);
    expect(() => workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: ' 100' })).toThrow(
      new ConfigError(
        'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: " 100" is not a positive integer or off',
      ),
    );
    expect(
      workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '0010' }).workflowTaskBacklog,
    ).toBe(10);
  });

  it.each([
    [
      { PROVISIONER_REUSE_V8_CONTEXT: 'yes' },
      'environment variable PROVISIONER_REUSE_V8_CONTEXT: "yes" is not on or off',
    ],
    [
      { PROVISIONER_MAX_CACHED_WORKFLOWS: '0' },
      'environment variable PROVISIONER_MAX_CACHED_WORKFLOWS: "0" is not a positive integer',
    ],
    [
      { PROVISIONER_WORKFLOW_THREADS: '1.5' },
      'environment variable PROVISIONER_WORKFLOW_THREADS: "1.5" is not a positive integer',
    ],
    [
      { PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: '1' },
      'environment variable PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: must be at least 2 with a workflow cache',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: 'on' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: "on" is not a positive integer or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '-5' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: "-5" is not a positive integer or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '12.5' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: "12.5" is not a positive integer or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '   ' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: "   " is not a positive integer or off',
    ],
    [
      // padding is taken off the keyword only: what is left is no keyword
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: ' of f ' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: " of f " is not a positive integer or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '100 ' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: "100 " is not a positive integer or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '2000' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: 2000 is above the 1000 workflow-task slots the worker runs with (PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS with PROVISIONER_MAX_CACHED_WORKFLOWS); set at most 1000, or off',
    ],
    [
      // the cache lowers the slots: the backlog is held to those
      { PROVISIONER_MAX_CACHED_WORKFLOWS: '34', PROVISIONER_WORKFLOW_TASK_BACKLOG: '100' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: 100 is above the 34 workflow-task slots the worker runs with (PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS with PROVISIONER_MAX_CACHED_WORKFLOWS); set at most 34, or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '0' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: must be at least 10 (idle, the sticky poll loop holds up to 9 workflow-task slots, 8 polls and the next one; 10 leaves the shared queue at least one), or off',
    ],
    [
      { PROVISIONER_WORKFLOW_TASK_BACKLOG: '9' },
      'environment variable PROVISIONER_WORKFLOW_TASK_BACKLOG: must be at least 10 (idle, the sticky poll loop holds up to 9 workflow-task slots, 8 polls and the next one; 10 leaves the shared queue at least one), or off',
    ],
    [
      { PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: '9' },
      'environment variable PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: 9 workflow-task slots (with PROVISIONER_MAX_CACHED_WORKFLOWS) is below 10, the least PROVISIONER_WORKFLOW_TASK_BACKLOG runs with; raise them or set PROVISIONER_WORKFLOW_TASK_BACKLOG=off',
    ],
    [
      { PROVISIONER_MAX_CACHED_WORKFLOWS: '5' },
      'environment variable PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: 5 workflow-task slots (with PROVISIONER_MAX_CACHED_WORKFLOWS) is below 10, the least PROVISIONER_WORKFLOW_TASK_BACKLOG runs with; raise them or set PROVISIONER_WORKFLOW_TASK_BACKLOG=off',
    ],
  ])('refuses %j, naming the variable', (env, message) => {
    expect(() => workerSettingsFromEnv(env)).toThrow(new ConfigError(message));
  });
});

describe('a slot cap below 10', () => {
  it('is taken with the backlog off, and at 10 with it on', () => {
    expect(
      workerSettingsFromEnv({
        PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: '5',
        PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off',
      }).maxConcurrentWorkflowTaskExecutions,
    ).toBe(5);
    expect(
      workerSettingsFromEnv({ PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: '10' })
        .maxConcurrentWorkflowTaskExecutions,
    ).toBe(10);
  });
});

describe('workerStartupFields', () => {
  it('logs the heap limit in MiB, the cache and the slots the worker runs with', () => {
    expect(workerStartupFields(workerSettingsFromEnv({}), 4144 * 2 ** 20)).toEqual({
      heapLimitMiB: 4144,
      maxCachedWorkflows: 1000,
      workflowTaskSlots: 1000,
      workflowTaskBacklog: 100,
    });
  });

  it('logs the backlog as off when it is', () => {
    const settings = workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off' });
    expect(workerStartupFields(settings, 4144 * 2 ** 20).workflowTaskBacklog).toBe('off');
  });

  it('follows a smaller cache with its slots when they are not set', () => {
    expect(
      workerSettingsFromEnv({ PROVISIONER_MAX_CACHED_WORKFLOWS: '300' })
        .maxConcurrentWorkflowTaskExecutions,
    ).toBe(300);
  });

  it('logs the slots lowered to the cache, as the core caps them (dev had 34 of each), and the default backlog lowered with them', () => {
    const settings = workerSettingsFromEnv({ PROVISIONER_MAX_CACHED_WORKFLOWS: '34' });
    expect(workerStartupFields(settings, 259 * 2 ** 20)).toEqual({
      heapLimitMiB: 259,
      maxCachedWorkflows: 34,
      workflowTaskSlots: 34,
      // what the gate runs with: no more than the slots
      workflowTaskBacklog: 34,
    });
  });

  it('logs at least 2 slots, the core floor, with a cache of 1', () => {
    // (with the backlog off: the gate refuses fewer than 10 slots)
    const settings = workerSettingsFromEnv({
      PROVISIONER_MAX_CACHED_WORKFLOWS: '1',
      PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off',
    });
    expect(workerStartupFields(settings, 259 * 2 ** 20).workflowTaskSlots).toBe(2);
  });
});
