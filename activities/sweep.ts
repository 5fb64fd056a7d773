import { TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { WorkflowIdConflictPolicy, WorkflowNotFoundError } from '@temporalio/client';
import { isContainerMachineId } from '../core';
import { EntityNotFoundError } from '../state/errors';
import type { Life, MachineStatus } from '../state/types';
import {
  MACHINE_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  machineWorkflowId,
} from '../workflows/search-attributes';
import type { ActivityDeps } from './deps';
import { alignSweepInterval, removeModelSweep } from './schedules';
import { TAG_MACHINE, liveInstancesTagged, tagValue } from './tags';
import type { SweepReport } from './types';

export interface SweptInstance {
  instanceId: string;
  /** The machine the instance is tagged for. */
  machineId?: string;
  launchTime?: Date;
}

export interface SweptMachine {
  id: string;
  life: Life;
  status: MachineStatus;
  instanceId?: string;
}

/**
 * Instances tagged for the model that no live machine owns (DESIGN.md: an
 * instance belongs to a machine only if the machine records its id), older
 * than the grace period. Spared too: an instance tagged for a machine whose
 * launch is still in flight (alive, pending or allocating, no instance
 * recorded yet), which its workflow is about to adopt or record.
 */
export function selectStrays(input: {
  instances: readonly SweptInstance[];
  machines: readonly SweptMachine[];
  now: number;
  graceMs: number;
}): string[] {
  const owned = new Set(
    input.machines.flatMap((m) => (m.life !== 'dead' && m.instanceId ? [m.instanceId] : [])),
  );
  const launching = new Set(
    input.machines
      .filter(
        (m) =>
          m.life !== 'dead' &&
          !m.instanceId &&
          (m.status === 'pending' || m.status === 'allocating'),
      )
      .map((m) => m.id),
  );
  return input.instances
    .filter((i) => {
      if (owned.has(i.instanceId)) return false;
      if (!i.launchTime || input.now - i.launchTime.getTime() < input.graceMs) return false;
      return !(i.machineId !== undefined && launching.has(i.machineId));
    })
    .map((i) => i.instanceId);
}

/** Harvest modes under which the sweep terminates unknown instances (Juju's `unknown` and `all`). */
export function harvestsStrays(mode: string): boolean {
  return mode === 'unknown' || mode === 'all';
}

/** The per-model sweep: stray instances, and machines whose workflow has gone. */
export function sweepActivities(deps: ActivityDeps) {
  const now = deps.now ?? Date.now;

  async function runningMachineWorkflows(model: string): Promise<Set<string>> {
    const ids = new Set<string>();
    if (!deps.temporal) return ids;
    const query =
      `WorkflowType = "${MACHINE_WORKFLOW_TYPE}" AND ` +
      `${SEARCH_ATTRIBUTES.model.name} = "${model}" AND ExecutionStatus = "Running"`;
    for await (const wf of deps.temporal.workflow.list({ query })) ids.add(wf.workflowId);
    return ids;
  }

  /** Starts the workflow of every machine that should have one and has none. */
  async function reconcile(
    model: string,
    machines: ReadonlyArray<SweptMachine & { manual?: boolean }>,
  ): Promise<string[]> {
    const client = deps.temporal;
    if (!client) return [];
    const needing = machines.filter(
      // Manual machines and containers have nothing to launch; once Dead they need their workflow to be removed.
      (m) => !((m.manual || isContainerMachineId(m.id)) && m.life !== 'dead'),
    );
    if (needing.length === 0) return [];
    // Visibility lags a little: a workflow missing from it is described before it is started again.
    const running = await runningMachineWorkflows(model);
    const restarted: string[] = [];
    for (const m of needing) {
      const workflowId = machineWorkflowId(model, m.id);
      if (m.life === 'dead' && running.has(workflowId)) {
        // A Dead machine's destroy signal is sent best effort by the API; an idle
        // workflow that missed it would wait forever, so the sweep sends it again
        // (harmless: the workflow re-reads the machine). A workflow that has
        // finished meanwhile needs nothing more.
        try {
          await client.workflow.getHandle(workflowId).signal('destroy');
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
        continue;
      }
      if (running.has(workflowId)) continue;
      try {
        const d = await client.workflow.getHandle(workflowId).describe();
        if (d.status.name === 'RUNNING') continue;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      // The machine list was read before; its workflow may have removed it
      // since and finished. Read it again so a removed machine gets no new run.
      const still = await deps.repo.getMachine(model, m.id).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      if (still === undefined) continue;
      await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
        taskQueue: deps.taskQueue,
        workflowId,
        args: [{ model, machineId: m.id }],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.model, value: model },
          { key: SEARCH_ATTRIBUTES.machine, value: m.id },
          { key: SEARCH_ATTRIBUTES.status, value: m.status },
        ],
      });
      restarted.push(m.id);
    }
    return restarted;
  }

  async function modelGone(model: string): Promise<SweepReport> {
    if (deps.temporal) await removeModelSweep(deps.temporal, model);
    return { model, modelGone: true, strays: [], terminated: [], restarted: [] };
  }

  return {
    /**
     * `intervalMs`: the interval the schedule runs at (its action carries it),
     * so it is put on the worker's own interval only when they differ.
     */
    async sweepModel(input: { model: string; intervalMs?: number }): Promise<SweepReport> {
      const { model } = input;
      let record;
      try {
        record = await deps.repo.getModel(model);
      } catch (err) {
        if (err instanceof EntityNotFoundError) return modelGone(model);
        throw err;
      }
      if (record.life === 'dying' && (await deps.store.removeModelIfDyingAndEmpty(model))) {
        return modelGone(model);
      }
      let strays: string[] = [];
      let terminated: string[] = [];
      let machines;
      if (harvestsStrays(record.harvestMode)) {
        const { ec2 } = deps.ec2ForRegion(record.region);
        // Instances first, then machines: a launch recorded in between is seen as owned.
        const instances = await liveInstancesTagged(ec2, {
          deployment: deps.deployment,
          model,
          ...(record.uid ? { modelUid: record.uid } : {}),
        });
        machines = await deps.store.machines(model);
        strays = selectStrays({
          instances: instances.flatMap((i) =>
            i.InstanceId
              ? [
                  {
                    instanceId: i.InstanceId,
                    ...(tagValue(i, TAG_MACHINE) !== undefined
                      ? { machineId: tagValue(i, TAG_MACHINE) }
                      : {}),
                    ...(i.LaunchTime ? { launchTime: i.LaunchTime } : {}),
                  },
                ]
              : [],
          ),
          machines,
          now: now(),
          graceMs: deps.tuning.strayGraceMs,
        });
        terminated = strays;
        if (terminated.length > 0) {
          await ec2.send(new TerminateInstancesCommand({ InstanceIds: terminated }));
        }
      } else {
        // `none` and `destroyed` never harvest unknown instances: EC2 need not be asked.
        machines = await deps.store.machines(model);
      }
      const restarted = await reconcile(model, machines);
      if (deps.temporal && input.intervalMs !== deps.tuning.sweepIntervalMs) {
        // The worker's PROVISIONER_SWEEP_INTERVAL is the one that counts.
        await alignSweepInterval(deps.temporal, model, deps.tuning.sweepIntervalMs).catch(
          () => false,
        );
      }
      return {
        model,
        modelGone: false,
        harvestMode: record.harvestMode,
        strays,
        terminated,
        restarted,
      };
    },
  };
}
