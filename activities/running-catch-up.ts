import type { InstanceState } from '../core/liveness';
import type { RoutineOutcome } from '../state/provisioning';
import { ec2Addresses } from '../ec2/addresses';
import { asCaller } from '../ec2/caller';
import { instanceStates } from '../ec2/tags';
import { TokenBucket } from '../ec2/token-bucket';
import { Coalescer, type CoalescerWindows, type Settled } from './coalescer';
import type { ActivityDeps } from './deps';
import { activityLog } from './log';
import { type RecordedLaunch, trackCatchUp } from './running-catch-up-in-flight';

/**
 * The `running` an instance's state-change event may have said too early.
 *
 * EC2 reports an instance `running` some seconds after RunInstances answers,
 * and EventBridge delivers that news to instance-events, which finds the
 * instance's machine by the recorded instance id. A launch is recorded when
 * its batch answers (startInstance); a busy worker can record it after the
 * instance already runs, and then the event finds no machine (`not-ours`) and
 * is gone: EventBridge sends it once. The machine would say `pending` until
 * the model's next sweep (a minute and more).
 *
 * So once launches are recorded, their instances are asked of EC2 once: one
 * DescribeInstances (an `instance-id` filter and `instance-state-name =
 * running`, 199 ids a call) for the launches recorded in a short window in
 * a region, across batches, and each
 * instance EC2 says runs is written `running` with the routine write the
 * handler and the sweep use (ProvisioningStore.recordRoutineInstanceState),
 * the window's writes sent together (recordRoutineRunningAll: up to 25 a
 * call, each with its own condition and outcome).
 * An instance still `pending` at that describe changes after its launch was
 * recorded, so its own event finds the machine: between the two every
 * launch hears its `running` within seconds. Only running ones are listed
 * (the state filter): most of a burst's instances are still `pending` at
 * their window's describe, and each one EC2 describes costs the worker
 * ~0.2 ms of CPU to parse (3 KB of XML), for nothing it acts on. A failed describe or write is
 * logged and left to the sweep; it never fails a launch.
 */

/** Launches recorded this close together (and at most this long after the first) are asked in one call. */
export const CATCH_UP_WINDOWS: CoalescerWindows = { idleMs: 1_000, maxMs: 3_000, maxSize: 1_000 };

/**
 * At most one describe per region every 3 s (a window that closes while the
 * token is awaited keeps taking launches): at 1,000 machines launched in
 * about a minute, some 20 calls beside the 40-odd RunInstances.
 */
export const CATCH_UP_PACE = { burst: 1, perSecond: 1 / 3 };

export type { RecordedLaunch } from './running-catch-up-in-flight';
// what a draining worker (and a test before it drops its table) waits for
export { runningCatchUpsSettled } from './running-catch-up-in-flight';

/** The addresses EC2 listed for an instance (`ec2Addresses`): absent ones are removed by the write. */
export interface ListedAddresses {
  privateAddress?: string;
  publicAddress?: string;
}

/** An instance as one describe listed it: its state, and its addresses when it runs. */
export interface ListedInstance {
  state: InstanceState;
  addresses?: ListedAddresses;
}

/** What the catch-up asks and writes through (real: `runningCatchUp` below; tests: fakes). */
export interface CatchUpPorts {
  /**
   * EC2's state of each id it lists (an id not yet listed is left out; the
   * real port lists only `running` ones), or the state with the addresses listed. The answer is the window's own: nothing of
   * it outlives the window, so a describe that fails part-way leaves nothing behind.
   */
  statesOf(
    region: string,
    instanceIds: readonly string[],
  ): Promise<Map<string, InstanceState | ListedInstance>>;
  /**
   * The routine `running` write of each launch, with the addresses this
   * window's describe listed, all at once: each launch's outcome, in order,
   * `refused` when the table refused it (the machine no longer records that
   * instance alive and running, e.g. destroyed meanwhile), `failed` with the
   * error when it could not be written.
   */
  recordRunningAll(writes: readonly RunningWrite[]): Promise<RoutineOutcome[]>;
}

/** A launch EC2 says runs, and the addresses its describe listed. */
export interface RunningWrite {
  launch: RecordedLaunch;
  addresses?: ListedAddresses;
}

export interface CatchUpStats {
  /** Windows asked of EC2 (one DescribeInstances per 199 of their instances). */
  asks: number;
  /** Instances found running and written. */
  written: number;
  /** Writes the table refused (the machine moved on: destroyed, down, another instance). */
  refused: number;
  /** Asks or writes that failed (left to the sweep). */
  failed: number;
}

export class RunningCatchUp {
  private readonly asks: Coalescer<RecordedLaunch, void>;
  private readonly buckets = new Map<string, TokenBucket>();
  readonly stats: CatchUpStats = { asks: 0, written: 0, refused: 0, failed: 0 };

  constructor(
    private readonly ports: CatchUpPorts,
    windows: CoalescerWindows = CATCH_UP_WINDOWS,
    pace: { burst: number; perSecond: number } = CATCH_UP_PACE,
  ) {
    this.asks = new Coalescer<RecordedLaunch, void>(
      windows,
      (region, launches) => this.catchUp(region, launches),
      (region) => {
        let b = this.buckets.get(region);
        if (!b) this.buckets.set(region, (b = new TokenBucket(pace.burst, pace.perSecond)));
        return b.take();
      },
    );
  }

  /**
   * A launch was recorded: its instance is asked of EC2 with the others of
   * its window. Not awaited by the launch; resolves once it was asked (and
   * written, if running), whatever the outcome.
   */
  recorded(launch: RecordedLaunch): Promise<void> {
    const asked = this.asks.submit(launch.region, launch).catch(() => undefined);
    trackCatchUp(asked, launch);
    return asked;
  }

  private async catchUp(region: string, launches: RecordedLaunch[]): Promise<Array<Settled<void>>> {
    const done = launches.map((): Settled<void> => ({ ok: true, value: undefined }));
    let states: Map<string, InstanceState | ListedInstance>;
    try {
      this.stats.asks++;
      states = await this.ports.statesOf(
        region,
        launches.map((l) => l.instanceId),
      );
    } catch (err) {
      this.stats.failed++;
      activityLog.warn('launched instances not asked of EC2; the sweep tells them running', {
        region,
        instances: launches.length,
        error: errorText(err),
      });
      return done;
    }
    const listed = (l: RecordedLaunch): ListedInstance | undefined => {
      const found = states.get(l.instanceId);
      return typeof found === 'string' ? { state: found } : found;
    };
    const running: RunningWrite[] = launches.flatMap((launch) => {
      const found = listed(launch);
      return found?.state === 'running' ? [{ launch, addresses: found.addresses }] : [];
    });
    if (running.length === 0) return done;
    let outcomes: readonly RoutineOutcome[];
    try {
      outcomes = await this.ports.recordRunningAll(running);
      if (outcomes.length !== running.length) {
        throw new Error(`${outcomes.length} outcomes for ${running.length} writes`);
      }
    } catch (error) {
      outcomes = running.map((): RoutineOutcome => ({ outcome: 'failed', error }));
    }
    const refused: string[] = [];
    const failed: string[] = [];
    let firstError: unknown;
    outcomes.forEach((o, i) => {
      const { model, machineId } = running[i]!.launch;
      if (o.outcome === 'written') this.stats.written++;
      else if (o.outcome === 'refused') refused.push(`${model}/${machineId}`);
      else {
        if (failed.length === 0) firstError = o.error;
        failed.push(`${model}/${machineId}`);
      }
    });
    // one line a window, not a machine: a refusal is normal when the machine moved on
    if (refused.length > 0) {
      this.stats.refused += refused.length;
      activityLog.info('running not written: the machine no longer records that instance alive', {
        region,
        machines: refused.slice(0, 20),
        refused: refused.length,
      });
    }
    if (failed.length > 0) {
      this.stats.failed += failed.length;
      activityLog.warn('instances running not recorded; the sweep tells them', {
        region,
        machines: failed.slice(0, 20),
        failed: failed.length,
        error: errorText(firstError),
      });
    }
    return done;
  }
}

const ofDeps = new WeakMap<object, RunningCatchUp>();

/**
 * The worker's catch-up (one per activities' deps, so the launch's record
 * and the workflow's own record step share its windows), on the worker's
 * EC2 clients and its table.
 */
export function runningCatchUpOf(
  deps: Pick<ActivityDeps, 'ec2ForRegion' | 'store'>,
): RunningCatchUp {
  let catchUp = ofDeps.get(deps);
  if (!catchUp) {
    catchUp = new RunningCatchUp(catchUpPortsOf(deps));
    ofDeps.set(deps, catchUp);
  }
  return catchUp;
}

/**
 * The real ports: the addresses of the instances the describe finds running
 * go in their `running` write, so the sweep finds them recorded and writes
 * the machine no second time for them. They travel in the window's answer
 * (no map kept across windows: a describe that fails on a later page drops them).
 */
export function catchUpPortsOf(deps: Pick<ActivityDeps, 'ec2ForRegion' | 'store'>): CatchUpPorts {
  return {
    statesOf: async (region, ids) => {
      const listed = new Map<string, ListedInstance>();
      // named for the local proxy's byCaller: the window's timer may fire after the launches'
      // activities, and a teardown's count must tell these calls from its own
      await asCaller('launch:running-catch-up', () =>
        instanceStates(
          deps.ec2ForRegion(region).ec2,
          ids,
          (i, state) => {
            if (i.InstanceId) {
              listed.set(
                i.InstanceId,
                state === 'running' ? { state, addresses: ec2Addresses(i) } : { state },
              );
            }
          },
          // only those it writes: a pending one hears its running from its own event
          ['running'],
        ),
      );
      return listed;
    },
    recordRunningAll: (writes) =>
      deps.store.recordRoutineRunningAll(
        writes.map(({ launch, addresses }) => ({
          model: launch.model,
          machineId: launch.machineId,
          instanceId: launch.instanceId,
          ...(addresses ? { addresses } : {}),
        })),
      ),
  };
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
