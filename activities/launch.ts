import { ApplicationFailure, Context } from '@temporalio/activity';
import { NoSuitableZoneError, orderZones, PARTITION_COUNT, placementGroupName } from '../core';
import { StaleViewError, ZoneClaimContendedError, type ClaimRequest } from '../state/zone-counts';
import { FAILURE, notRetriedByPolicy } from '../temporal/failures';
import { startingMessage } from '../temporal/messages';
import { LAUNCH_TRY_MS } from '../temporal/launch-try';
import { CapacityMemory } from './capacity-memory';
import { Coalescer } from './coalescer';
import type { ActivityDeps } from './deps';
import { ec2ErrorCode } from '../ec2/errors';
import { findSubnet } from '../ec2/instances';
import { failure, orMachineGone } from './failures';
import { LaunchBatcher, leftOutOfItsBatch, type LaunchRequest } from './launch-batcher';
import { PlacementGroups } from '../ec2/placement-groups';
import { SingleFlight } from './single-flight';
import type { ProvisioningStore } from '../state/provisioning';
import type { MachineRecord, ModelRecord } from '../state/types';
import { buildLaunchPlan, LaunchPlanError, type PlanInputs } from './plan';
import type {
  CreatedPreparation,
  FirstLaunch,
  LaunchPlan,
  MachineRef,
  PlanModel,
  PreparedLaunch,
  StartedInstance,
  StepFailure,
  WorkflowTuning,
} from './types';
import type { MachineView } from '../state/zone-counts';
import { currentRun, recordLaunched } from './records';
import { claimantOf, launchTokenSeed } from '../temporal/launch-token';
import { activityLog } from './log';
import { firstLaunchDeferred } from './metrics';
import { refusedOr } from '../ec2/errors';

/** How long machines alike (model, base, constraints, placement, groups) share one plan. */
export const PLAN_REUSE_MS = 30_000;

/** What a plan is made from, but the catalogue, prices and images (each cached on its own). */
function planKey(
  model: PlanModel,
  machine: MachineRecord,
  zones: ReadonlyArray<{ name: string }>,
): string {
  return JSON.stringify([
    model.name,
    model.region,
    model.uid ?? '',
    model.availabilitySets === true,
    machine.base,
    machine.constraints ?? '',
    machine.placement ?? '',
    [...(machine.applications ?? [])].sort(),
    zones.map((z) => z.name),
  ]);
}

export { findSubnet } from '../ec2/instances';
export { clientToken } from './launch-batcher';

/** What a zone claim is asked with. */
export interface ClaimZoneInput extends MachineRef {
  plan: LaunchPlan;
  /** Zones this machine already failed in during this attempt. */
  exclude: string[];
  /** The attempt, for the `allocating` message written with the claim. */
  attempt?: number;
  maxAttempts?: number;
  /** An explicit retry: the capacity memory is not consulted. */
  ignoreCapacityMemory?: boolean;
}

/** How the claim is made: with the machine as the caller just read it (no read of its own). */
interface ClaimOptions {
  view?: MachineView;
  /** `view` is the creating request's word, not a read (ClaimRequest.strict). */
  strict?: boolean;
}

export interface StartInstanceInput extends MachineRef {
  zone: string;
  plan: LaunchPlan;
  tokenSeed: string;
  /**
   * Record the launched instance on the machine too (status `running`), in
   * this activity rather than a workflow step of its own (`lean-launch`):
   * the answer's `recorded` says it was.
   */
  record?: boolean;
  /**
   * An earlier launch attempt of this pass may have launched (its answer was
   * lost, it timed out): look for that instance before launching again.
   */
  mayHaveLaunched?: boolean;
}

/**
 * How long the worker's zone claims of a model wait for others: a round is the
 * counters' BatchGetItem and one TransactWriteItems per 100 items or fewer
 * (state/zone-claim.ts), so two calls for a round of up to ~50 machines, and a
 * burst's first reads reach it one every 10–30 ms (15 ms idle / 150 ms gave
 * 197 and 176 rounds for 1,000 machines in two loaded runs; these windows 146
 * and 154). A
 * claim that waits 400 ms at most delays its launch by as much, against a launch
 * batch's window of seconds (issue 26).
 */
export const CLAIM_WINDOWS = { idleMs: 50, maxMs: 400, maxSize: 500 } as const;

/**
 * The worker's zone claims: those of a model arriving together are made
 * together, and one batch of a model at a time (concurrent ones would race on
 * the same counters and all but one make their round again).
 */
export function claimCoalescer(
  store: Pick<ProvisioningStore, 'claimZones'>,
): Coalescer<ClaimRequest, string> {
  return new Coalescer<ClaimRequest, string>(
    CLAIM_WINDOWS,
    async (model, requests) => {
      const results = await store.claimZones(model, requests);
      return results.map((r) => (r.ok ? { ok: true, value: r.zone } : r));
    },
    undefined,
    { oneAtATime: { maxWaitMs: 5000 } },
  );
}

/** Planning, zone choice and the launch itself: the only code that starts EC2 instances. */
export function launchActivities(
  deps: ActivityDeps,
  groups: PlacementGroups = new PlacementGroups(deps.ec2ForRegion),
) {
  const { repo, store } = deps;
  const memory = deps.capacityMemory ?? new CapacityMemory(deps.tuning.capacityMemoryMs);
  const claims = claimCoalescer(store);
  const launches = new LaunchBatcher(deps, memory);
  const modelReads = new SingleFlight<ModelRecord>();
  // A plan is cached as its promise from the moment it starts being built, so a burst of
  // machines alike (the cold start of a big request) waits on one build instead of each
  // matching the catalogue itself; a build that fails is dropped, so the next call retries.
  const plans = new Map<
    string,
    { plan: Promise<LaunchPlan>; catalogue: unknown; prices: unknown; at: number }
  >();

  /** Resolves instance type, hardware, image and allowed zones from the machine's current record. */
  async function planFor(
    ref: MachineRef,
    read?: MachineRecord,
    given?: PlanModel,
  ): Promise<LaunchPlan> {
    const recent = read ?? deps.recentReads?.take(ref);
    const [model, machine] = await orMachineGone(
      Promise.all([
        given ?? modelReads.read(ref.model, () => repo.getModel(ref.model)),
        recent ?? repo.getMachine(ref.model, ref.machineId),
      ]),
    );
    const regional = deps.ec2ForRegion(model.region);
    const [catalogue, zones, prices] = await Promise.all([
      regional.catalogue.all(),
      regional.zones.zones(),
      // never throws: an unreadable price list gives no prices (size order)
      deps.prices?.forRegion(model.region),
    ]);
    // Machines of one request share their plan: it is made once (matching the whole
    // catalogue is the costly part) and reused while the catalogue, prices and zones are
    // the same objects, for at most PLAN_REUSE_MS.
    const key = planKey(model, machine, zones);
    const reused = plans.get(key);
    if (
      reused &&
      reused.catalogue === catalogue &&
      reused.prices === prices &&
      Date.now() - reused.at < PLAN_REUSE_MS
    ) {
      // each machine gets a copy of its own: no caller can change another machine's plan
      const plan = await reused.plan;
      return { ...structuredClone(plan), applications: [...(machine.applications ?? [])] };
    }
    const building = buildPlan(model, machine, catalogue, zones, prices, regional);
    const entry = { plan: building, catalogue, prices, at: Date.now() };
    if (plans.size >= 1000) plans.clear();
    plans.set(key, entry);
    try {
      return structuredClone(await building);
    } catch (err) {
      // not cached: a plan error (or a transient lookup failure) is asked afresh next time
      if (plans.get(key) === entry) plans.delete(key);
      throw err;
    }
  }

  async function buildPlan(
    model: PlanModel,
    machine: MachineRecord,
    catalogue: PlanInputs['catalogue'],
    zones: ReadonlyArray<{ name: string }>,
    prices: ReadonlyMap<string, number> | undefined,
    regional: ReturnType<ActivityDeps['ec2ForRegion']>,
  ): Promise<LaunchPlan> {
    try {
      const plan = await buildLaunchPlan({
        model,
        machine,
        catalogue,
        ...(prices ? { prices } : {}),
        zones: zones.map((z) => z.name),
        zonesOffering: (type, names) => regional.catalogue.zonesOffering(type, names),
        findImage: (q) => regional.images.find(q),
        findSubnet: (idOrCidr) => findSubnet(regional.ec2, idOrCidr),
        ...(deps.instanceProfile ? { instanceProfile: deps.instanceProfile } : {}),
      });
      if (!model.uid) return plan;
      // availability-set mode: the group of the machine's application (one per machine in it)
      const [application] = [...plan.applications].sort();
      return {
        ...plan,
        modelUid: model.uid,
        ...(model.availabilitySets && application !== undefined
          ? { placementGroup: placementGroupName(model.uid, application) }
          : {}),
      };
    } catch (err) {
      if (err instanceof LaunchPlanError) throw failure(FAILURE.planFailed, err.message);
      throw err;
    }
  }

  /**
   * Claims the zone to try next, against the machine's distribution group:
   * healthy zones that the plan allows and that offer its type, minus the
   * zones this machine already failed in, least populous first; zones where
   * the type lately lacked capacity come last. Claims arriving together
   * are made together (state/zone-counts.ts). Writes status `allocating`
   * with the zone and attempt in the same update.
   */
  async function claim(input: ClaimZoneInput, options: ClaimOptions = {}): Promise<string> {
    const { plan } = input;
    const regional = deps.ec2ForRegion(plan.region);
    const zones = await regional.zones.zones();
    const offering = new Set(
      await regional.catalogue.zonesOffering(
        plan.instanceType,
        zones.map((z) => z.name),
      ),
    );
    const candidates = zones.filter((z) => offering.has(z.name));
    const short = input.ignoreCapacityMemory
      ? []
      : memory.short(
          plan.region,
          plan.instanceType,
          candidates.map((z) => z.name),
        );
    const choice = (population: Record<string, number>, avoid: readonly string[]) =>
      orderZones({
        machineId: input.machineId,
        zones: candidates,
        population,
        failedZones: [...input.exclude, ...avoid],
        zonesConstraint: plan.zonesConstraint,
        ...(plan.placementZone !== undefined ? { placementZone: plan.placementZone } : {}),
      });
    const attempt = input.attempt;
    const maxAttempts = input.maxAttempts;
    const run = currentRun();
    const claimedBy = run && attempt !== undefined ? claimantOf(run, attempt) : undefined;
    try {
      return await orMachineGone(
        claims.submit(input.model, {
          machineId: input.machineId,
          groups: plan.applications,
          ...(plan.placementGroup !== undefined ? { partitions: PARTITION_COUNT } : {}),
          ...(options.view ? { view: options.view } : {}),
          ...(options.strict ? { strict: true } : {}),
          ...(claimedBy !== undefined ? { claimedBy, exclude: input.exclude } : {}),
          order: (population) => {
            if (short.length === 0) return choice(population, []);
            try {
              return choice(population, short);
            } catch (err) {
              // every zone left lately lacked capacity: try them anyway
              if (err instanceof NoSuitableZoneError) return choice(population, []);
              throw err;
            }
          },
          ...(attempt !== undefined && maxAttempts !== undefined
            ? {
                status: {
                  status: 'allocating',
                  message: (zone: string) => startingMessage(zone, attempt, maxAttempts),
                },
              }
            : {}),
        }),
      );
    } catch (err) {
      if (err instanceof NoSuitableZoneError) throw failure(FAILURE.noSuitableZone, err.message);
      // lost the race too often: the workflow spends an attempt and tries again later; a
      // claim from a creation's word is not a pass's attempt: its step is retried whole
      if (err instanceof ZoneClaimContendedError && !options.strict) {
        throw failure(FAILURE.startFailed, err.message);
      }
      throw err;
    }
  }

  /**
   * A machine's first provisioning steps, for `loadMachine` asked to prepare
   * (records.ts): its plan, from the machine just read, then its zone for
   * attempt 1, claimed with that read's view (no read of its own). A failure
   * the workflow branches on is answered as data (`planFailure`,
   * `claimFailure`); anything else throws and the step is tried again whole
   * (a second claim of the machine moves it, counted once).
   *
   * With `created` (the machine and model as the creating request wrote
   * them, not read), nothing is recorded from that word but a clean plan and
   * claim: a claim its condition refused (StaleViewError: the machine is no
   * longer as created), and a failure the workflow would record on the
   * machine, answer 'stale', and the caller reads the machine and prepares
   * from the read. Anything else (throttling, a timeout, a claim contended
   * too often) throws like the read path's: the step's retry tries the
   * creation's word again, and finds it stale by itself if the first claim
   * landed (the machine is then `allocating`).
   *
   * With `held` (a zone this very run claimed and marked a launch in, in a
   * workflow task that was lost: records.ts `zoneMarkedByThisRun`), the
   * zone is that one and nothing is claimed: the launch that follows is the
   * lost task's own (same token seed), which finds its batch.
   */
  async function prepareLaunch(
    ref: MachineRef,
    machine: MachineRecord,
    view: MachineView,
    tuning: WorkflowTuning,
    created?: CreatedPreparation,
    held?: string,
  ): Promise<PreparedLaunch | 'stale'> {
    let plan: LaunchPlan;
    try {
      plan = await planFor(ref, machine, created?.model);
    } catch (err) {
      const failed = stepFailure(err, PLAN_FAILURES);
      // a failure the pass records on the machine: recorded from the machine as read, not
      // from a creation's word
      if (failed) return created ? 'stale' : { planFailure: failed };
      throw err;
    }
    if (held !== undefined) return { plan, zone: held, launchInTask: true };
    try {
      const zone = await claim(
        { ...ref, plan, exclude: [], attempt: 1, maxAttempts: tuning.startAttempts },
        { view, ...(created ? { strict: true } : {}) },
      );
      return { plan, zone, launchInTask: true };
    } catch (err) {
      // the machine is not as its creation wrote it: nothing claimed, read it
      if (created && err instanceof StaleViewError) return 'stale';
      const failed = stepFailure(err, CLAIM_FAILURES);
      if (failed) return created ? 'stale' : { plan, claimFailure: failed };
      throw err;
    }
  }

  /**
   * The launch that follows a first read's claim, made in the same step when
   * the workflow asked for it (`first`: LAUNCH_IN_READ, workflows/patches.ts):
   * the token seed is the one the workflow would make (its run, the pass and
   * attempt it passed, the zone claimed or held), so a first read run again
   * (its workflow task lost) makes the same launch, which finds the lost one's
   * batch; the instance is recorded on the machine (`record`, LEAN_LAUNCH).
   *
   * A cancellation (a destroy, workflows/machine.ts loadPrepared) that comes
   * before the launch began answers at once, nothing launched; once begun,
   * the launch is not raced: while its batch still gathers it is withdrawn
   * and answered cancelled at once (the batch leaves it out: the try's
   * signal); once the batch is being marked, the step waits for it, and
   * answers cancelled if the batch left it out, else the instance, which the
   * workflow, waiting for that answer, tears down.
   *
   * A failure the launch step would not retry (a non-retryable type) is
   * answered as data (`launchFailure`), handled by the workflow as that
   * step's failure. Any other first asks `recover` once (this attempt's
   * batch, same seed): a batch that went out but whose answer was lost gives
   * its instance, answered `launched` and recorded, so a destroy that cancels
   * the step still finds it. Else the answer has no `launched`, and the
   * workflow launches in a step of its own (same token seed: the batch marks
   * and EC2's idempotency find an instance this try may have launched).
   *
   * The launch holds the run's first workflow task no longer than its budget
   * (FIRST_TASK_LAUNCH_BUDGET_MS, counted from when the workflow scheduled the
   * step: `budgetStart`) while its batch has not been dispatched: a try still
   * gathering or waiting at the gate by then is withdrawn from its batch
   * (LaunchRequest `withdrawBy`), and the answer has no `launched` and
   * `launchInTask: false`, so the workflow launches in an activity
   * (workflows/patches.ts LAUNCH_OUT_OF_TASK). The budget does not bound a
   * batch dispatched by then (being marked, committed or sent: waited for,
   * the try one of its members), a retry's `recover` before it batches, nor
   * the wait for another launch of the machine under way in this worker.
   */
  async function launchPrepared(
    ref: MachineRef,
    prepared: PreparedLaunch,
    first: FirstLaunch,
    startedAt: number,
  ): Promise<PreparedLaunch> {
    const run = currentRun();
    const { zone, plan } = prepared;
    if (!run || zone === undefined || plan === undefined || !prepared.launchInTask) {
      return prepared;
    }
    const context = Context.current();
    // cancelled before the launch: answered as cancelled, nothing launched
    if (context.cancellationSignal.aborted) await context.cancelled;
    const input: StartInstanceInput = {
      ...ref,
      zone,
      plan,
      tokenSeed: launchTokenSeed(run, first.pass, first.attempt, zone),
      record: true,
    };
    const budgetMs = deps.tuning.firstLaunchBudgetMs ?? FIRST_TASK_LAUNCH_BUDGET_MS;
    const leftMs = budgetStart(startedAt) + budgetMs - Date.now();
    // the wait for the step, the read, planning and the claim took the whole budget: the launch
    // is the workflow's activity's
    if (leftMs <= 0) return deferred(ref, prepared, budgetMs, 'before the launch');
    const ends = new AbortController();
    const timer = deps.firstLaunchBudget ? undefined : setTimeout(() => ends.abort(), leftMs);
    const budget = deps.firstLaunchBudget?.(leftMs) ?? ends.signal;
    try {
      const started = await launch(input, startedAt, budget);
      return { ...prepared, launched: await recorded(input, started) };
    } catch (err) {
      const failed = notRetried(refusedOr(err));
      if (failed) return { ...prepared, launchFailure: failed };
      // the budget withdrew the try before its batch was dispatched: it marked nothing (withdrawn
      // while gathering or at the gate, not marked at dispatch, or given up waiting for another
      // batch of the attempt), so `recover` would find nothing of this try; the workflow's launch
      // activity, same token seed, looks anyway (and settles another batch's marker), so the read
      // spares the reads and the replay. A destroy is not the budget: it keeps the path below
      if (budget.aborted && !context.cancellationSignal.aborted && leftOutOfItsBatch(err)) {
        return deferred(ref, prepared, budgetMs, 'withdrawn from its batch');
      }
      // a failure the launch step would retry: this try's batch may have gone out and only its
      // answer was lost. Asked once here (the batch's call repeated with its token: no new
      // instance), so the instance is answered and recorded even when a destroy cancelled the
      // step (the workflow then keeps only an answer that carries it) and no launch step follows
      const found = await recoverOnce(input);
      if (found !== undefined) {
        return 'instanceId' in found
          ? { ...prepared, launched: await recorded(input, found) }
          : { ...prepared, launchFailure: found };
      }
      // a destroy cancelled the step and nothing of this try went out (its batch left it out,
      // answered at once if the batch was still gathering): answered as cancelled, as before
      // the launch; the workflow launches nothing after a destroy
      if (context.cancellationSignal.aborted) await context.cancelled;
      activityLog.warn('launch with the first read failed; the workflow launches on its own', {
        model: ref.model,
        machineId: ref.machineId,
        zone,
        error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      });
      return prepared;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * When the first read's launch budget began: when the workflow scheduled the
   * step (a local activity's schedule time, which the SDK's core sets just
   * after the workflow task started and keeps for its retries), so the budget
   * counts the wait for the step to run on a starved worker, the read, the
   * plan and claim (a `'stale'` first preparation too), and a retry of the step
   * has only what its first try left. `startedAt` (the step's start) when it
   * is not a local activity or the time is unknown.
   */
  function budgetStart(startedAt: number): number {
    const { isLocal, scheduledTimestampMs } = Context.current().info;
    return isLocal && scheduledTimestampMs > 0
      ? Math.min(startedAt, scheduledTimestampMs)
      : startedAt;
  }

  /**
   * The first read's answer without its launch, which the workflow then runs
   * as an activity of its own (`launchInTask: false`: workflows/patches.ts
   * LAUNCH_OUT_OF_TASK), so the first workflow task is not held past the
   * budget. Logged at debug only: under load it is one line per machine.
   */
  function deferred(
    ref: MachineRef,
    prepared: PreparedLaunch,
    budgetMs: number,
    when: string,
  ): PreparedLaunch {
    firstLaunchDeferred();
    activityLog.debug('first read left its launch to an activity: its budget ran out', {
      model: ref.model,
      machineId: ref.machineId,
      zone: prepared.zone,
      budgetMs,
      when,
    });
    return { ...prepared, launchInTask: false };
  }

  return {
    /**
     * Not an activity: the step `loadMachine` runs with `prepare` (activities/index.ts):
     * plans and claims (answering a cancellation at once), then, asked `first`, launches.
     */
    prepareLaunch: async (
      ref: MachineRef,
      machine: MachineRecord,
      view: MachineView,
      tuning: WorkflowTuning,
      created?: CreatedPreparation,
      held?: string,
      first?: FirstLaunch,
    ): Promise<PreparedLaunch | 'stale'> => {
      const startedAt = Date.now();
      const prepared = await untilCancelled(() =>
        prepareLaunch(ref, machine, view, tuning, created, held),
      );
      if (prepared === 'stale' || first === undefined) return prepared;
      return launchPrepared(ref, prepared, first, startedAt);
    },

    /** Resolves instance type, hardware, image and allowed zones from the machine's current record. */
    async planLaunch(ref: MachineRef): Promise<LaunchPlan> {
      // a destroy cancels planning: give up at once, whatever EC2 call is under way
      return untilCancelled(() => planFor(ref));
    },

    /**
     * Claims the zone to try next, against the machine's distribution group
     * (`claim` below). Writes status `allocating` with the zone and attempt
     * in the same update.
     */
    claimZone(input: ClaimZoneInput): Promise<string> {
      return claim(input);
    },

    /**
     * Launches the machine's instance in one zone, in a batch with the
     * launches of the same spec arriving at the same time (launch-batcher.ts).
     * A retried attempt, or one after an attempt that may have launched,
     * first finds what its earlier batch launched, so a lost answer never
     * becomes a second instance.
     */
    async startInstance(input: StartInstanceInput): Promise<StartedInstance> {
      const started = await heartbeating(() => launch(input), LAUNCH_HEARTBEAT_EVERY_MS);
      return input.record ? recorded(input, started) : started;
    },
  };

  /**
   * What a first read's failed launch try left: the instance its batch
   * launched for the machine (same token seed: `recover`, this attempt's
   * batch only), a failure the launch step would not retry (e.g. EC2 left the
   * member unserved), or undefined (nothing went out, or the repeat failed
   * retryably too: the workflow's launch step, same seed, looks again).
   */
  async function recoverOnce(
    input: StartInstanceInput,
  ): Promise<StartedInstance | StepFailure | undefined> {
    try {
      return (await launches.recover(input, { sameAttemptOnly: true })).started;
    } catch (err) {
      return notRetried(refusedOr(err));
    }
  }

  /**
   * The launch answered, recorded on its machine when the workflow asked
   * for that (`record`). A record that fails is not the launch's failure (a
   * retry of the activity would only find the same instance): the answer
   * then says nothing was recorded, and the workflow records it in a step
   * of its own, which terminates the instance if that fails too.
   */
  async function recorded(
    input: StartInstanceInput,
    started: StartedInstance,
  ): Promise<StartedInstance> {
    try {
      const life = await recordLaunched(deps, { ...input, started });
      return { ...started, recorded: life };
    } catch (err) {
      activityLog.warn('launched instance not recorded by the launch; the workflow records it', {
        model: input.model,
        machineId: input.machineId,
        instanceId: started.instanceId,
        error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      });
      return started;
    }
  }

  /**
   * One launch: found again if an earlier try (or attempt) may have made it, else batched.
   * `startedAt`: when this try began, if before this call (a launch made by a first read);
   * `budget`: aborted, the try gives its batch up if that batch has not been dispatched yet (a
   * first read's: LaunchRequest `withdrawBy`).
   */
  async function launch(
    input: StartInstanceInput,
    startedAt?: number,
    budget?: AbortSignal,
  ): Promise<StartedInstance> {
    const retried = activityAttempt() > 1;
    const tryState = thisTry(startedAt);
    let replaces: string | undefined;
    if (retried || input.mayHaveLaunched) {
      const found = await launches.recover(input, {
        sameAttemptOnly: !input.mayHaveLaunched,
      });
      if (found.started) return found.started;
      replaces = found.settled;
    }
    const group = input.plan.placementGroup;
    let partition: number | undefined;
    if (group !== undefined) {
      // the partition was assigned with the zone claim
      const counted = await store.countedPlacement(input.model, input.machineId);
      if (counted.zone === input.zone) partition = counted.partition;
    }
    const request: LaunchRequest = {
      model: input.model,
      machineId: input.machineId,
      zone: input.zone,
      plan: input.plan,
      tokenSeed: input.tokenSeed,
      ...(partition !== undefined ? { partition } : {}),
      ...(replaces !== undefined ? { replaces } : {}),
      ...tryState,
      ...(budget ? { withdrawBy: budget } : {}),
    };
    if (group === undefined) return launches.launch(request);
    await groups.ensure(input.plan.region, group);
    try {
      return await launches.launch(request);
    } catch (err) {
      // deleted meanwhile (its last machine went): the next attempt creates it again
      if (launchErrorCode(err) === 'InvalidPlacementGroup.Unknown') {
        groups.forget(input.plan.region, group);
      }
      throw err;
    }
  }
}

/**
 * Heartbeats while the work waits (for its batch, EC2's rate limits, the
 * answer), so a worker that dies is noticed within the heartbeat timeout and
 * the retried launch finds what its batch launched. Each heartbeat that
 * reaches Temporal is a billed action, so none is sent at the start: the
 * first after HEARTBEAT_EVERY_MS (well inside the shortest heartbeat timeout
 * given, 15 s); most launches are answered before it. Later calls are
 * throttled by the SDK to one per 0.8 × the heartbeat timeout (every 12 s
 * for a 15 s timeout, 24 s for 30 s), so fewer reach Temporal than are made.
 */
export async function heartbeating<T>(
  work: () => Promise<T>,
  everyMs: number = HEARTBEAT_EVERY_MS,
): Promise<T> {
  let context: Context | undefined;
  try {
    context = Context.current();
  } catch {
    return work();
  }
  // a local activity cannot heartbeat: its workflow task is what Temporal watches
  if (context.info.isLocal) return work();
  const active = context;
  const timer = setInterval(() => active.heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * How long a machine's first read may hold the launch it makes (LAUNCH_IN_READ)
 * in the first workflow task before its batch is dispatched, unless
 * PROVISIONER_FIRST_LAUNCH_BUDGET says otherwise; counted from when the
 * workflow scheduled the read (just after the task started; a retry of the
 * read keeps that time), so the wait for a starved worker, the read, the plan
 * and the claim are in it. The SDK's core keeps that task alive with a
 * heartbeat at 80 % of its 20 s timeout (16 s), sent from the worker's one
 * activation poll; when a first task holds its launch past that and the
 * heartbeat comes late, the server times the task out, a 20 s stall and the
 * task run again. A launch whose batch has not been dispatched by then is
 * withdrawn and left to an activity (LAUNCH_OUT_OF_TASK). Not bounded: the
 * wait for a batch already dispatched (its RunInstances turn and EC2's
 * answer) and a retried read's `recover`; so the task usually, not always,
 * ends before 16 s. 12 s, not 10: two workers' batches of one zone take
 * turns (key spacing, up to twice the batch window), and with 10 s a fifth of
 * a quiet two-worker burst's launches went to activities (1,000 machines:
 * 39.6 s, 30 RunInstances, 15.7 ms a machine); with 12 s none did (32.8 s,
 * 26, 13.0 ms; with 15 s 27.1 s, 24, 11.6 ms: too near the heartbeat).
 */
export const FIRST_TASK_LAUNCH_BUDGET_MS = 12_000;

/** How often a waiting activity heartbeats, the first time included. */
export const HEARTBEAT_EVERY_MS = 5_000;

/**
 * How often a waiting launch heartbeats, the first time included. Its
 * heartbeat timeout (workflows/proxies.ts LAUNCH_OPTIONS) is 60 s: a launch
 * waits up to its batch window (PROVISIONER_LAUNCH_BATCH_MAX, 5 s), the
 * region's RunInstances bucket (a token per batch: 2 a second after a burst
 * of 5) and EC2's answer, a few seconds, and on a worker whose event loop is
 * busy with hundreds of machines its timers run late by seconds more (15 s
 * was exceeded at N = 300 under load: issue 26's duplicate). A heartbeat at
 * 10 s and the SDK's throttle to one per 48 s keep a wait of up to ~50 s of
 * lateness inside the timeout, with at most one heartbeat (a billed action)
 * for most launches that wait at all, and none for those answered within 10 s.
 */
export const LAUNCH_HEARTBEAT_EVERY_MS = 10_000;

/**
 * The part of a launch try's time a try counts as its own (7/8: 105 s of 2
 * minutes): the activity started, for Temporal, a little before this code ran.
 */
const TRY_DEADLINE_SHARE = 7 / 8;

/**
 * This try's end, for its batch: the activity's cancellation (a heartbeat
 * Temporal refuses because the try timed out cancels it) and 7/8 of its
 * time: its start-to-close, or for a local launch (whose start-to-close spans
 * its retries) a launch try's time (LAUNCH_TRY_MS), never past 7/8 of a try
 * before its step's schedule-to-close. A batch leaves out a try that is over, so a try
 * Temporal already retried (on this worker or another) never launches late.
 */
export function thisTry(startedAt?: number): { signal?: AbortSignal; liveUntil?: number } {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return {};
  }
  const { startToCloseTimeoutMs, currentAttemptScheduledTimestampMs: scheduled } = context.info;
  // counted from when Temporal scheduled this try (a lower bound on its start), not from when
  // this code runs: on a starved worker the task may have waited long before it got here. Not
  // for a local activity: the SDK's core gives each of its retries the first try's schedule
  // time, so a retry after a slow first try would count as over on arrival; its worker runs
  // it at once, so its start is now.
  // (`startedAt`, given: the step began before the launch, a first read that launches)
  const start =
    scheduled > 0 && !context.info.isLocal
      ? Math.min(scheduled, Date.now())
      : Math.min(startedAt ?? Date.now(), Date.now());
  // a local launch's start-to-close spans all its retries (workflows/proxies.ts
  // LOCAL_LAUNCH_OPTIONS, against the SDK core's stray timers): a try of it still gets a launch
  // try's time in its batch, as when that was its start-to-close
  const tryMs = context.info.isLocal
    ? Math.min(startToCloseTimeoutMs, LAUNCH_TRY_MS)
    : startToCloseTimeoutMs;
  if (!(tryMs > 0)) return { signal: context.cancellationSignal };
  let liveUntil = start + tryMs * TRY_DEADLINE_SHARE;
  // and never past the step's own end, less the same share of a try for the call to answer: a
  // late try of a local launch (its step's 211 s counted from the first try's schedule) would
  // otherwise commit its batch after the step had ended "Activity timed out"
  const { scheduledTimestampMs, scheduleToCloseTimeoutMs } = context.info;
  if (context.info.isLocal && scheduledTimestampMs > 0 && scheduleToCloseTimeoutMs > 0) {
    liveUntil = Math.min(
      liveUntil,
      scheduledTimestampMs + scheduleToCloseTimeoutMs - tryMs * (1 - TRY_DEADLINE_SHARE),
    );
  }
  return { signal: context.cancellationSignal, liveUntil };
}

/** The EC2 code of a launch failure (classified or not). */
function launchErrorCode(err: unknown): string | undefined {
  const details = (err as { details?: unknown } | undefined)?.details;
  if (Array.isArray(details)) {
    const code = (details[0] as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string') return code;
  }
  return ec2ErrorCode(err);
}

/**
 * Runs the work, but answers a cancellation of the activity at once (a local
 * activity holds its workflow's task until it returns, cancelled or not).
 * The work itself runs on; what it does needs no undoing.
 */
async function untilCancelled<T>(work: () => Promise<T>): Promise<T> {
  let context: Context | undefined;
  try {
    context = Context.current();
  } catch {
    return work();
  }
  const running = work();
  const cancelled = context.cancelled;
  // neither promise may reject unobserved
  running.catch(() => undefined);
  cancelled.catch(() => undefined);
  return Promise.race([running, cancelled]);
}

/** The activity's attempt number (1 outside an activity, e.g. in unit tests). */
function activityAttempt(): number {
  try {
    return Context.current().info.attempt;
  } catch {
    return 1;
  }
}

/** A failure the workflow branches on after this step, as data; undefined for the rest. */
function stepFailure(err: unknown, branched: readonly string[]): StepFailure | undefined {
  const classified = refusedOr(err);
  const type = (classified as { type?: unknown } | undefined)?.type;
  if (classified instanceof Error && typeof type === 'string' && branched.includes(type)) {
    return { type, message: classified.message };
  }
  return undefined;
}

/**
 * A launch failure of a type that the launch step's retry policy would not
 * retry (temporal/failures.ts notRetriedByPolicy), as data; undefined for
 * the rest.
 */
function notRetried(err: unknown): StepFailure | undefined {
  if (
    !(err instanceof ApplicationFailure) ||
    !notRetriedByPolicy(err) ||
    typeof err.type !== 'string'
  )
    return undefined;
  return { type: err.type, message: err.message };
}

/** What the workflow does something particular for after planning (workflows/launch.ts runPass)… */
const PLAN_FAILURES: readonly string[] = [
  FAILURE.planFailed,
  FAILURE.ec2Refused,
  FAILURE.machineGone,
];
/** …and after a zone claim. */
const CLAIM_FAILURES: readonly string[] = [
  FAILURE.ec2Refused,
  FAILURE.noSuitableZone,
  FAILURE.startFailed,
  FAILURE.machineGone,
];
