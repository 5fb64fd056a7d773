import { noopMetricMeter } from '@temporalio/common';
import type {
  CustomSlotSupplier,
  LocalActivitySlotInfo,
  SlotInfo,
  SlotReserveContext,
  SlotSupplier,
  TunerHolder,
  WorkerOptions,
  WorkflowSlotInfo,
} from '@temporalio/worker';
import { DefaultLogger } from '@temporalio/worker';
// the SDK's own compile step of Worker.create (internal: the version is pinned below)
import { compileWorkerOptions } from '@temporalio/worker/lib/worker-options';
// the SDK's wrapper between a tuner and its bridge (internal, as above)
import { asNativeTuner } from '@temporalio/worker/lib/worker-tuner';
import { version as workerSdkVersion } from '@temporalio/worker/package.json';
import { workerOptions, workerSettingsFromEnv } from '../../../worker/settings';
import { backlogGateOf } from '../../../worker/tuner';
import { settled } from '../../support/settled';

/** The part of the SDK's wrapped workflow supplier (what the bridge calls) these tests use. */
interface NativeWorkflowSlots {
  reserveSlot(
    ctx: { slotType: 'workflow'; taskQueue: string; workerIdentity: string; isSticky: boolean },
    abortSignal: AbortSignal,
  ): Promise<unknown>;
  tryReserveSlot(ctx: {
    slotType: 'workflow';
    taskQueue: string;
    workerIdentity: string;
    isSticky: boolean;
  }): unknown;
}

const RESERVE: SlotReserveContext = {
  slotType: 'workflow',
  taskQueue: 'q',
  workerIdentity: 'test',
  workerBuildId: '',
  isSticky: false,
};
const WORKFLOW_INFO: WorkflowSlotInfo = {
  type: 'workflow',
  workflowType: 'machineWorkflow',
  isSticky: false,
};
const LOCAL_INFO: LocalActivitySlotInfo = { type: 'local-activity', activityType: 'startInstance' };

function tunerOf(options: ReturnType<typeof workerOptions>): TunerHolder {
  const tuner = options.tuner;
  if (!tuner || !('workflowTaskSlotSupplier' in tuner)) throw new Error('no tuner holder');
  return tuner;
}

function custom<SI extends SlotInfo>(supplier: SlotSupplier<SI>): CustomSlotSupplier<SI> {
  if (supplier.type !== 'custom') throw new Error(`a ${supplier.type} supplier`);
  return supplier;
}

/** What the SDK compiles the options to, as Worker.create does before it starts the core's worker. */
function compiled(options: ReturnType<typeof workerOptions>) {
  const raw: WorkerOptions = { taskQueue: 'q', workflowsPath: __filename, ...options };
  return compileWorkerOptions(raw, new DefaultLogger('ERROR'), noopMetricMeter);
}

describe('workerOptions', () => {
  it('is checked against @temporalio/worker 1.24.0 (its compile step, and its bridge that aborts a reservation with its own reason)', () => {
    // another version: read lib/worker-options.js and lib/worker-tuner.js again, then move this
    expect(workerSdkVersion).toBe('1.24.0');
  });

  it('with the backlog (the default): a tuner and none of the maxConcurrent* options', () => {
    const options = workerOptions(workerSettingsFromEnv({}));
    expect(Object.keys(options).sort()).toEqual([
      'maxCachedWorkflows',
      'reuseV8Context',
      'stickyQueueScheduleToStartTimeout',
      'tuner',
    ]);
    const tuner = tunerOf(options);
    expect(tuner.workflowTaskSlotSupplier.type).toBe('custom');
    expect(tuner.localActivityTaskSlotSupplier.type).toBe('custom');
    expect(tuner.activityTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 1000 });
    expect(tuner.nexusTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 100 });
  });

  it('backlogGateOf: the gate behind the tuner, for its metrics; none when off', () => {
    const gate = backlogGateOf(workerOptions(workerSettingsFromEnv({})));
    expect(gate).toMatchObject({ issued: 0, backlog: 0, waiters: 0, slotCap: 1000 });
    expect(
      backlogGateOf(
        workerOptions(workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off' })),
      ),
    ).toBeUndefined();
  });

  it('off: the fixed options exactly as before the gate, and no tuner', () => {
    expect(
      workerOptions(
        workerSettingsFromEnv({
          PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off',
          PROVISIONER_WORKFLOW_THREADS: '2',
        }),
      ),
    ).toEqual({
      reuseV8Context: true,
      maxCachedWorkflows: 1000,
      maxConcurrentActivityTaskExecutions: 1000,
      maxConcurrentLocalActivityExecutions: 1000,
      maxConcurrentWorkflowTaskExecutions: 1000,
      stickyQueueScheduleToStartTimeout: '30 seconds',
      workflowThreadPoolSize: 2,
    });
  });

  it('the SDK compiles both to the same fixed slots and pollers, the gate’s two as custom suppliers', () => {
    const gated = compiled(workerOptions(workerSettingsFromEnv({})));
    const fixed = compiled(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: 'off' })),
    );
    expect(fixed.tuner).toEqual({
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 1000 },
      activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 1000 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 1000 },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
      resourceBasedTunerConfig: null,
    });
    expect(gated.tuner).toMatchObject({
      workflowTaskSlotSupplier: { type: 'custom' },
      activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 1000 },
      localActivityTaskSlotSupplier: { type: 'custom' },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
      resourceBasedTunerConfig: null,
    });
    for (const key of [
      'workflowTaskPollerBehavior',
      'activityTaskPollerBehavior',
      'maxCachedWorkflows',
    ] as const) {
      expect(gated[key]).toEqual(fixed[key]);
    }
    expect(gated.workflowTaskPollerBehavior).toEqual({ type: 'simple-maximum', maximum: 10 });
  });

  it('builds a new tuner, with its own gate, on each call', () => {
    const settings = workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '10' });
    const a = custom(tunerOf(workerOptions(settings)).workflowTaskSlotSupplier);
    const b = custom(tunerOf(workerOptions(settings)).workflowTaskSlotSupplier);
    for (let i = 0; i < 10; i += 1) expect(a.tryReserveSlot(RESERVE)).not.toBeNull();
    expect(a.tryReserveSlot(RESERVE)).toBeNull();
    expect(b.tryReserveSlot(RESERVE)).not.toBeNull();
  });
});

describe('the backlog tuner’s suppliers', () => {
  it('a running local activity lets a waiting workflow reservation in; its end does not', async () => {
    const tuner = tunerOf(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '10' })),
    );
    const workflows = custom(tuner.workflowTaskSlotSupplier);
    const locals = custom(tuner.localActivityTaskSlotSupplier);
    const signal = new AbortController().signal;
    const permits = await Promise.all(
      Array.from({ length: 10 }, () => workflows.reserveSlot(RESERVE, signal)),
    );
    for (const permit of permits) workflows.markSlotUsed({ slotInfo: WORKFLOW_INFO, permit });
    const next = workflows.reserveSlot(RESERVE, signal);
    expect(await settled(next)).toBe(false);
    const local = await locals.reserveSlot({ ...RESERVE, slotType: 'local-activity' }, signal);
    expect(await settled(next)).toBe(false);
    locals.markSlotUsed({ slotInfo: LOCAL_INFO, permit: local });
    const eleventh = await next;
    expect(eleventh).not.toBeNull();
    locals.releaseSlot({ slotInfo: LOCAL_INFO, permit: local });
    expect(workflows.tryReserveSlot(RESERVE)).toBeNull();
    // two finished tasks bring the backlog under its limit again
    workflows.releaseSlot({ slotInfo: WORKFLOW_INFO, permit: permits[0]! });
    expect(workflows.tryReserveSlot(RESERVE)).toBeNull();
    workflows.releaseSlot({ slotInfo: WORKFLOW_INFO, permit: permits[1]! });
    expect(workflows.tryReserveSlot(RESERVE)).not.toBeNull();
  });

  it('a local activity a task may run beside another (planLaunch) takes nothing out of the backlog', () => {
    const tuner = tunerOf(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '10' })),
    );
    const workflows = custom(tuner.workflowTaskSlotSupplier);
    const locals = custom(tuner.localActivityTaskSlotSupplier);
    const permits = Array.from({ length: 10 }, () => workflows.tryReserveSlot(RESERVE)!);
    for (const permit of permits) workflows.markSlotUsed({ slotInfo: WORKFLOW_INFO, permit });
    const reserve = { ...RESERVE, slotType: 'local-activity' as const };
    const planning = locals.tryReserveSlot(reserve)!;
    locals.markSlotUsed({
      slotInfo: { type: 'local-activity', activityType: 'planLaunch' },
      permit: planning,
    });
    expect(workflows.tryReserveSlot(RESERVE)).toBeNull();
    const loading = locals.tryReserveSlot(reserve)!;
    locals.markSlotUsed({
      slotInfo: { type: 'local-activity', activityType: 'loadMachine' },
      permit: loading,
    });
    expect(workflows.tryReserveSlot(RESERVE)).not.toBeNull();
    expect(workflows.tryReserveSlot(RESERVE)).toBeNull();
  });

  it('caps workflow slots at the cache, as the core does (the default backlog lowered to them)', () => {
    const tuner = tunerOf(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_MAX_CACHED_WORKFLOWS: '34' })),
    );
    const workflows = custom(tuner.workflowTaskSlotSupplier);
    for (let i = 0; i < 34; i += 1) expect(workflows.tryReserveSlot(RESERVE)).not.toBeNull();
    expect(workflows.tryReserveSlot(RESERVE)).toBeNull();
  });

  it('local-activity slots are the fixed count of PROVISIONER_MAX_CONCURRENT_ACTIVITIES', () => {
    const tuner = tunerOf(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_MAX_CONCURRENT_ACTIVITIES: '3' })),
    );
    const locals = custom(tuner.localActivityTaskSlotSupplier);
    const reserve = { ...RESERVE, slotType: 'local-activity' as const };
    for (let i = 0; i < 3; i += 1) expect(locals.tryReserveSlot(reserve)).not.toBeNull();
    expect(locals.tryReserveSlot(reserve)).toBeNull();
    expect(tuner.activityTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 3 });
  });

  it('ignores a permit it did not issue, and a slot released unused', () => {
    const tuner = tunerOf(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '10' })),
    );
    const workflows = custom(tuner.workflowTaskSlotSupplier);
    const permits = Array.from({ length: 10 }, () => workflows.tryReserveSlot(RESERVE));
    workflows.releaseSlot({ permit: {} });
    workflows.markSlotUsed({ slotInfo: WORKFLOW_INFO, permit: {} });
    expect(workflows.tryReserveSlot(RESERVE)).toBeNull();
    // a poll that timed out releases its slot without info
    workflows.releaseSlot({ permit: permits[0]! });
    expect(workflows.tryReserveSlot(RESERVE)).not.toBeNull();
  });

  it('a sticky reservation is served before a normal one that waited longer', async () => {
    const tuner = tunerOf(
      workerOptions(workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '10' })),
    );
    const workflows = custom(tuner.workflowTaskSlotSupplier);
    const permits = Array.from({ length: 10 }, () => workflows.tryReserveSlot(RESERVE));
    const signal = new AbortController().signal;
    const normal = workflows.reserveSlot(RESERVE, signal);
    const sticky = workflows.reserveSlot({ ...RESERVE, isSticky: true }, signal);
    workflows.releaseSlot({ permit: permits[0]! });
    expect(await settled(sticky)).toBe(true);
    expect(await settled(normal)).toBe(false);
    workflows.releaseSlot({ permit: await sticky });
    await expect(normal).resolves.toBeDefined();
  });

  it.each([
    // what the bridge does when the core drops a reservation (shutdown): its own string reason
    ['the bridge’s string reason', 'Request Cancelled'],
    ['an AbortError (a plain abort())', undefined],
  ])(
    'through the SDK’s own wrapper, an aborted reservation rejects with exactly the reason (%s) and nothing is logged',
    async (_case, reason) => {
      const options = workerOptions(
        workerSettingsFromEnv({ PROVISIONER_WORKFLOW_TASK_BACKLOG: '10' }),
      );
      const logger = new DefaultLogger('TRACE', () => undefined);
      const errors = jest.spyOn(logger, 'error');
      // what Worker.create hands the bridge (internal: the version is pinned above)
      const native = asNativeTuner(tunerOf(options), logger)
        .workflowTaskSlotSupplier as unknown as NativeWorkflowSlots;
      const gate = backlogGateOf(options)!;
      const nativeReserve = {
        slotType: 'workflow' as const,
        taskQueue: 'q',
        workerIdentity: 'test',
        isSticky: false,
      };
      for (let i = 0; i < 10; i += 1) expect(native.tryReserveSlot(nativeReserve)).not.toBeNull();
      const controller = new AbortController();
      const waiting = native.reserveSlot(nativeReserve, controller.signal);
      expect(await settled(waiting)).toBe(false);
      controller.abort(reason);
      const rejection = await waiting.then(
        () => 'granted',
        (err: unknown) => err,
      );
      expect(rejection).toBe(controller.signal.reason);
      if (reason !== undefined) expect(rejection).toBe('Request Cancelled');
      else expect(rejection).toMatchObject({ name: 'AbortError' });
      expect(errors).not.toHaveBeenCalled();
      expect(gate.issued).toBe(10);
      expect(gate.waiters).toBe(0);
    },
  );
});
