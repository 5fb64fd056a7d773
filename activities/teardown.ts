import { Context } from '@temporalio/activity';
import { batches as chunks, observedState } from '../core/liveness';
import { EntityNotFoundError } from '../state/errors';
import { MachineDeadError } from '../state/provisioning';
import { teardownStatusMessage } from '../temporal/messages';
import { machineOfWorkflowId } from '../temporal/search-attributes';
import { Coalescer, type Settled } from './coalescer';
import type { ActivityDeps } from './deps';
import { terminateInstances, type Ec2Client as EC2Client } from '../ec2/instances';
import { classifyError, ec2ErrorCode } from '../ec2/errors';
import { InstanceOwners } from './instance-owners';
import { heartbeating } from './launch';
import { instanceStates, liveInstancesTagged, MAX_FILTER_VALUES } from '../ec2/tags';
import { TokenBucket } from '../ec2/token-bucket';
import { asCaller } from '../ec2/caller';
import type { ProvisioningTuning } from '../config/env';
import { teardownPacing, type TEARDOWN_PACING } from '../ec2/pacing';
import type { MachineRecord } from '../state/types';
import type { MachineRef } from './types';
import { activityLog } from './log';
import { machineRemoval } from './records';

/**
 * One line per batched teardown call (issue 30, where a destroy's time goes):
 * its kind, how many machines and ids it carried, when it was sent (epoch ms)
 * and how long EC2 took to answer. Tens of lines for a 1,000-machine destroy.
 */
function traceBatch(kind: string, fields: Record<string, unknown>): void {
  activityLog.info('teardown batch', { kind, ...fields });
}

/** EC2 takes up to this many ids in one TerminateInstances (a describe's filter takes 200: MAX_FILTER_VALUES). */
export const MAX_IDS_PER_CALL = 1000;

/** Coalescing windows: a few seconds at most, since one machine's teardown waits on each. */
const WINDOWS = {
  /**
   * Tag searches of one model: one at a time, every machine that asked meanwhile in the
   * next. Machines ask as their first workflow tasks run, spread over the teardown: at
   * 1 s / 5 s, 300 machines' teardown made 10 searches of 31 calls (teardown-scale, by
   * caller). A machine with an instance waits for terminated longer than this anyway.
   */
  search: { idleMs: 2_000, maxMs: 10_000, maxSize: 100_000 },
  // machines' terminations come spread over the worker's queue: a window of seconds gathers
  // them (PROVISIONER_TEARDOWN_BATCH_IDLE, _MAX). 3 s / 15 s when the calls were 0.1 a machine;
  // at 0.017 a machine (N=1,000) the 15 s held every machine's termination back that long
  terminate: { idleMs: 1_000, maxMs: 5_000, maxSize: MAX_IDS_PER_CALL },
  describe: { idleMs: 500, maxMs: 2_000, maxSize: 100_000 },
} as const;

/** A call that hangs holds the next batch of its key back no longer than this. */
const ONE_AT_A_TIME = { oneAtATime: { maxWaitMs: 30_000 } };

/**
 * A wait for terminated instances (issue 30): EC2 keeps an instance
 * `shutting-down` for some seconds, so a machine's first poll comes this
 * long after it asked for termination, and each later one 1.5 times as long
 * after the one before (up to TERMINATED_POLL_MAX_MS). Every wait of a region
 * is answered by the region's one poller: at most one round of describes
 * (200 ids each) every TERMINATED_ROUND_MS, asking for every machine that is
 * due then or before the next round. At 3 s a machine and one describe batch
 * per machine's own cycle, 300 machines' polls made 30-38 describes; with
 * rounds 5 s apart, ~20 in a teardown of 100 s (terminations keep arriving,
 * so some machine is always waiting).
 */
export const TERMINATED_POLL_MS = 5_000;
/** The region's describe rounds for waits are at least this far apart. */
export const TERMINATED_ROUND_MS = 10_000;
/** The longest a machine's wait goes between two polls. */
export const TERMINATED_POLL_MAX_MS = 20_000;

/**
 * A one-step teardown's wait for terminated ends this long before its
 * activity's deadline: a poller round (TERMINATED_ROUND_MS), its describe and
 * the answer fit in it.
 */
export const WAIT_DEADLINE_MARGIN_MS = 45_000;

/** Instance ids known terminated, kept per region so a poll about them asks EC2 nothing. */
const KNOWN_GONE_MAX = 200_000;

interface SearchRequest extends MachineRef {
  region: string;
  modelUid?: string;
}

/** A Dead machine's teardown in one activity (`tearDownMachine`). */
export interface MachineTeardown extends MachineRef {
  region: string;
  modelUid?: string;
  /** The instances the machine knows: recorded, or launched by this run. */
  known: string[];
  /** Those launched by this run (EC2 may not list them yet). */
  fresh: string[];
  /** Whether its instances are terminated (its harvest mode); else they are kept. */
  terminate: boolean;
  /** The harvest mode, named in the status when its instances are kept. */
  harvestMode: string;
  /** How long to wait for EC2 to report them terminated. */
  waitMs: number;
  /**
   * Remove the machine (and its model, if dying and now empty) once every
   * instance is seen terminated (REMOVED_IN_TEARDOWN). Not for a machine
   * whose removal may delete a placement group: its workflow removes it.
   */
  remove?: boolean;
}

/** What `tearDownMachine` did: every instance it terminated, and those not terminated yet. */
export interface MachineTornDown {
  instanceIds: string[];
  remaining: string[];
  /**
   * Present when this activity removed the machine (asked to, and nothing
   * remained): whether its model went with it. Absent, the workflow removes it.
   */
  removed?: { modelRemoved: boolean };
}

/** A write about a machine that is gone (or no longer Dead-writable) is not needed. */
async function unlessGone(work: Promise<unknown>): Promise<void> {
  try {
    await work;
  } catch (err) {
    if (err instanceof EntityNotFoundError || err instanceof MachineDeadError) return;
    throw err;
  }
}

interface TerminateRequest {
  instanceIds: string[];
  fresh: readonly string[];
  /** The machine whose workflow asks (its record says when its instance was recorded). */
  caller?: MachineRef;
}

/** The machine whose workflow runs the calling activity, or undefined outside one. */
function callingMachine(): MachineRef | undefined {
  try {
    const workflowId = Context.current().info.workflowExecution?.workflowId;
    return workflowId === undefined ? undefined : machineOfWorkflowId(workflowId);
  } catch {
    return undefined;
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The calling activity's cancellation, or undefined outside one. */
function cancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

/**
 * `work`, unless the calling activity is cancelled first (its workflow
 * cancelled, or the activity timed out): the activity then ends at once with
 * the cancellation instead of waiting for its batch, its bucket's token or
 * the region's poller. A request already in a batch still goes out with it
 * (terminating a Dead machine's instance is never wrong); a wait for
 * terminated is taken off the poller (`notTerminated`).
 */
function orCancelled<T>(work: () => Promise<T>): Promise<T> {
  const signal = cancellation();
  const p = work();
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(asError(err));
      },
    );
  });
}

/** Why a termination is retried: EC2 does not know an instance launched moments ago. */
export function notListedYetMessage(instanceId: string): string {
  return `instance ${instanceId} was just launched and EC2 does not list it yet; retrying`;
}

/**
 * How much of the calling activity's start-to-close timeout (and its
 * schedule-to-close, when set) is left for a wait for terminated, keeping
 * WAIT_DEADLINE_MARGIN_MS for the poller's round and the answer; unbounded
 * outside an activity.
 */
function waitBudgetMs(startedAt: number): number {
  let info;
  try {
    info = Context.current().info;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
  const deadlines: number[] = [];
  if (info.startToCloseTimeoutMs > 0) deadlines.push(startedAt + info.startToCloseTimeoutMs);
  if (info.scheduleToCloseTimeoutMs > 0) {
    deadlines.push(info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs);
  }
  if (deadlines.length === 0) return Number.POSITIVE_INFINITY;
  return Math.min(...deadlines) - WAIT_DEADLINE_MARGIN_MS - Date.now();
}

/** The ids named in an EC2 message ("The instance IDs 'i-1, i-2' do not exist"). */
export function idsNamedIn(message: string): string[] {
  return [...message.matchAll(/\bi-[0-9a-f]+\b/g)].map((m) => m[0]);
}

/** What one TerminateInstances send did to an id: asked to terminate, unknown to EC2, or refused. */
export type TerminateOutcome = 'missing' | { error: unknown } | undefined;

/** A refusal of a whole send that is not EC2's fault: what it says about the ids it was sent. */
interface Refusal {
  err: unknown;
  code: string | undefined;
  notFound: boolean;
  /** The ids of the send the refusal names. */
  named: Set<string>;
}

/** An HTTP 4xx from EC2 (the SDK's `$fault: 'client'` or the status it carries). */
function clientFault(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { $fault?: unknown; $metadata?: { httpStatusCode?: unknown } };
  const status = e.$metadata?.httpStatusCode;
  return e.$fault === 'client' || (typeof status === 'number' && status >= 400 && status < 500);
}

/**
 * What one TerminateInstances of many ids did to each id: undefined (asked
 * to terminate), 'missing' (EC2 does not know it), or the error it alone
 * failed with. EC2 refuses a whole call for one id (unknown, malformed,
 * protected from termination): an `InvalidInstanceID.*` or other 4xx that
 * names ids of the call fails just those ids, and the rest are asked again.
 * A refusal that names none is split in halves, so a failure ends on the
 * machines it belongs to in a few calls; when both halves are refused the
 * same way it is not about any one id (UnauthorizedOperation) and every id
 * gets it, in 3 calls rather than one per id. A fault of EC2 (throttling, a
 * 5xx, the network) fails the whole call: every machine's activity retries.
 * `pace` is awaited before every send (the region's token bucket).
 */
export async function terminateEach(
  send: (ids: string[]) => Promise<string[]>,
  ids: readonly string[],
  pace: () => Promise<void> = () => Promise.resolve(),
): Promise<Map<string, TerminateOutcome>> {
  const outcome = new Map<string, TerminateOutcome>();
  /** One send: undefined when EC2 took every id, else its refusal; EC2's own faults throw. */
  async function once(some: string[]): Promise<Refusal | undefined> {
    await pace();
    try {
      await send(some);
      return undefined;
    } catch (err) {
      const code = ec2ErrorCode(err);
      const named = new Set(
        idsNamedIn(err instanceof Error ? err.message : String(err)).filter((id) =>
          some.includes(id),
        ),
      );
      const notFound = code === 'InvalidInstanceID.NotFound';
      const perId =
        code?.startsWith('InvalidInstanceID.') === true ||
        (named.size > 0 && clientFault(err) && classifyError(err) !== 'throttling');
      if (!perId && classifyError(err) !== 'permanent') throw err;
      return { err, code, notFound, named };
    }
  }
  const fail = (some: readonly string[], r: Refusal): void => {
    for (const id of some) outcome.set(id, r.notFound ? 'missing' : { error: r.err });
  };
  async function attempt(some: string[]): Promise<void> {
    if (some.length === 0) return;
    const refused = await once(some);
    if (refused) await settle(some, refused);
    else for (const id of some) outcome.set(id, undefined);
  }
  /** `some` was refused as a whole: find which ids the refusal belongs to. */
  async function settle(some: string[], r: Refusal): Promise<void> {
    if (r.named.size > 0 && r.named.size < some.length) {
      fail([...r.named], r);
      await attempt(some.filter((id) => !r.named.has(id)));
      return;
    }
    if (some.length === 1 || r.named.size === some.length) {
      fail(some, r);
      return;
    }
    const half = Math.ceil(some.length / 2);
    const halves = [some.slice(0, half), some.slice(half)];
    const first = await once(halves[0]!);
    const second = await once(halves[1]!);
    // never for an unknown or malformed id: ids EC2 knows would be taken for gone
    const aboutCall = r.code?.startsWith('InvalidInstanceID.') !== true && r.named.size === 0;
    const sameAsWhole = (h: Refusal | undefined): boolean =>
      h !== undefined && h.named.size === 0 && h.code === r.code;
    if (aboutCall && sameAsWhole(first) && sameAsWhole(second)) {
      fail(some, r);
      return;
    }
    for (const [i, refusal] of [first, second].entries()) {
      if (refusal) await settle(halves[i]!, refusal);
      else for (const id of halves[i]!) outcome.set(id, undefined);
    }
  }
  await attempt([...ids]);
  return outcome;
}

/**
 * Stopping Dead machines' instances, batched across machines (issue 30):
 * each machine's workflow still asks for its own instances, but the
 * requests of many machines go out together, through the same coalescer as
 * launches: one tag search per model, one TerminateInstances per up to
 * 1,000 ids, one DescribeInstances by id per batch of polls. Each activity
 * heartbeats while it waits for its batch and the region's bucket, so the
 * wait never burns a start-to-close timeout and a dead worker is noticed.
 */
export function teardownActivities(deps: ActivityDeps, given?: InstanceOwners) {
  let made: InstanceOwners | undefined;
  const owners = (): InstanceOwners => given ?? (made ??= new InstanceOwners(deps.store.batches));
  const buckets = new Map<string, TokenBucket>();
  const knownGone = new Map<string, Set<string>>();
  // the removal the workflow's `removeMachine` does: a placement group goes with its last machine
  const removal = machineRemoval(deps);
  // test harnesses build deps without a tuning
  const tuning = deps.tuning as ProvisioningTuning | undefined;
  const pacing = teardownPacing(tuning);
  function bucket(kind: keyof typeof TEARDOWN_PACING, region: string): TokenBucket {
    const key = `${kind}/${region}`;
    let b = buckets.get(key);
    if (!b) {
      const pace = pacing[kind];
      b = new TokenBucket(pace.burst, pace.perSecond);
      buckets.set(key, b);
    }
    return b;
  }
  function gone(region: string): Set<string> {
    let set = knownGone.get(region);
    if (!set || set.size > KNOWN_GONE_MAX) {
      set = new Set();
      knownGone.set(region, set);
    }
    return set;
  }
  const ec2Of = (region: string): EC2Client => deps.ec2ForRegion(region).ec2;
  /** EC2's states of instances a wait for terminated asks about. */
  const describePolled = (region: string, ids: string[]) =>
    asCaller('teardown:poll', () => instanceStates(ec2Of(region), ids));
  const waits = new Map<string, Set<Waiter>>();
  const pollers = new Set<string>();

  /**
   * Whether EC2's not knowing `instanceId` says nothing yet: the caller's
   * machine records it as its instance, and recorded it moments ago (the
   * rule liveness decides with, core/liveness.ts `observedState`: a
   * `pending` instance recorded less than UNLISTED_GRACE_MS ago). Past that
   * window, or when the machine records another instance or is gone, an id
   * EC2 does not know is gone. Asked only for an id EC2 refused as unknown.
   */
  async function recordedMomentsAgo(
    caller: MachineRef | undefined,
    instanceId: string,
  ): Promise<boolean> {
    if (!caller) return false;
    let machine: MachineRecord;
    try {
      machine = await deps.repo.getMachine(caller.model, caller.machineId);
    } catch (err) {
      if (err instanceof EntityNotFoundError) return false;
      throw err;
    }
    if (machine.instanceId !== instanceId) return false;
    return observedState(machine, undefined, deps.now?.() ?? Date.now()) === undefined;
  }

  // one tag search of a model answers every machine of it that asked before it began
  const searches = new Coalescer<SearchRequest, string[]>(
    WINDOWS.search,
    async (_key, requests) => {
      const first = requests[0]!;
      const sentAt = Date.now();
      const instances = await asCaller('teardown:search', () =>
        liveInstancesTagged(ec2Of(first.region), {
          deployment: deps.deployment,
          model: first.model,
          ...(first.modelUid ? { modelUid: first.modelUid } : {}),
        }),
      );
      const answeredAt = Date.now();
      const owned = await owners().of(first.model, instances);
      traceBatch('search', {
        model: first.model,
        machines: requests.length,
        instances: instances.length,
        sentAt,
        tookMs: answeredAt - sentAt,
        ownersMs: Date.now() - answeredAt,
      });
      return requests.map((r): Settled<string[]> => ({
        ok: true,
        value: instances.flatMap((i) =>
          i.InstanceId && owned.get(i.InstanceId) === r.machineId ? [i.InstanceId] : [],
        ),
      }));
    },
    (key) => bucket('describe', (JSON.parse(key) as string[])[0]!).take(),
    ONE_AT_A_TIME,
  );

  const terminations = new Coalescer<TerminateRequest, void>(
    {
      ...WINDOWS.terminate,
      idleMs: tuning?.teardownBatchIdleMs ?? WINDOWS.terminate.idleMs,
      maxMs: tuning?.teardownBatchMaxMs ?? WINDOWS.terminate.maxMs,
    },
    async (region, requests) => {
      const ec2 = ec2Of(region);
      const ids = [...new Set(requests.flatMap((r) => r.instanceIds))];
      const outcome = new Map<string, TerminateOutcome>();
      // the batch's first send had its token at the gate; every other send takes its own
      let tokenHeld = true;
      const pace = async (): Promise<void> => {
        if (!tokenHeld) await bucket('terminate', region).take();
        tokenHeld = false;
      };
      for (const some of chunks(ids, MAX_IDS_PER_CALL)) {
        const each = await terminateEach(
          async (asked) => {
            const sentAt = Date.now();
            const out = await asCaller('teardown:terminate', () => terminateInstances(ec2, asked));
            let terminated = 0;
            for (const t of out.TerminatingInstances ?? []) {
              if (t.InstanceId && t.CurrentState?.Name === 'terminated') {
                gone(region).add(t.InstanceId);
                terminated += 1;
              }
            }
            traceBatch('terminate', {
              region,
              machines: requests.length,
              ids: asked.length,
              terminated,
              sentAt,
              tookMs: Date.now() - sentAt,
            });
            return asked;
          },
          some,
          pace,
        );
        for (const [id, o] of each) outcome.set(id, o);
      }
      return Promise.all(
        requests.map(async (r): Promise<Settled<void>> => {
          for (const id of r.instanceIds) {
            const o = outcome.get(id);
            if (o === 'missing') {
              // EC2 lists a new instance only after a few seconds: this run's own launch, or
              // the machine's instance recorded moments ago, is retried (the activity's
              // backoff), never skipped; any other unknown id is gone
              try {
                if (r.fresh.includes(id) || (await recordedMomentsAgo(r.caller, id))) {
                  return { ok: false, error: new Error(notListedYetMessage(id)) };
                }
              } catch (err) {
                // the record cannot be read: not counted gone on a guess
                return { ok: false, error: err };
              }
            } else if (o !== undefined) {
              return { ok: false, error: o.error };
            }
          }
          return { ok: true, value: undefined };
        }),
      );
    },
    (region) => bucket('terminate', region).take(),
  );

  const polls = new Coalescer<string[], string[]>(
    WINDOWS.describe,
    async (region, requests) => {
      const known = gone(region);
      const ask = [...new Set(requests.flat())].filter((id) => !known.has(id));
      const states = new Map<string, string>();
      let first = true;
      // one `instance-id` filter takes 200 ids at most: each further call waits for its token
      const sentAt = Date.now();
      for (const some of chunks(ask, MAX_FILTER_VALUES)) {
        if (!first) await bucket('describe', region).take();
        first = false;
        for (const [id, state] of await describePolled(region, some)) {
          states.set(id, state);
          if (state === 'terminated') known.add(id);
        }
      }
      traceBatch('poll', {
        region,
        machines: requests.length,
        ids: ask.length,
        sentAt,
        tookMs: Date.now() - sentAt,
      });
      // an id EC2 no longer lists counts as gone, as an id it lists terminated
      return requests.map((ids): Settled<string[]> => ({
        ok: true,
        value: ids.filter((id) => {
          const state = states.get(id);
          return state !== undefined && state !== 'terminated';
        }),
      }));
    },
    (region) => bucket('describe', region).take(),
    ONE_AT_A_TIME,
  );

  return {
    /**
     * A Dead machine's teardown in one activity (issue 30, ONE_STEP_TEARDOWN):
     * its zone released and its status written (`stopping`, what it
     * terminates) while the model's tag search and the termination of the
     * instances it knows run; instances only the search found are terminated
     * as soon as it answers (the status then names them too); then waits up to
     * `waitMs` for EC2 to report every one terminated. The same batched calls
     * as the separate steps (one tag search per model, one TerminateInstances
     * per up to 1,000 ids, the region's one poller), in one activity task and
     * one workflow task for what took four and three to five. Any failure
     * fails the whole: the workflow then goes on step by step, which says what
     * blocks each step. A machine already gone is no failure (nothing to write).
     */
    async tearDownMachine(input: MachineTeardown): Promise<MachineTornDown> {
      const { model, machineId, region, known, terminate } = input;
      const startedAt = Date.now();
      // once any part of this try fails (or the try is cancelled), no new write starts, and
      // the writes already under way settle before the try fails: a late status would
      // otherwise land over what the step-by-step fallback writes (what blocks it)
      let failed: { err: unknown } | undefined;
      const fail = (err: unknown) => (failed ??= { err });
      const writes: Array<Promise<unknown>> = [];
      const write = (work: () => Promise<unknown>): Promise<void> => {
        if (failed) return Promise.resolve();
        const w = unlessGone(work());
        writes.push(w);
        return w;
      };
      const status = (ids: string[]) =>
        write(() =>
          deps.repo.updateMachine(model, machineId, {
            status: 'stopping',
            message: teardownStatusMessage(ids, terminate, input.harvestMode),
          }),
        );
      const part = <T>(work: Promise<T>): Promise<T> =>
        work.catch((err: unknown) => {
          fail(err);
          throw err;
        });
      const signal = cancellation();
      const onAbort = () => fail(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      return heartbeating(() =>
        orCancelled(async () => {
          const caller = callingMachine() ?? { model, machineId };
          const released = write(() => deps.store.releaseZoneClaim(model, machineId));
          const noted = status(known);
          const knownDone =
            terminate && known.length > 0
              ? terminations.submit(region, { instanceIds: known, fresh: input.fresh, caller })
              : Promise.resolve();
          const foundDone = (async (): Promise<string[]> => {
            if (!terminate) return [];
            const key = JSON.stringify([region, model, input.modelUid ?? '']);
            const tagged = await searches.submit(key, {
              model,
              machineId,
              region,
              ...(input.modelUid ? { modelUid: input.modelUid } : {}),
            });
            const found = tagged.filter((id) => !known.includes(id));
            if (found.length === 0) return [];
            // after the first status, which it replaces (none once the try has failed)
            const renoted = noted.then(() => status([...known, ...found]));
            await Promise.all([
              renoted,
              terminations.submit(region, { instanceIds: found, fresh: input.fresh, caller }),
            ]);
            return found;
          })();
          let found: string[];
          try {
            [, , , found] = await Promise.all([
              part(released),
              part(noted),
              part(knownDone),
              part(foundDone),
            ]);
          } catch (err) {
            // terminations and a search under way may go on (harmless); writes may not
            await Promise.allSettled(writes);
            throw err;
          }
          const instanceIds = terminate ? [...known, ...found] : [];
          // the wait ends well before this try's start-to-close timeout: what is left then
          // goes back to the workflow, which waits for it (never a timed-out, retried try)
          const waitMs = Math.min(input.waitMs, waitBudgetMs(startedAt));
          const remaining =
            instanceIds.length === 0
              ? []
              : waitMs < TERMINATED_POLL_MS
                ? instanceIds.filter((id) => !gone(region).has(id))
                : await notTerminated(region, instanceIds, waitMs, false);
          // a try that failed or was cancelled meanwhile starts no write, the removal neither
          // (its answer is dropped: the workflow's retry or fallback removes the machine)
          if (!input.remove || remaining.length > 0 || failed) return { instanceIds, remaining };
          const removed = await removeTornDown(model, machineId);
          return { instanceIds, remaining, ...(removed ? { removed } : {}) };
        }),
      ).finally(() => signal?.removeEventListener('abort', onAbort));
    },

    /**
     * Live instances launched for the machine (a launch that was never
     * recorded included): one tag search of the model, shared by every
     * machine of it that asks meanwhile, each instance mapped to its machine
     * from the launch batch's record (activities/instance-owners.ts).
     */
    async instancesTaggedFor(input: SearchRequest): Promise<string[]> {
      const key = JSON.stringify([input.region, input.model, input.modelUid ?? '']);
      return heartbeating(() => orCancelled(() => searches.submit(key, input)));
    },

    /**
     * Asks EC2 to terminate instances, together with other machines' (see
     * `terminateEach`; terminating a terminated instance is a no-op). An id
     * EC2 does not know is gone, unless it is new: EC2 lists a new instance
     * only after a few seconds, so an id this run launched (`fresh`), or the
     * calling machine's instance recorded moments ago (`recordedMomentsAgo`),
     * that EC2 does not know yet is retried (with the activity's backoff),
     * never skipped, and never left running.
     */
    async terminateInstances(input: {
      region: string;
      instanceIds: string[];
      fresh?: string[];
      /** Then wait up to this long for EC2 to report them terminated (see `notTerminated`). */
      waitMs?: number;
    }): Promise<string[]> {
      if (input.instanceIds.length === 0) return [];
      return heartbeating(() =>
        orCancelled(async () => {
          await terminations.submit(input.region, {
            instanceIds: input.instanceIds,
            fresh: input.fresh ?? [],
            caller: callingMachine(),
          });
          // EC2 keeps them shutting-down a while: the first poll after TERMINATED_POLL_MS
          return input.waitMs === undefined
            ? []
            : notTerminated(input.region, input.instanceIds, input.waitMs, false);
        }),
      );
    },

    /**
     * Those of the instances EC2 does not yet report terminated (one describe
     * per batch of polls). With `waitMs`, asked again every
     * TERMINATED_POLL_MS (each time with the other machines' polls) until
     * none is left or `waitMs` has passed: one activity, and one workflow
     * task, for what took a poll, a timer and a workflow task each.
     */
    async instancesNotTerminated(input: {
      region: string;
      instanceIds: string[];
      waitMs?: number;
    }): Promise<string[]> {
      if (input.instanceIds.length === 0) return [];
      return heartbeating(() =>
        orCancelled(() => notTerminated(input.region, input.instanceIds, input.waitMs ?? 0)),
      );
    },
  };

  /**
   * Removes a machine whose instances are all seen terminated, in the
   * activity that saw them so (REMOVED_IN_TEARDOWN): its model's removal then
   * waits on no further workflow task. Issue 26: at N=1,000 those tasks came
   * all at once as one poll round answered every machine, queued 4-13 s for
   * the worker's slots, and with two workers the server lost five of them on
   * their way to a worker (its transfer queue's dispatch timed out), each
   * taken up only by the machine workflow's 60 s task timeout: the model
   * went 109 s after the DELETE instead of ~55. A removal that fails is left
   * to the workflow (undefined), which retries it and says what blocks it.
   */
  async function removeTornDown(
    model: string,
    machineId: string,
  ): Promise<{ modelRemoved: boolean } | undefined> {
    try {
      return await removal.removeMachine({ model, machineId });
    } catch (err) {
      activityLog.warn('machine not removed by its teardown; its workflow removes it', {
        model,
        machineId,
        error: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    }
  }

  /**
   * Those of `instanceIds` not terminated after up to `waitMs`. `askNow`:
   * the first answer comes from a poll at once (with other machines' polls);
   * otherwise from the region's poller TERMINATED_POLL_MS later. Ids
   * TerminateInstances already reported terminated are never asked about.
   */
  async function notTerminated(
    region: string,
    instanceIds: string[],
    waitMs: number,
    askNow = true,
  ): Promise<string[]> {
    const now = Date.now();
    const known = gone(region);
    let remaining = instanceIds.filter((id) => !known.has(id));
    if (remaining.length === 0) return [];
    if (askNow) {
      remaining = await polls.submit(region, remaining);
      if (remaining.length === 0 || waitMs < TERMINATED_POLL_MS) return remaining;
    }
    const left = remaining;
    return new Promise<string[]>((resolve, reject) => {
      const waiter: Waiter = {
        ids: left,
        nextAt: Date.now() + TERMINATED_POLL_MS,
        intervalMs: TERMINATED_POLL_MS,
        until: now + waitMs,
        resolve,
        reject,
      };
      let set = waits.get(region);
      if (!set) waits.set(region, (set = new Set()));
      set.add(waiter);
      // a cancelled activity's wait leaves the poller: no describe is made for it any more
      const signal = cancellation();
      if (signal) {
        const onAbort = () => {
          waits.get(region)?.delete(waiter);
          reject(signal.reason as Error);
        };
        if (signal.aborted) onAbort();
        else {
          signal.addEventListener('abort', onAbort, { once: true });
          waiter.resolve = (ids) => {
            signal.removeEventListener('abort', onAbort);
            resolve(ids);
          };
          waiter.reject = (err) => {
            signal.removeEventListener('abort', onAbort);
            reject(asError(err));
          };
        }
      }
      if (!pollers.has(region)) {
        pollers.add(region);
        // pollRegion clears its flag itself, in the same turn it finds no waiter left: a
        // `.finally` would clear it a microtask later, and a wait added in that gap would
        // find the flag set and no poller to serve it
        void pollRegion(region).catch((err: unknown) => abandon(region, err));
      }
    });
  }

  /**
   * The region's one poller: while machines wait, one round of describes by
   * id (the describe bucket's tokens) at most every TERMINATED_ROUND_MS, for
   * every waiter due by the next round; a waiter whose time is up gets what
   * it still waits for.
   */
  async function pollRegion(region: string): Promise<void> {
    let lastRound = 0;
    for (;;) {
      const set = waits.get(region);
      if (!set || set.size === 0) {
        pollers.delete(region);
        return;
      }
      let wake = Infinity;
      for (const w of set) wake = Math.min(wake, w.nextAt, w.until);
      wake = Math.max(wake, lastRound + TERMINATED_ROUND_MS);
      const delay = wake - Date.now();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const now = Date.now();
      const horizon = now + TERMINATED_ROUND_MS;
      const due: Waiter[] = [];
      for (const w of set) {
        if (w.nextAt <= horizon) due.push(w);
        else if (w.until <= now) {
          set.delete(w);
          w.resolve(w.ids);
        }
      }
      if (due.length === 0) continue;
      lastRound = now;
      const known = gone(region);
      const ask = [...new Set(due.flatMap((w) => w.ids))].filter((id) => !known.has(id));
      const states = new Map<string, string>();
      try {
        for (const some of chunks(ask, MAX_FILTER_VALUES)) {
          await bucket('describe', region).take();
          for (const [id, state] of await describePolled(region, some)) {
            states.set(id, state);
            if (state === 'terminated') known.add(id);
          }
        }
        traceBatch('poll round', {
          region,
          machines: due.length,
          ids: ask.length,
          sentAt: now,
          tookMs: Date.now() - now,
        });
      } catch (err) {
        // as a poll of its own would have: the waits it was for fail, and their activities retry
        for (const w of due) {
          set.delete(w);
          w.reject(err);
        }
        continue;
      }
      const after = Date.now();
      for (const w of due) {
        // an id EC2 no longer lists counts as gone, as an id it lists terminated
        w.ids = w.ids.filter((id) => {
          const state = states.get(id);
          return !known.has(id) && state !== undefined && state !== 'terminated';
        });
        w.intervalMs = Math.min(w.intervalMs * 1.5, TERMINATED_POLL_MAX_MS);
        w.nextAt = after + w.intervalMs;
        if (w.ids.length === 0 || w.nextAt > w.until) {
          set.delete(w);
          w.resolve(w.ids);
        }
      }
    }
  }

  /**
   * The region's poller stopped on an unexpected throw: its flag is cleared
   * and every wait it served fails with the error (their activities retry)
   * rather than hang until their start-to-close timeout.
   */
  function abandon(region: string, err: unknown): void {
    pollers.delete(region);
    const set = waits.get(region);
    waits.delete(region);
    for (const w of set ?? []) w.reject(err);
  }
}

/** A machine's wait for terminated, answered by its region's poller. */
interface Waiter {
  ids: string[];
  nextAt: number;
  intervalMs: number;
  until: number;
  resolve: (remaining: string[]) => void;
  reject: (err: unknown) => void;
}
