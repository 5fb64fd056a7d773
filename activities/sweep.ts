import { instanceChanges, isLost, type InstanceChange } from '../core';
import { harvestsStrays } from '../core/harvest';
import { addressChanges, type AddressChange } from '../ec2/addresses';
import {
  deploymentListing,
  type DeploymentListing,
  type SharedListings,
} from '../ec2/instance-listing';
import { instancesTaggedAnyState } from '../ec2/tags';
import { EntityNotFoundError } from '../state/errors';
import type { ActivityDeps } from './deps';
import { InstanceOwners } from './instance-owners';
import { recordAddresses } from './sweep-addresses';
import { observeInstances, tellChanges } from './sweep-liveness';
import { watchedMachines, type SweptMachine } from './sweep-predicates';
import { reconcileWorkflows } from './sweep-reconcile';
import { reprovisionLost } from './sweep-reprovision';
import { errorText } from './sweep-signals';
import { harvestStrays } from './sweep-strays';
import type { SweepReport } from './types';

/**
 * The per-model sweep, assembled from one file per policy: the liveness watch
 * (sweep-liveness.ts), strays (sweep-strays.ts), reprovisioning
 * (sweep-reprovision.ts), reconciliation of the machine workflows
 * (sweep-reconcile.ts) and the address writes (sweep-addresses.ts); their
 * pure choices are in sweep-predicates.ts. The activity's name and signature
 * are unchanged: running sweeper workflows call it.
 */

export { harvestsStrays } from '../core/harvest';
export { inLanes } from './lanes';
export { ADDRESS_WRITES_PER_SWEEP } from './sweep-addresses';
export {
  instancesToAsk,
  selectReprovisions,
  selectStrays,
  watchedMachines,
  type SweptInstance,
  type SweptMachine,
} from './sweep-predicates';

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

export function sweepActivities(deps: ActivityDeps, given?: InstanceOwners) {
  const now = deps.now ?? Date.now;
  const owners = given ?? new InstanceOwners(deps.store.batches);

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
      if (listings && watchedMachines(machines).length > 0) {
        listing = await listings.of(record.region);
      }
    }
    const observed = await observeInstances(ec2, machines, listing);
    if (harvesting && listing) {
      strays = await harvestStrays(deps, ec2, {
        listing,
        model,
        modelUid: record.uid,
        owners,
        machines,
      });
    }
    // `none` and `destroyed` never harvest unknown instances: only the recorded ones are watched
    const reprovisioned = record.reprovisionLost
      ? await reprovisionLost(deps, model, machines, observed)
      : [];
    const changes = instanceChanges(
      machines.filter((m) => !reprovisioned.includes(m.id)),
      observed,
      now(),
    );
    const listedAddresses = listing
      ? addressChanges(watchedMachines(machines), listing.tagged(model, record.uid))
      : [];
    const written = await tellChanges(deps, model, changes, listedAddresses);
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
          const restarted = await reconcileWorkflows(
            deps,
            model,
            await deps.store.machines(model),
            record,
          );
          outcome = restarted.length > 0 ? `; workflows started: ${restarted.join(', ')}` : '';
        } catch (err) {
          outcome = `; reconciling workflows failed too: ${errorText(err)}`;
        }
        throw new Error(`${errorText(ec2Failure)}${outcome}`, { cause: ec2Failure });
      }
      const restarted = await reconcileWorkflows(deps, model, watchedNow.machines, record);
      await recordAddresses(deps, model, watchedNow.addresses);
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
