import { paginateDescribeInstances, type EC2Client, type Instance } from '@aws-sdk/client-ec2';
import type { InstanceState } from '../core/liveness';
import { TAG_DEPLOYMENT, TAG_MODEL, TAG_MODEL_UID, instanceState, tagValue } from './tags';

/** One look at every instance of this deployment in a region, in any state. */
export interface DeploymentListing {
  /** When the listing was asked for (ms since the epoch). */
  at: number;
  /** Instances tagged for `model` (and its uid, when the model has one), oldest first. */
  tagged(model: string, modelUid?: string): Instance[];
  /** EC2's state of each instance the listing holds. */
  states: ReadonlyMap<string, InstanceState>;
}

/** Every instance tagged for this deployment in the region, any state, pages of 1,000. */
export async function listDeployment(ec2: EC2Client, deployment: string): Promise<Instance[]> {
  const found: Instance[] = [];
  const pages = paginateDescribeInstances(
    { client: ec2, pageSize: 1000 },
    { Filters: [{ Name: `tag:${TAG_DEPLOYMENT}`, Values: [deployment] }] },
  );
  for await (const page of pages) {
    for (const r of page.Reservations ?? []) found.push(...(r.Instances ?? []));
  }
  return found;
}

/** Groups a deployment's instances by model, as EC2's tag filters would select them. */
export function deploymentListing(instances: readonly Instance[], at: number): DeploymentListing {
  const byModel = new Map<string, Instance[]>();
  const states = new Map<string, InstanceState>();
  const ordered = [...instances].sort(
    (a, b) =>
      (a.LaunchTime?.getTime() ?? 0) - (b.LaunchTime?.getTime() ?? 0) ||
      (a.InstanceId ?? '').localeCompare(b.InstanceId ?? ''),
  );
  for (const i of ordered) {
    const state = instanceState(i);
    if (i.InstanceId && state) states.set(i.InstanceId, state);
    const model = tagValue(i, TAG_MODEL);
    if (model === undefined) continue;
    const list = byModel.get(model) ?? [];
    list.push(i);
    byModel.set(model, list);
  }
  return {
    at,
    states,
    tagged(model, modelUid) {
      const all = byModel.get(model) ?? [];
      // a model re-created under the same name is another model: its uid tells their instances apart
      return modelUid === undefined
        ? all
        : all.filter((i) => tagValue(i, TAG_MODEL_UID) === modelUid);
    },
  };
}

/**
 * The listings one sweeper page shares: one DescribeInstances walk per region
 * for all of the page's models instead of one filtered call per model (EC2's
 * Describe* rate limits in the cloud; the emulator, which filters by scanning
 * every instance, locally). A listing serves models for at most `maxAgeMs`
 * after it was asked for, then the next model asks again; a model whose
 * machines record another state than the listing's asks EC2 by id before it
 * believes it (activities/sweep.ts), so an old listing never undoes a newer
 * state. A failed listing answers the models that ask within `failureHoldMs`
 * with the same failure (under throttling, a hundred models must not each
 * start a full listing), then the next model asks again.
 */
export class SharedListings {
  private readonly byRegion = new Map<
    string,
    { until: number; listing: Promise<DeploymentListing> }
  >();

  constructor(
    private readonly list: (region: string) => Promise<Instance[]>,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
    private readonly failureHoldMs = 5_000,
  ) {}

  of(region: string): Promise<DeploymentListing> {
    const held = this.byRegion.get(region);
    const now = this.now();
    if (held && now <= held.until) return held.listing;
    const listing = this.list(region).then((instances) => deploymentListing(instances, now));
    const entry = { until: now + this.maxAgeMs, listing };
    this.byRegion.set(region, entry);
    listing.catch(() => {
      entry.until = Math.min(entry.until, this.now() + this.failureHoldMs);
    });
    return listing;
  }
}
