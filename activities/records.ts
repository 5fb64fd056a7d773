import { isContainerMachineId, isLost, placementGroupName, type InstanceState } from '../core';
import { EntityNotFoundError } from '../state/errors';
import { toMachine } from '../state/items';
import type { Life, MachineRecord } from '../state/types';
import type { CreatedMachine } from '../temporal/created-machine';
import { Context } from '@temporalio/activity';
import { claimantOf, parseRunSeed } from '../temporal/launch-token';
import { runningCatchUpOf } from './running-catch-up';
import { orMachineGone } from './failures';
import type { ActivityDeps } from './deps';
import { ec2ErrorCode } from '../ec2/errors';
import { activityLog } from './log';
import { machineInError } from './metrics';
import { PlacementGroups } from '../ec2/placement-groups';
import { asCaller } from '../ec2/caller';
import type { MachineView } from '../state/zone-counts';
import type {
  CreatedPreparation,
  FirstLaunch,
  LaunchPlan,
  MachineRef,
  MachineSnapshot,
  PlanModel,
  PreparedLaunch,
  StartedInstance,
  StatusUpdate,
  WorkflowTuning,
} from './types';

/** What EC2 says of a machine's instance (the sweep or the state-change handler saw it). */
interface ObservedInstance extends MachineRef {
  instanceId: string;
  state: InstanceState;
}

/** A machine's placement group in availability-set mode: its name, region and the counted group. */
interface GroupRef {
  name: string;
  region: string;
  application: string;
}

/** A placement group still holding a terminating instance is asked again this many times… */
const GROUP_DELETE_TRIES = 8;
/** …this far apart (within the removal activity's 30 s). */
const GROUP_DELETE_PAUSE_MS = 2_500;

/**
 * Records a launched instance on its machine (status `running`, instance
 * id, zone, type, hardware); the machine's life is the answer, so one that
 * went Dead meanwhile is torn down. Throws MachineGone when the machine is
 * gone. The `recordRunning` activity, and the launch itself where the
 * workflow asks it to record what it launched (activities/launch.ts).
 */
export async function recordLaunched(
  deps: ActivityDeps,
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
  const life = await orMachineGone(
    deps.store.recordRunning(input.model, input.machineId, {
      instanceId: started.instanceId,
      imageId: started.imageId,
      zone: started.zone,
      instanceType: started.instanceType,
      hardware,
      ...(pricePerHour !== undefined ? { pricePerHour } : {}),
      ...(started.placementGroup !== undefined ? { placementGroup: started.placementGroup } : {}),
      ...(started.partition !== undefined ? { partition: started.partition } : {}),
    }),
  );
  // a `running` EC2 said before this record found no machine: asked once, with others
  if (life === 'alive') {
    const { model, machineId } = input;
    const { instanceId } = started;
    void runningCatchUpOf(deps).recorded({ region: plan.region, model, machineId, instanceId });
  }
  return life;
}

/**
 * Plans and claims the zone of a machine just read (activities/launch.ts
 * `prepareLaunch`), for `loadMachine` asked to prepare its launch; with
 * `first`, launches too (LAUNCH_IN_READ).
 */
export type LaunchPreparer = (
  ref: MachineRef,
  machine: MachineRecord,
  view: MachineView,
  tuning: WorkflowTuning,
  created?: CreatedPreparation,
  held?: string,
  first?: FirstLaunch,
) => Promise<PreparedLaunch | 'stale'>;

/**
 * The zone this very run (`run`: its workflow id and run id) claimed and
 * marked a launch in for attempt 1 of a pass, as the machine's item says:
 * found only by a first read run again because the workflow task that
 * held the launch (LAUNCH_IN_TASK) was lost. The first read then answers
 * that zone instead of claiming again, so the launch run again is the lost
 * one (same token seed) and finds its batch: a fresh claim might choose
 * another zone, whose launch would be a second instance. Undefined when the
 * marker is another run's (or none), or the machine's claim moved on.
 */
export function zoneMarkedByThisRun(
  item: Record<string, unknown>,
  run: { workflowId: string; runId: string } | undefined,
): string | undefined {
  if (!run) return undefined;
  const marker = item.launchBatch as { tokenSeed?: unknown } | undefined;
  if (typeof marker?.tokenSeed !== 'string') return undefined;
  const seed = parseRunSeed(marker.tokenSeed, run);
  if (!seed || seed.attempt !== 1) return undefined;
  return item.zoneClaim === seed.zone ? seed.zone : undefined;
}

/**
 * The zone this very run claimed for attempt 1 and still holds (the claim's
 * `claimedBy`, state/zone-claim.ts), or, from items written before claims
 * said who made them, the zone it marked a launch in (`zoneMarkedByThisRun`).
 * A first read that finds one was run again because the workflow task that
 * claimed (and maybe launched) was lost: the claim may already be in a batch
 * waiting to go out, unmarked, so the mark alone cannot tell.
 */
export function zoneHeldByThisRun(
  item: Record<string, unknown>,
  run: { workflowId: string; runId: string } | undefined,
): string | undefined {
  if (!run) return undefined;
  const claim = item.zoneClaim;
  if (typeof item.claimedBy === 'string') {
    // a claim that says who made it: that alone decides (a marker left beside another
    // claimant's claim is a launch of a claim since moved on)
    return typeof claim === 'string' && claim !== '' && item.claimedBy === claimantOf(run, 1)
      ? claim
      : undefined;
  }
  return zoneMarkedByThisRun(item, run);
}

/** The run a step runs for (an activity's or local activity's workflow), if any. */
export function currentRun(): { workflowId: string; runId: string } | undefined {
  try {
    return Context.current().info.workflowExecution;
  } catch {
    return undefined;
  }
}

/**
 * The machine and its model as the creating request wrote them
 * (MachineWorkflowInput.created), for a launch prepared without reading
 * either: a new machine, alive, pending, without an instance, counted
 * nowhere, created in the model of that uid with that base, those
 * constraints, placement and applications. The claim's view says exactly
 * that, and the claim is conditional on all of it
 * (state/zone-count-items.ts machineClaimItem).
 */
export function fromCreation(
  ref: MachineRef,
  created: CreatedMachine,
): { machine: MachineRecord; view: MachineView; model: PlanModel } {
  const applications = [...created.applications];
  const machine: MachineRecord = {
    model: ref.model,
    id: ref.machineId,
    base: created.base,
    constraints: created.constraints,
    ...(created.placement ? { placement: created.placement } : {}),
    applications,
    principals: [...(created.principals ?? [])],
    containers: [],
    life: 'alive',
    status: 'pending',
    message: '',
    modelUid: created.modelUid,
    createdAt: '',
    updatedAt: '',
  };
  const model: PlanModel = {
    name: ref.model,
    uid: created.modelUid,
    region: created.region,
    availabilitySets: created.availabilitySets,
  };
  const view: MachineView = {
    exists: true,
    life: 'alive',
    applications,
    modelUid: created.modelUid,
    // what the plan is made from: the claim holds only on a machine still so
    asCreated: {
      base: created.base,
      constraints: created.constraints,
      ...(created.placement ? { placement: created.placement } : {}),
    },
  };
  return { machine, view, model };
}

/**
 * Whether a machine just read is one its workflow provisions now when no
 * signal is pending (workflows/machine.ts `provisionable` without a retry):
 * only then does `loadMachine` prepare its launch.
 */
export function launchesNow(machine: MachineRecord): boolean {
  const manual = machine.manual === true || machine.placement?.startsWith('ssh:') === true;
  return (
    machine.life !== 'dead' &&
    !manual &&
    !isContainerMachineId(machine.id) &&
    !machine.instanceId &&
    machine.status !== 'error'
  );
}

/**
 * A Dead machine's removal, shared by the `removeMachine` activity and the
 * one-step teardown's (activities/teardown.ts, REMOVED_IN_TEARDOWN): the
 * machine (and its model, if dying and now empty) and, in availability-set
 * mode, the placement group it was the last counted in. Whoever removes a
 * machine cleans up its group, whatever the workflow's snapshot said of
 * the mode.
 */
export function machineRemoval(
  deps: ActivityDeps,
  groups: PlacementGroups = new PlacementGroups(deps.ec2ForRegion),
) {
  const { repo, store } = deps;

  /** The placement group the machine belongs to, read before it is removed (undefined outside the mode). */
  async function placementGroupOf(ref: MachineRef): Promise<GroupRef | undefined> {
    const [model, machine] = await Promise.all([
      repo.getModel(ref.model),
      repo.getMachine(ref.model, ref.machineId),
    ]).catch((err: unknown) => {
      if (err instanceof EntityNotFoundError) return [undefined, undefined] as const;
      throw err;
    });
    if (!model?.availabilitySets || !model.uid || !machine) return undefined;
    // a Dead machine's units are gone, and its applications with them: the group it ran in names it
    const prefix = placementGroupName(model.uid, '');
    const recorded = machine.placementGroup?.startsWith(prefix)
      ? machine.placementGroup.slice(prefix.length)
      : undefined;
    const application = recorded || [...(machine.applications ?? [])].sort()[0];
    if (!application) return undefined;
    return {
      name: placementGroupName(model.uid, application),
      region: model.region,
      application,
    };
  }

  /**
   * Deletes the group once no machine is counted in it (claimed, launching
   * or running): a machine that claims later creates it again. One EC2 still
   * counts (an instance not yet terminated) is left for a later removal.
   */
  async function deleteGroupIfEmpty(model: string, group: GroupRef): Promise<void> {
    let outcome;
    // Machines leaving together give up their counts before their instances are
    // gone, so the last one removed may find another's instance still shutting
    // down in the group: wait for it a little, or nobody deletes the group.
    for (let attempt = 1; ; attempt++) {
      const counts = await store.zones.counts(model, group.application);
      if (Object.values(counts).some((n) => n > 0)) return;
      outcome = await asCaller('teardown:placement-group', () =>
        groups.delete(group.region, group.name),
      );
      if (outcome !== 'in-use' || attempt >= GROUP_DELETE_TRIES) break;
      await new Promise((r) => setTimeout(r, GROUP_DELETE_PAUSE_MS));
    }
    if (outcome === 'in-use') {
      activityLog.warn('placement group still in use; left for a later removal', {
        model,
        placementGroup: group.name,
      });
    }
  }

  /**
   * Removes the Dead machine (and its model, if dying and now empty). In
   * availability-set mode, the placement group of a machine that was the
   * last one counted in its distribution group goes with it.
   */
  async function removeMachine(ref: MachineRef): Promise<{ modelRemoved: boolean }> {
    const group = await placementGroupOf(ref);
    const removed = await store.removeMachine(ref.model, ref.machineId);
    if (group) {
      // The machine is gone now: a failure here must not fail the activity, whose
      // retry would find no machine (and no group to name) and fail the teardown.
      // The group is left for the next removal in it, as an in-use one is.
      try {
        await deleteGroupIfEmpty(ref.model, group);
      } catch (err) {
        activityLog.warn('placement group not deleted; left for a later removal', {
          model: ref.model,
          machineId: ref.machineId,
          placementGroup: group.name,
          code: ec2ErrorCode(err) ?? 'unknown',
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    return removed;
  }

  return { removeMachine };
}

/** DynamoDB reads and writes made on a machine workflow's behalf. */
export function recordActivities(
  deps: ActivityDeps,
  groups: PlacementGroups = new PlacementGroups(deps.ec2ForRegion),
  prepare?: LaunchPreparer,
) {
  const { repo, store } = deps;
  const removal = machineRemoval(deps, groups);

  /** Writes EC2's state of the machine's instance; a host's containers follow it down and back. */
  async function recordObservation(input: ObservedInstance) {
    const applied = await store.recordInstanceState(
      input.model,
      input.machineId,
      input.instanceId,
      input.state,
    );
    // a host that goes down takes its containers down with it (and back when it returns);
    // the write answered with the host's containers, so a host without any costs no read
    if (
      applied &&
      applied.containers.length > 0 &&
      deps.containers &&
      (isLost(input.state) || input.state === 'running')
    ) {
      await deps.containers.followHost(input.model, input.machineId, isLost(input.state), applied);
    }
    return applied;
  }

  /** What a workflow needs of a machine (activities/types.ts MachineSnapshot), but its life. */
  function snapshotFields(machine: MachineRecord) {
    return {
      status: machine.status,
      message: machine.message,
      ...(machine.instanceId ? { instanceId: machine.instanceId } : {}),
      ...(machine.instanceStatus ? { instanceStatus: machine.instanceStatus } : {}),
      applications: [...(machine.applications ?? [])],
      ...(machine.principals?.length ? { units: [...machine.principals] } : {}),
      ...(machine.constraints ? { constraints: machine.constraints } : {}),
      ...(machine.zone ? { zone: machine.zone } : {}),
      ...(machine.instanceType ? { instanceType: machine.instanceType } : {}),
      manual: machine.manual === true || machine.placement?.startsWith('ssh:') === true,
      container: isContainerMachineId(machine.id),
      tuning: workflowTuning(),
    };
  }

  function workflowTuning(): WorkflowTuning {
    const { startAttempts, retryDelayMs, blockedHistoryEvents } = deps.tuning;
    return {
      startAttempts,
      retryDelayMs,
      ...(blockedHistoryEvents !== undefined ? { blockedHistoryEvents } : {}),
    };
  }

  /** What loadMachine answers of a machine just read (a Dead one and a container: with their model's). */
  async function snapshotOf(ref: MachineRef, machine: MachineRecord): Promise<MachineSnapshot> {
    const fields = snapshotFields(machine);
    if (machine.life !== 'dead' && !fields.container) return { ...fields, life: machine.life };
    // teardown: where the instance is, whether to keep it, and whose instances are the model's;
    // a container's steps (SSM on its host) need the region too
    const model = await repo.getModel(ref.model).catch((err: unknown) => {
      if (err instanceof EntityNotFoundError) return undefined;
      throw err;
    });
    return {
      ...fields,
      life: machine.life,
      region: model?.region ?? deps.defaultRegion,
      harvestMode: model?.harvestMode ?? 'destroyed',
      ...(model?.uid ? { modelUid: model.uid } : {}),
      ...(model?.availabilitySets && machine.life === 'dead'
        ? { availabilitySets: true as const }
        : {}),
    };
  }

  return {
    /** Worker tuning, read from the worker's environment and recorded in history. */
    tuning(): Promise<WorkflowTuning> {
      return Promise.resolve(workflowTuning());
    },

    /**
     * The machine as it is now, or null once it is removed. With `prepare`
     * (a `machine` run's first read, nothing pending: workflows/machine.ts),
     * a machine its workflow is about to provision also has its launch
     * planned and its zone claimed in this same step (`prepared`): one read
     * of the machine serves all three, and the workflow's first task runs
     * one local activity instead of three. With `launch` too (the pass and
     * attempt the workflow launches for: LAUNCH_IN_READ, workflows/patches.ts),
     * the prepared launch is made in this step as well, and its instance
     * recorded (`prepared.launched`).
     */
    async loadMachine(
      ref: MachineRef & { prepare?: boolean; created?: CreatedMachine; launch?: FirstLaunch },
    ): Promise<MachineSnapshot | null> {
      if (ref.prepare && prepare && ref.created && !isContainerMachineId(ref.machineId)) {
        // what the creating request wrote: planned and claimed without a read, kept only
        // when the claim found the machine exactly so; else read as below
        const given = fromCreation(ref, ref.created);
        const fields = snapshotFields(given.machine);
        const prepared = await prepare(
          { model: ref.model, machineId: ref.machineId },
          given.machine,
          given.view,
          fields.tuning,
          { model: given.model },
          undefined,
          ref.launch,
        );
        if (prepared !== 'stale') {
          return { ...fields, life: 'alive', prepared: { ...prepared, fromCreation: true } };
        }
      }
      if (ref.prepare && prepare) {
        const read = await store.machineWithView(ref.model, ref.machineId);
        if (!read) return null;
        const machine = toMachine(read.item);
        if (launchesNow(machine)) {
          const fields = snapshotFields(machine);
          const prepared = await prepare(
            { model: ref.model, machineId: ref.machineId },
            machine,
            read.view,
            fields.tuning,
            undefined,
            zoneHeldByThisRun(read.item, currentRun()),
            ref.launch,
          );
          if (prepared === 'stale') throw new Error('a launch prepared from a read was stale');
          return { ...fields, life: machine.life as 'alive' | 'dying', prepared };
        }
        return snapshotOf(ref, machine);
      }
      let machine;
      try {
        machine = await repo.getMachine(ref.model, ref.machineId);
      } catch (err) {
        if (err instanceof EntityNotFoundError) return null;
        throw err;
      }
      // planning, next in this workflow task, plans from this very read
      deps.recentReads?.remember(ref, machine);
      return snapshotOf(ref, machine);
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
    async recordInstanceState(input: ObservedInstance): Promise<boolean> {
      return (await recordObservation(input)) !== false;
    },

    /**
     * recordInstanceState for workflows that take the OBSERVE_WITHOUT_READ
     * change: answers with the machine as the write left it, so the workflow
     * goes on without reading it again (a live machine's liveness costs one
     * write and no read). `machine` is absent when the write did not apply,
     * and for a Dead machine or a container (their workflows read them in full).
     */
    async observeInstance(
      input: ObservedInstance,
    ): Promise<{ applied: boolean; machine?: MachineSnapshot }> {
      const applied = await recordObservation(input);
      if (applied === false) return { applied: false };
      const machine = toMachine(applied.item);
      const fields = snapshotFields(machine);
      if (machine.life === 'dead' || fields.container) return { applied: true };
      return { applied: true, machine: { ...fields, life: machine.life } };
    },

    /**
     * Reprovision, asked of the machine's workflow (the API or the sweep saw
     * EC2 confirm the instance gone): forgets the instance, only while the
     * machine is alive and records it, and gives up its zone. Repeatable (a
     * retry finishes what an earlier try began). False when the machine
     * changed meanwhile: nothing was written.
     */
    async resetForReprovision(input: MachineRef & { instanceId: string }): Promise<boolean> {
      return store.resetForReprovision(input.model, input.machineId, input.instanceId);
    },

    /** Gives up the machine's zone claim after a failure. */
    async releaseZone(ref: MachineRef): Promise<void> {
      await orMachineGone(store.releaseZoneClaim(ref.model, ref.machineId));
    },

    /**
     * Records the launched instance (status `running`). Returns the machine's
     * life: a machine that went Dead meanwhile is torn down by the workflow.
     */
    recordRunning(
      input: MachineRef & { plan: LaunchPlan; started: StartedInstance },
    ): Promise<Life> {
      return recordLaunched(deps, input);
    },

    /** Final failure: status `error` with the cause, no instance id, no zone. */
    async recordError(input: MachineRef & { message: string }): Promise<void> {
      await orMachineGone(store.recordError(input.model, input.machineId, input.message));
      machineInError();
    },

    /**
     * Removes the Dead machine (and its model, if dying and now empty), with
     * its placement group in availability-set mode (`machineRemoval`).
     */
    removeMachine: removal.removeMachine,
  };
}
