import { DescribeInstancesCommand, EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { randomUUID } from 'node:crypto';
import type { Launch } from './ec2-proxy';

/**
 * EC2's state-change events on the local stack. In the cloud EC2 sends an
 * "EC2 Instance State-change Notification" to EventBridge for every change of
 * every instance, and the stack's rule delivers it to the instance-events
 * Lambda (functions/instance-events.ts). moto sends none, so this emitter
 * watches the stack's own instances (those launched through its EC2 proxy)
 * and delivers the same events to the same handler:
 *
 * - `running`, from the proxy's own clock: an instance reports `pending` for
 *   the proxy's `pendingToRunning` after its launch, then `running` (no call
 *   to moto for it); the `pending` that EC2 also sends at launch is left
 *   out, as the launch records `pending` itself;
 * - `stopping`, `stopped`, `shutting-down`, `terminated`, from moto itself
 *   every POLL_MS (one DescribeInstances of the watched ids whose answer holds
 *   only instances in those states), so an instance stopped or terminated
 *   behind the proxy's back, on moto directly, is told too; and the return of
 *   a stopped one, asked of moto by id.
 *
 * Each change is delivered once, as EventBridge delivers it: only a
 * refused or failed delivery is tried again at the next tick, MAX_TRIES
 * times in all, then dropped; the model's sweep is the backstop, as in the
 * cloud. A `running` the handler answers `not-ours` (the launch not
 * recorded yet) is not sent again, as EventBridge would not: the launch's
 * own ask of its instances (activities/running-catch-up.ts) tells it.
 */

/** The local API server's path that hands an event to the instance-events handler. */
export const EC2_EVENTS_PATH = '/_local/ec2-events';

/** Tick of the emitter (the `running` news, retries). */
export const TICK_MS = 1_000;
/** How often moto is asked for stopped and terminated instances. */
export const POLL_MS = 2_000;
/** Deliveries of one change before it is left to the sweep (EventBridge's rule here: 4 retries). */
export const MAX_TRIES = 5;
/** Events delivered at once. */
const DELIVERIES_AT_ONCE = 8;
/** Ids per DescribeInstances filter (moto takes more than EC2's 200). */
const IDS_PER_CALL = 1_000;

const NOT_LIVE = ['stopping', 'stopped', 'shutting-down', 'terminated'];
const LOCAL_ACCOUNT = '000000000000';

/** The event as EventBridge delivers it to a Lambda target. */
export interface StateChangeNotification {
  version: '0';
  id: string;
  'detail-type': 'EC2 Instance State-change Notification';
  source: 'aws.ec2';
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: { 'instance-id': string; state: string };
}

export function stateChangeNotification(
  region: string,
  instanceId: string,
  state: string,
  now = new Date(),
): StateChangeNotification {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: LOCAL_ACCOUNT,
    time: now.toISOString(),
    region,
    resources: [`arn:aws:ec2:${region}:${LOCAL_ACCOUNT}:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state },
  };
}

export interface Ec2StateEventsOptions {
  /**
   * The stack's EC2 proxy: which instances are the stack's, and when each
   * runs, on the proxy's own clock (`now`: a monotonic clock, not the wall
   * clock), which the emitter then keeps.
   */
  proxy: { launches(): Launch[]; now(): number };
  /** moto itself (not the proxy: these calls are no client's, counted and limited by nothing). */
  motoEndpoint: string;
  /** A client to ask instead of one made for `motoEndpoint` (tests); not destroyed by close(). */
  ec2?: EC2Client;
  region: string;
  /** Delivers one event and resolves with the handler's outcome; rejects when it did not take it. */
  deliver(event: StateChangeNotification): Promise<unknown>;
  log?: (line: string) => void;
  /** Instead of the proxy's clock (tests). */
  clock?: () => number;
  tickMs?: number;
  pollMs?: number;
}

export interface Ec2StateEventsStats {
  delivered: number;
  /** Delivered events the handler answered `not-ours` (no machine records the instance, or not yet). */
  notOurs: number;
  /** Deliveries that failed (each is tried again, up to MAX_TRIES). */
  failed: number;
  /** Changes given up on after MAX_TRIES: left to the sweep. */
  dropped: number;
}

interface Change {
  instanceId: string;
  region: string;
  state: string;
}

export class Ec2StateEvents {
  /** The last state told (or being told) of each watched instance. */
  private readonly told = new Map<string, string>();
  private readonly tries = new Map<string, number>();
  private readonly moto: EC2Client;
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private lastPoll = 0;
  private closed = false;
  private pollFailing = false;
  readonly stats: Ec2StateEventsStats = { delivered: 0, notOurs: 0, failed: 0, dropped: 0 };

  constructor(private readonly opts: Ec2StateEventsOptions) {
    // the proxy's clock: a launch's `runningAt` is on it (on Date.now every launch ran at once)
    this.clock = opts.clock ?? (() => opts.proxy.now());
    this.moto =
      opts.ec2 ??
      new EC2Client({
        region: opts.region,
        endpoint: opts.motoEndpoint,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      });
  }

  start(): void {
    this.schedule();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.ticking;
    if (!this.opts.ec2) this.moto.destroy();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule();
      });
    }, this.opts.tickMs ?? TICK_MS);
    this.timer.unref();
  }

  /** One pass: what changed since the last, delivered. Exposed for tests. */
  async tick(): Promise<void> {
    const now = this.clock();
    const launches = this.opts.proxy.launches();
    const changes: Change[] = [];
    let notLive: Map<string, string> | undefined;
    if (now - this.lastPoll >= (this.opts.pollMs ?? POLL_MS)) {
      try {
        notLive = await this.notLive(launches);
        this.lastPoll = now;
        if (this.pollFailing) this.opts.log?.('EC2 events: moto answers again');
        this.pollFailing = false;
      } catch (err) {
        if (!this.pollFailing) {
          this.opts.log?.(`EC2 events: moto could not be asked (${errorText(err)}); trying again`);
        }
        this.pollFailing = true;
      }
    }
    const regionOf = (l: Launch) => l.region ?? this.opts.region;
    const back: Launch[] = [];
    for (const l of launches) {
      const told = this.told.get(l.instanceId);
      if (told === 'terminated') continue; // the end: nothing follows it
      const state = notLive?.get(l.instanceId);
      if (state !== undefined) {
        if (state !== told) changes.push({ instanceId: l.instanceId, region: regionOf(l), state });
      } else if (told === undefined) {
        if (now >= l.runningAt && (notLive !== undefined || this.lastPoll > 0)) {
          changes.push({ instanceId: l.instanceId, region: regionOf(l), state: 'running' });
        }
      } else if (notLive !== undefined && (told === 'pending' || NOT_LIVE.includes(told))) {
        back.push(l); // stopped (or starting again) before, not now: asked by id what it is
      }
    }
    if (back.length > 0) {
      try {
        for (const i of await this.describe(back.map((l) => l.instanceId))) {
          const state = i.State?.Name;
          const l = back.find((b) => b.instanceId === i.InstanceId);
          if (l && state && state !== this.told.get(l.instanceId)) {
            changes.push({ instanceId: l.instanceId, region: regionOf(l), state });
          }
        }
      } catch {
        // told at a later poll
      }
    }
    await this.deliverAll(changes);
  }

  /** The watched instances moto says are stopping, stopped, shutting down or terminated. */
  private async notLive(launches: readonly Launch[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const ids = launches
      .map((l) => l.instanceId)
      .filter((id) => this.told.get(id) !== 'terminated');
    for (let i = 0; i < ids.length; i += IDS_PER_CALL) {
      for (const instance of await this.describe(ids.slice(i, i + IDS_PER_CALL), NOT_LIVE)) {
        const state = instance.State?.Name;
        if (instance.InstanceId && state) out.set(instance.InstanceId, state);
      }
    }
    return out;
  }

  private async describe(ids: readonly string[], states?: readonly string[]): Promise<Instance[]> {
    if (ids.length === 0) return [];
    const out: Instance[] = [];
    let token: string | undefined;
    do {
      const page = await this.moto.send(
        new DescribeInstancesCommand({
          Filters: [
            { Name: 'instance-id', Values: [...ids] },
            ...(states ? [{ Name: 'instance-state-name', Values: [...states] }] : []),
          ],
          ...(token ? { NextToken: token } : {}),
        }),
      );
      for (const r of page.Reservations ?? []) out.push(...(r.Instances ?? []));
      token = page.NextToken;
    } while (token);
    return out;
  }

  private async deliverAll(changes: readonly Change[]): Promise<void> {
    const queue = [...changes];
    const lane = async (): Promise<void> => {
      for (let c = queue.shift(); c !== undefined; c = queue.shift()) await this.deliverOne(c);
    };
    await Promise.all(Array.from({ length: Math.min(DELIVERIES_AT_ONCE, queue.length) }, lane));
  }

  private async deliverOne(c: Change): Promise<void> {
    const before = this.told.get(c.instanceId);
    this.told.set(c.instanceId, c.state);
    const key = `${c.instanceId}:${c.state}`;
    try {
      const outcome = await this.opts.deliver(
        stateChangeNotification(c.region, c.instanceId, c.state),
      );
      this.stats.delivered++;
      this.tries.delete(key);
      // delivered: never sent again, whatever the handler made of it (EventBridge's way)
      if (isNotOurs(outcome)) this.stats.notOurs++;
    } catch (err) {
      this.stats.failed++;
      const tries = (this.tries.get(key) ?? 0) + 1;
      if (tries >= MAX_TRIES) {
        // left to the sweep, as EventBridge drops an event after its retries
        this.stats.dropped++;
        this.tries.delete(key);
        this.opts.log?.(
          `EC2 events: ${c.instanceId} ${c.state} not delivered after ${tries} tries (${errorText(err)}); the sweep tells it`,
        );
        return;
      }
      this.tries.set(key, tries);
      // told again at the next tick
      if (before === undefined) this.told.delete(c.instanceId);
      else this.told.set(c.instanceId, before);
    }
  }
}

function isNotOurs(outcome: unknown): boolean {
  return (outcome as { ignored?: unknown } | null)?.ignored === 'not-ours';
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Delivers an event to the local API server's instance-events route; rejects unless it answers 2xx. */
export function deliverToApi(apiUrl: string): (event: StateChangeNotification) => Promise<unknown> {
  return async (event) => {
    const res = await fetch(`${apiUrl}${EC2_EVENTS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as unknown;
  };
}
