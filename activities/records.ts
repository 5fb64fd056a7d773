import { isContainerMachineId, type InstanceState } from '../core';
import { EntityNotFoundError } from '../state/errors';
import type { Life } from '../state/types';
import { orMachineGone } from './failures';
import type { ActivityDeps } from './deps';
import type {
  LaunchPlan,
  MachineRef,
  MachineSnapshot,
  StartedInstance,
  StatusUpdate,
} from './types';

/** DynamoDB reads and writes made on a machine workflow's behalf. */
export function recordActivities(deps: ActivityDeps) {
  const { repo, store } = deps;
  return {
    /** Worker tuning, read from the worker's environment and recorded in history. */
    tuning(): Promise<{ startAttempts: number; retryDelayMs: number }> {
      return Promise.resolve({
        startAttempts: deps.tuning.startAttempts,
        retryDelayMs: deps.tuning.retryDelayMs,
      });
    },

    /** The machine as it is now, or null once it is removed. */
    async loadMachine(ref: MachineRef): Promise<MachineSnapshot | null> {
      let machine;
      try {
        machine = await repo.getMachine(ref.model, ref.machineId);
      } catch (err) {
        if (err instanceof EntityNotFoundError) return null;
        throw err;
      }
      const model = await repo.getModel(ref.model).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      return {
        life: machine.life,
        status: machine.status,
        message: machine.message,
        ...(machine.instanceId ? { instanceId: machine.instanceId } : {}),
        ...(machine.instanceStatus ? { instanceStatus: machine.instanceStatus } : {}),
        applications: [...(machine.applications ?? [])],
        manual: machine.manual === true || machine.placement?.startsWith('ssh:') === true,
        container: isContainerMachineId(machine.id),
        region: model?.region ?? deps.defaultRegion,
        harvestMode: model?.harvestMode ?? 'destroyed',
        ...(model?.uid ? { modelUid: model.uid } : {}),
      };
    },

    async recordStatus(update: StatusUpdate): Promise<void> {
      await orMachineGone(
        repo.updateMachine(update.model, update.machineId, {
          status: update.status,
          message: update.message,
        }),
      );
    },

    /**
     * Records EC2's state of the machine's instance (liveness); a lost one
     * puts the machine `down`. False when the machine no longer records that
     * instance (reprovisioned, removed): nothing was written.
     */
    async recordInstanceState(
      input: MachineRef & { instanceId: string; state: InstanceState },
    ): Promise<boolean> {
      return store.recordInstanceState(input.model, input.machineId, input.instanceId, input.state);
    },

    /** Gives up the machine's zone claim after a failure. */
    async releaseZone(ref: MachineRef): Promise<void> {
      await orMachineGone(store.releaseZoneClaim(ref.model, ref.machineId));
    },

    /**
     * Records the launched instance (status `running`). Returns the machine's
     * life: a machine that went Dead meanwhile is torn down by the workflow.
     */
    async recordRunning(
      input: MachineRef & { plan: LaunchPlan; started: StartedInstance },
    ): Promise<Life> {
      const { plan, started } = input;
      let hardware = plan.hardware;
      let pricePerHour = plan.pricePerHour;
      if (started.instanceType !== plan.instanceType) {
        // an adopted instance of another type: its price if known, never a fetch here
        pricePerHour = deps.prices?.known(plan.region)?.get(started.instanceType);
        // an adopted instance launched from an earlier plan: record what it is
        const entry = (await deps.ec2ForRegion(plan.region).catalogue.all()).find(
          (t) => t.name === started.instanceType,
        );
        if (entry) {
          hardware = {
            arch: entry.arches[0] ?? plan.hardware.arch,
            cores: entry.cores,
            mem: entry.mem,
          };
        }
      }
      return orMachineGone(
        store.recordRunning(input.model, input.machineId, {
          instanceId: started.instanceId,
          imageId: started.imageId,
          zone: started.zone,
          instanceType: started.instanceType,
          hardware,
          ...(pricePerHour !== undefined ? { pricePerHour } : {}),
        }),
      );
    },

    /** Final failure: status `error` with the cause, no instance id, no zone. */
    async recordError(input: MachineRef & { message: string }): Promise<void> {
      await orMachineGone(store.recordError(input.model, input.machineId, input.message));
    },

    /** Removes the Dead machine (and its model, if dying and now empty). */
    async removeMachine(ref: MachineRef): Promise<{ modelRemoved: boolean }> {
      return store.removeMachine(ref.model, ref.machineId);
    },
  };
}
