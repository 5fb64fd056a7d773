import type { ActivityDeps } from './deps';
import { SharedListings, listDeployment } from '../ec2/instance-listing';
import type { SweepReport } from './types';
import { asCaller } from '../ec2/caller';

/** Models one sweeper activity sweeps (one Temporal action however many models that is). */
export const SWEEP_PAGE_SIZE = 100;
/** Models of a page swept at once: a few EC2, DynamoDB and Temporal calls each. */
const SWEEP_CONCURRENCY = 8;
/** No model's sweep is begun this long after its page began. */
const PAGE_BUDGET_MS = 45_000;
/**
 * How long one listing of a region's instances serves the page's models
 * (ec2/instance-listing.ts): a page's models share a few listings
 * instead of one DescribeInstances each.
 */
export const LISTING_MAX_AGE_MS = 10_000;
/** A model's sweep that takes longer than this is reported failed (the next walk tries again). */
const MODEL_BUDGET_MS = 60_000;

function withinBudget<T>(work: Promise<T>, model: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`sweeping model ${model} took over ${MODEL_BUDGET_MS / 1000}s`)),
      MODEL_BUDGET_MS,
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export interface SweepPageInput {
  /** Sweep the models whose name sorts after this one (the previous page's last). */
  after?: string;
  limit?: number;
}

export interface SweepPageResult {
  /** Models swept in this page. */
  swept: number;
  /** Where the next page starts; absent when this was the last. */
  next?: string;
  /** The worker's PROVISIONER_SWEEP_INTERVAL: the sweeper sleeps this long between walks. */
  intervalMs: number;
  /** Only the sweeps that found something (strays, restarts, liveness changes): the rest is noise. */
  changed: SweepReport[];
  /** Models whose sweep failed this time (the next walk tries again). */
  failed: Array<{ model: string; error: string }>;
  /** How long the page took, and how many instance listings its models shared. */
  tookMs: number;
  listings: number;
}

/** The page of `names` (sorted) after `after`, and where the next one starts. */
export function modelPage(
  names: readonly string[],
  after: string | undefined,
  limit: number,
): { page: string[]; next?: string } {
  const sorted = [...names].sort();
  const rest = after === undefined ? sorted : sorted.filter((n) => n > after);
  const page = rest.slice(0, limit);
  return rest.length > limit ? { page, next: page[page.length - 1] } : { page };
}

function changedSomething(r: SweepReport): boolean {
  return (
    r.modelGone ||
    r.strays.length > 0 ||
    r.terminated.length > 0 ||
    r.restarted.length > 0 ||
    r.instanceChanges.length > 0 ||
    r.reprovisioned.length > 0
  );
}

/**
 * The sweeper's one activity: sweeps a page of models (each as the per-model
 * sweep always has). A model whose sweep fails is reported, not thrown: one
 * bad model must not stop the others, and a failed activity would cost a
 * retry. No heartbeats: each would be a billed action.
 */
export function sweeperActivities(
  deps: ActivityDeps,
  sweepModel: (input: { model: string }, listings: SharedListings) => Promise<SweepReport>,
) {
  return {
    sweepModelPage(input: SweepPageInput): Promise<SweepPageResult> {
      // the EC2 calls of the page's models count as the sweep's (the local proxy's byCaller)
      return asCaller('sweep', () => sweepPage(input));
    },
  };

  async function sweepPage(input: SweepPageInput): Promise<SweepPageResult> {
    const limit = input.limit ?? SWEEP_PAGE_SIZE;
    const models = await deps.repo.listModels();
    const { page, next } = modelPage(
      models.map((m) => m.name),
      input.after,
      limit,
    );
    const began = Date.now();
    let listed = 0;
    const listings = new SharedListings((region) => {
      listed++;
      return listDeployment(deps.ec2ForRegion(region).ec2, deps.deployment);
    }, LISTING_MAX_AGE_MS);
    const changed: SweepReport[] = [];
    const failed: Array<{ model: string; error: string }> = [];
    let i = 0;
    // Within the page activity's 2 minutes whatever the models do: no model is
    // begun after PAGE_BUDGET_MS (the page ends early, and the walk goes on from
    // there), and a model's sweep that outlasts MODEL_BUDGET_MS counts as failed.
    const deadline = Date.now() + PAGE_BUDGET_MS;
    async function lane(): Promise<void> {
      while (i < page.length && Date.now() < deadline) {
        const model = page[i++]!;
        try {
          const report = await withinBudget(sweepModel({ model }, listings), model);
          if (changedSomething(report)) changed.push(report);
        } catch (err) {
          failed.push({ model, error: err instanceof Error ? err.message : String(err) });
        }
      }
    }
    const lanes = deps.tuning.sweepConcurrency ?? SWEEP_CONCURRENCY;
    await Promise.all(Array.from({ length: Math.min(lanes, page.length) }, lane));
    const cut = i < page.length ? page[i - 1] : undefined;
    const resume = cut ?? next;
    return {
      swept: i,
      ...(resume !== undefined ? { next: resume } : {}),
      intervalMs: deps.tuning.sweepIntervalMs,
      changed,
      failed,
      tookMs: Date.now() - began,
      listings: listed,
    };
  }
}
