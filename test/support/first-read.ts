import { MockActivityEnvironment } from '@temporalio/testing';
import type { ActivityDeps } from '../../activities/deps';
import { launchActivities } from '../../activities/launch';
import { recordActivities } from '../../activities/records';
import type { InstanceTypeInfo } from '../../core';
import { PlacementGroups } from '../../ec2/placement-groups';
import type { RegionalEc2 } from '../../ec2/regional';
import type { ModelRecord } from '../../state/types';
import type { ClaimRequest, ClaimResult } from '../../state/zone-claim';
import { machineView } from '../../state/zone-count-reads';

/** The run of machine `0` of model `m` (machineItem), as a workflow's activities see it. */
export const RUN = { workflowId: 'machine:m:0', runId: '5d2a6c1e-8a7b-4c1f-9e0b-3f6f4c9d2a10' };
export const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

/**
 * A machine's first read and its launch steps over fakes, in us-east-1 with
 * every zone of ZONES available and offering every type of `catalogue`: the
 * table holds `item` (undefined: no machine; read once `read` resolves, when
 * given), each zone claim is answered by `answers` in turn (or the claim's
 * own first choice) and kept in `claims`, and `store` and `tuning` add to
 * the deps (the launch batches, recordRunning; the batch window).
 */
export function firstReadFakes(options: {
  item: Record<string, unknown> | undefined;
  catalogue: readonly InstanceTypeInfo[];
  /** EC2's client in the region. */
  ec2?: unknown;
  read?: Promise<void>;
  store?: Record<string, unknown>;
  tuning?: Record<string, number>;
  /** More deps (e.g. `firstLaunchBudget`, the first read's budget as the test drives it). */
  deps?: Partial<ActivityDeps>;
}) {
  const { item } = options;
  const claims: ClaimRequest[] = [];
  const answers: ClaimResult[] = [];
  const regional = {
    region: 'us-east-1',
    ec2: options.ec2 ?? {},
    catalogue: {
      all: () => Promise.resolve(options.catalogue),
      zonesOffering: (_type: string, zones: readonly string[]) => Promise.resolve([...zones]),
    },
    images: { find: () => Promise.resolve('ami-1') },
    zones: {
      zones: () => Promise.resolve(ZONES.map((name) => ({ name, state: 'available' }))),
    },
  } as unknown as RegionalEc2;
  const deps = {
    repo: {
      getModel: (name: string) =>
        Promise.resolve({ name, region: 'us-east-1', uid: 'uid-1' } as unknown as ModelRecord),
    },
    store: {
      machineWithView: async () => {
        await options.read;
        return item ? { item, view: machineView(item) } : undefined;
      },
      claimZones: (_model: string, requests: readonly ClaimRequest[]) => {
        claims.push(...requests);
        return Promise.resolve(
          requests.map((r): ClaimResult => answers.shift() ?? { ok: true, zone: r.order({})[0]! }),
        );
      },
      ...options.store,
    },
    ec2ForRegion: () => regional,
    defaultRegion: 'us-east-1',
    tuning: {
      startAttempts: 10,
      retryDelayMs: 10_000,
      capacityMemoryMs: 0,
      ...options.tuning,
    },
    deployment: 'test',
    taskQueue: 'q',
    ...options.deps,
  } as unknown as ActivityDeps;
  const groups = new PlacementGroups(() => regional);
  const launch = launchActivities(deps, groups);
  const records = recordActivities(deps, groups, launch.prepareLaunch);
  return { claims, answers, launch, records };
}

/** Where a local activity of the workflow run `run` runs, with the start-to-close its proxy gives it. */
export function localActivityOf(
  run: typeof RUN,
  startToCloseTimeoutMs: number,
  scheduledAgoMs = 0,
) {
  return new MockActivityEnvironment({
    isLocal: true,
    workflowExecution: run,
    startToCloseTimeoutMs,
    // scheduled now (or `scheduledAgoMs` ago: a step that waited for a starved worker), its
    // step's end its start-to-close (as the first read's options: the mock's defaults, the
    // epoch and 1 s, would put the step's end long past)
    scheduledTimestampMs: Date.now() - scheduledAgoMs,
    scheduleToCloseTimeoutMs: startToCloseTimeoutMs + scheduledAgoMs,
  });
}
