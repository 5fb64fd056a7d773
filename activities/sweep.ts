import { WorkflowIdConflictPolicy, WorkflowNotFoundError } from '@temporalio/client';
import {
  instanceChanges,
  isContainerMachineId,
  isLost,
  isRoutine,
  type InstanceChange,
  type InstanceState,
} from '../core';
import { EntityNotFoundError } from '../state/errors';
import {
  MACHINE_WORKFLOW_TYPE,
  MACHINE_WORKFLOW_TYPES_QUERY,
  SEARCH_ATTRIBUTES,
  machineStartOptions,
  machineWorkflowId,
} from '../temporal/search-attributes';
import { harvestsStrays } from '../core/harvest';
import { terminateInstances } from '../ec2/instances';
import { addressChanges, type AddressChange } from '../ec2/addresses';
import type { ActivityDeps } from './deps';
import {
  deploymentListing,
  type DeploymentListing,
  type SharedListings,
} from '../ec2/instance-listing';
import { InstanceOwners } from './instance-owners';
import { instanceStates, instancesTaggedAnyState } from '../ec2/tags';
import type { SweepReport } from './types';
import { inLanes } from './lanes';
import { selectReprovisions, type SweptMachine } from './sweep-reprovision';
import { selectStrays, strayCandidates } from './sweep-strays';

import { activityLog } from './log';

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Machine workflows the sweep checks and starts at once, per model. */
const RECONCILE_LANES = 8;

export { harvestsStrays } from '../core/harvest';
export { inLanes } from './lanes';
export { selectReprovisions, type SweptMachine } from './sweep-reprovision';
export { selectStrays, type SweptInstance } from './sweep-strays';

/** The per-model sweep: stray instances, and machines whose workflow has gone. */
/** Address writes one model's sweep makes at once, and at most per sweep (the next sweep writes the rest). */
export const ADDRESS_WRITE_CONCURRENCY = 4;
export const ADDRESS_WRITES_PER_SWEEP = 200;

export function sweepActivities(deps: ActivityDeps, given?: InstanceOwners) {
  const now = deps.now ?? Date.now;
  const owners = given ?? new InstanceOwners(deps.store.batches);

  async function runningMachineWorkflows(model: string): Promise<Set<string>> {
    const ids = new Set<string>();
    if (!deps.temporal) return ids;
    const query =
      `${MACHINE_WORKFLOW_TYPES_QUERY} AND ` +
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
      // Manual machines have nothing to launch; once Dead they need their workflow to be removed.
      // Containers have a workflow of their own (created on their host, issue 15).
      (m) => !(m.manual && m.life !== 'dead'),
    );
    if (needing.length === 0) return [];
    // Visibility lags a little: a workflow missing from it is described before it is started again.
    const running = await runningMachineWorkflows(model);
    const restarted: string[] = [];
    // A few at a time: a cut-off bulk request may leave a thousand machines without a
    // workflow, and one at a time that outlasts the model's sweep budget.
    await inLanes(needing, RECONCILE_LANES, async (m) => {
      const workflowId = machineWorkflowId(model, m.id);
      if (m.life === 'dead' && running.has(workflowId)) {
        // A Dead machine's destroy signal is sent best effort by the API; an idle
        // workflow that missed it would wait forever, so the sweep sends it again
        // (harmless: the workflow re-reads the machine). A workflow that has
        // finished meanwhile needs nothing more. One that wrote `stopping` took it
        // and is tearing down: a signal would only cost it a workflow task (issue 30:
        // a 5 s sweep gave each of 300 dying machines one every sweep).
        if (m.status === 'stopping') return;
        try {
          await client.workflow.getHandle(workflowId).signal('destroy');
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
        return;
      }
      if (running.has(workflowId)) return;
      try {
        const d = await client.workflow.getHandle(workflowId).describe();
        if (d.status.name === 'RUNNING') return;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      // The machine list was read before; its workflow may have removed it
      // since and finished. Read it again so a removed machine gets no new run.
      const still = await deps.repo.getMachine(model, m.id).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      if (still === undefined) return;
      const options = machineStartOptions(model, m.id, deps.taskQueue);
      await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
        ...options,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        // as a new machine's, but with the status the machine has now
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.model, value: model },
          { key: SEARCH_ATTRIBUTES.machine, value: m.id },
          { key: SEARCH_ATTRIBUTES.status, value: m.status },
        ],
      });
      restarted.push(m.id);
    });
    // in the machines' order, whichever lane finished first
    return needing.map((m) => m.id).filter((id) => restarted.includes(id));
  }

  function modelGone(model: string): SweepReport {
    return {
      model,
      modelGone: true,
      strays: [],
      terminated: [],
      restarted: [],
      instanceChanges: [],
      lost: [],
      reprovisioned: [],
    };
  }

  async function signal(model: string, machineId: string, name: string, args: unknown[]) {
    if (!deps.temporal) return;
    try {
      await deps.temporal.workflow
        .getHandle(machineWorkflowId(model, machineId))
        .signal(name, ...args);
    } catch (err) {
      // no workflow: reconcile starts one, and the next sweep tells it
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }

  /**
   * A signal that failed for one machine (Temporal throttled, refused): said,
   * and the sweep goes on with the others; nothing was written, so the next
   * sweep sees the same difference and tells it again.
   */
  function signalFailed(model: string, machineId: string, name: string, err: unknown): void {
    activityLog.warn('sweep: could not signal the machine workflow; the next sweep tries again', {
      model,
      machineId,
      signal: name,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }

  /** Tells each machine's workflow what EC2 says of its instance; the workflow records it. */
  async function signalChanges(model: string, changes: readonly InstanceChange[]): Promise<void> {
    for (const c of changes) {
      try {
        await signal(model, c.machineId, 'instanceState', [
          { instanceId: c.instanceId, state: c.state },
        ]);
      } catch (err) {
        signalFailed(model, c.machineId, 'instanceState', err);
      }
    }
  }

  /**
   * Routine news (`pending`, `running`: core/liveness.ts isRoutine) written to
   * each machine by the sweep itself, one UpdateItem with the addresses EC2
   * lists for it when they changed, RECONCILE_LANES at a time. A machine the
   * write does not apply to (down, stopped, dying: its workflow decides) is
   * told by a signal instead; a failed write is said, and the next sweep sees
   * the same difference. Answers the machines whose addresses went with it.
   */
  async function recordRoutine(
    model: string,
    changes: readonly InstanceChange[],
    addresses: readonly AddressChange[],
  ): Promise<Set<string>> {
    const withAddresses = new Set<string>();
    const addressOf = new Map(addresses.map((a) => [a.machineId, a]));
    await inLanes(changes, RECONCILE_LANES, async (c) => {
      const address = addressOf.get(c.machineId);
      let applied: boolean | 'stale';
      try {
        applied = await deps.store.recordRoutineInstanceState(
          model,
          c.machineId,
          c.instanceId,
          c.state,
          address?.instanceId === c.instanceId
            ? { privateAddress: address.privateAddress, publicAddress: address.publicAddress }
            : undefined,
        );
      } catch (err) {
        activityLog.warn('sweep: could not record the instance state; the next sweep tries again', {
          model,
          machineId: c.machineId,
          instanceId: c.instanceId,
          error: errorText(err),
        });
        return;
      }
      // 'stale': a pending the sweep read before a running landed; dropped, not signalled
      if (applied === 'stale') return;
      if (applied) {
        if (address?.instanceId === c.instanceId) withAddresses.add(c.machineId);
        return;
      }
      await signalChanges(model, [c]);
    });
    return withAddresses;
  }

  /**
   * The addresses EC2 lists for the model's instances, written only where they
   * changed (once per instance, mostly), after the workflows are reconciled,
   * ADDRESS_WRITE_CONCURRENCY at a time and at most ADDRESS_WRITES_PER_SWEEP
   * per sweep (the next sweep writes the rest). Best effort: a failed write
   * is said and the next sweep writes it again; it never fails the sweep.
   */
  async function recordAddresses(model: string, changes: readonly AddressChange[]): Promise<void> {
    const queue = changes.slice(0, ADDRESS_WRITES_PER_SWEEP);
    const writer = async (): Promise<void> => {
      for (let c = queue.shift(); c !== undefined; c = queue.shift()) await recordOne(model, c);
    };
    await Promise.all(
      Array.from({ length: Math.min(ADDRESS_WRITE_CONCURRENCY, queue.length) }, writer),
    );
  }

  async function recordOne(model: string, c: AddressChange): Promise<void> {
    try {
      await deps.store.recordAddresses(model, c.machineId, c.instanceId, c);
    } catch (err) {
      activityLog.warn(
        'sweep: could not record the instance addresses; the next sweep tries again',
        {
          model,
          machineId: c.machineId,
          instanceId: c.instanceId,
          error: errorText(err),
        },
      );
    }
  }

  /** `reprovisionLost`: machines whose instance this sweep saw gone get a new one (capped). */
  async function reprovisionLost(
    model: string,
    machines: readonly SweptMachine[],
    observed: ReadonlyMap<string, InstanceState>,
  ): Promise<string[]> {
    const done: string[] = [];
    const chosen = selectReprovisions({
      machines: watched(machines),
      observed,
      cap: deps.tuning.reprovisionCap,
      now: now(),
    });
    for (const { machineId, instanceId } of chosen) {
      // The workflow forgets the instance and launches anew, only while the machine still
      // records it: one step it completes or repeats. Nothing is written here, so a signal
      // that fails leaves the machine as it was, and the next sweep chooses it again.
      if (!deps.temporal) continue;
      try {
        await deps.temporal.workflow
          .getHandle(machineWorkflowId(model, machineId))
          .signal('reprovision', { instanceId });
      } catch (err) {
        // no workflow: reconcile starts one, and the next sweep tells it
        if (err instanceof WorkflowNotFoundError) continue;
        // one machine's failure stops neither the others nor the model's liveness
        signalFailed(model, machineId, 'reprovision', err);
        continue;
      }
      done.push(machineId);
    }
    return done;
  }

  /**
   * What EC2 says of the model's instances: strays terminated (when the
   * harvest mode allows), routine liveness changes written to the machines
   * and the others told to their workflows, lost instances reprovisioned
   * (when the model asks).
   */
  async function watchInstances(
    model: string,
    record: { region: string; harvestMode: string; uid?: string; reprovisionLost?: boolean },
    listings: SharedListings | undefined,
  ): Promise<{
    machines: SweptMachine[];
    strays: string[];
    reprovisioned: string[];
    changes: InstanceChange[];
    addresses: AddressChange[];
  }> {
    let strays: string[] = [];
    const { ec2 } = deps.ec2ForRegion(record.region);
    // One listing of the deployment's instances (any state) serves strays and liveness;
    // a sweeper page shares it among its models (ec2/instance-listing.ts).
    const harvesting = harvestsStrays(record.harvestMode);
    let listing: DeploymentListing | undefined;
    let machines: SweptMachine[];
    if (harvesting) {
      // Instances first, then machines: a launch recorded in between is seen as owned.
      // A model swept on its own lists only its own instances.
      listing = listings
        ? await listings.of(record.region)
        : deploymentListing(
            await instancesTaggedAnyState(ec2, { deployment: deps.deployment, model }),
            now(),
          );
      machines = await deps.store.machines(model);
    } else {
      // nothing to harvest: a model with no instance to watch asks EC2 nothing
      machines = await deps.store.machines(model);
      if (listings && watched(machines).length > 0) listing = await listings.of(record.region);
    }
    const observed = new Map<string, InstanceState>();
    const ask: string[] = [];
    for (const m of watched(machines)) {
      const id = m.instanceId!;
      const listed = listing?.states.get(id);
      if (listed === undefined) {
        // missing from the listing (launched after it, or gone), or nothing listed:
        // asked by id, unless a listing already saw it gone
        if (!listing || m.instanceStatus !== 'unknown') ask.push(id);
      } else if (listed !== m.instanceStatus) {
        // A change. The listing may be older than what the machine recorded since
        // (a state-change event): EC2 is asked again by id, so a stale listing never
        // undoes a newer state. Nothing changed, nothing asked.
        ask.push(id);
      } else {
        observed.set(id, listed);
      }
    }
    if (ask.length > 0) {
      for (const [id, state] of await instanceStates(ec2, ask)) observed.set(id, state);
    }
    if (harvesting && listing) {
      strays = selectStrays({
        instances: await strayCandidates(listing, model, record.uid, owners, machines),
        machines,
        now: now(),
        graceMs: deps.tuning.strayGraceMs,
      });
      if (strays.length > 0) {
        await terminateInstances(ec2, strays);
      }
    }
    // `none` and `destroyed` never harvest unknown instances: only the recorded ones are watched
    const reprovisioned = record.reprovisionLost
      ? await reprovisionLost(model, machines, observed)
      : [];
    const changes = instanceChanges(
      machines.filter((m) => !reprovisioned.includes(m.id)),
      observed,
      now(),
    );
    const listedAddresses = listing
      ? addressChanges(watched(machines), listing.tagged(model, record.uid))
      : [];
    // routine news is written here, with the addresses EC2 lists in the same write; the rest
    // (losses, stops, a machine down or dying) is the workflow's to decide
    const written = await recordRoutine(
      model,
      changes.filter((c) => isRoutine(c.state)),
      listedAddresses,
    );
    await signalChanges(
      model,
      changes.filter((c) => !isRoutine(c.state)),
    );
    // written by the caller after reconciling, so restarting a missing workflow never waits on them
    const addresses = listedAddresses.filter((a) => !written.has(a.machineId));
    return { machines, strays, reprovisioned, changes, addresses };
  }

  return {
    /** One model's sweep; the sweeper (activities/sweeper.ts) calls it for each model of a page. */
    async sweepModel(input: { model: string }, listings?: SharedListings): Promise<SweepReport> {
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
      // EC2 first; the workflows are reconciled even when EC2 cannot be asked (an
      // outage, throttling, a slow listing), since starting a missing workflow needs
      // only the table and Temporal. The EC2 failure is reported afterwards.
      let watchedNow: Awaited<ReturnType<typeof watchInstances>> | undefined;
      let ec2Failure: unknown;
      try {
        watchedNow = await watchInstances(model, record, listings);
      } catch (err) {
        ec2Failure = err;
      }
      if (watchedNow === undefined) {
        // reported as the model's failure, with what the reconciliation did or met
        let outcome: string;
        try {
          const restarted = await reconcile(model, await deps.store.machines(model));
          outcome = restarted.length > 0 ? `; workflows started: ${restarted.join(', ')}` : '';
        } catch (err) {
          outcome = `; reconciling workflows failed too: ${errorText(err)}`;
        }
        throw new Error(`${errorText(ec2Failure)}${outcome}`, { cause: ec2Failure });
      }
      const restarted = await reconcile(model, watchedNow.machines);
      await recordAddresses(model, watchedNow.addresses);
      const { strays, reprovisioned, changes } = watchedNow;
      return {
        model,
        modelGone: false,
        harvestMode: record.harvestMode,
        strays,
        terminated: strays,
        restarted,
        instanceChanges: changes.map((c) => `${c.machineId}:${c.instanceId}:${c.state}`),
        lost: changes.filter((c) => isLost(c.state)).map((c) => c.machineId),
        reprovisioned,
      };
    },
  };
}

/** Machines whose instance liveness watches: launched by us, with an instance recorded, not Dead. */
function watched(machines: readonly SweptMachine[]): SweptMachine[] {
  return machines.filter(
    (m) =>
      m.instanceId !== undefined && !m.manual && !isContainerMachineId(m.id) && m.life !== 'dead',
  );
}
