import { MockActivityEnvironment } from '@temporalio/testing';
import type { ActivityDeps } from '../../../activities/deps';
import { launchActivities, type ClaimZoneInput } from '../../../activities/launch';
import { zoneHeldByThisRun } from '../../../activities/records';
import type { InstanceTypeInfo } from '../../../core';
import { PlacementGroups } from '../../../ec2/placement-groups';
import type { RegionalEc2 } from '../../../ec2/regional';
import type { ClaimRequest, ClaimResult } from '../../../state/zone-claim';
import { machineClaimItem } from '../../../state/zone-count-items';
import type { LaunchPlan } from '../../../activities/types';
import { claimantOf, launchTokenSeed } from '../../../temporal/launch-token';

/**
 * Issue 26, LAUNCH_IN_TASK, the review's findings 1 and 2: a zone claim
 * records the run and attempt that made it (`claimedBy`), and a first read
 * or claim step of that run, run again for the same attempt (its workflow
 * task was lost: the launch it ran may be out, or still waiting unmarked in
 * its batch), keeps that zone instead of claiming again, so its launch has
 * the lost one's token seed.
 */

const RUN = { workflowId: 'machine:m:0', runId: '5d2a6c1e-8a7b-4c1f-9e0b-3f6f4c9d2a10' };
const OTHER_RUN = { ...RUN, runId: '9b1e7f3a-0c2d-4e5f-8a9b-0c1d2e3f4a5b' };

describe('claimantOf', () => {
  it('names the run and the attempt', () => {
    expect(claimantOf(RUN, 3)).toBe(`machine:m:0/${RUN.runId}/3`);
  });
});

describe('a claim written with who made it', () => {
  const claim = (claimedBy?: string) =>
    machineClaimItem('t', 'm', '0', {
      m: { applications: [] },
      zone: 'z1',
      partition: undefined,
      groups: [],
      ...(claimedBy !== undefined ? { claimedBy } : {}),
      now: 'now',
    }).Update!;

  it('sets claimedBy with the zone', () => {
    const update = claim(claimantOf(RUN, 1));
    expect(update.UpdateExpression).toContain('#zoneClaim = :zone');
    expect(update.UpdateExpression).toContain('#claimedBy = :claimedBy');
    expect(update.UpdateExpression).toBe(
      'SET #zoneClaim = :zone, #countedZone = :zone, #countedGroups = :groups, ' +
        '#updatedAt = :now, #claimedBy = :claimedBy REMOVE #countedPartition',
    );
    expect(update.ExpressionAttributeNames).toMatchObject({ '#claimedBy': 'claimedBy' });
    expect(update.ExpressionAttributeValues).toMatchObject({ ':claimedBy': claimantOf(RUN, 1) });
  });

  it('removes an earlier claimant when the claim names none (a step outside a run)', () => {
    const update = claim();
    expect(update.UpdateExpression).toBe(
      'SET #zoneClaim = :zone, #countedZone = :zone, #countedGroups = :groups, ' +
        '#updatedAt = :now REMOVE #countedPartition, #claimedBy',
    );
    expect(update.ExpressionAttributeValues).not.toHaveProperty(':claimedBy');
  });
});

describe('zoneHeldByThisRun', () => {
  const item = (fields: Record<string, unknown>) => ({ life: 'alive', ...fields });
  it.each([
    [
      "this run's attempt-1 claim, no launch marked yet (waiting in its batch)",
      item({ zoneClaim: 'us-east-1b', claimedBy: claimantOf(RUN, 1) }),
      RUN,
      'us-east-1b',
    ],
    [
      "another run's claim",
      item({ zoneClaim: 'us-east-1b', claimedBy: claimantOf(OTHER_RUN, 1) }),
      RUN,
      undefined,
    ],
    [
      "this run's claim for attempt 2 (not what a first read makes)",
      item({ zoneClaim: 'us-east-1b', claimedBy: claimantOf(RUN, 2) }),
      RUN,
      undefined,
    ],
    [
      'a claimant without a claim (released, or made the zone by a recorded launch)',
      item({ claimedBy: claimantOf(RUN, 1) }),
      RUN,
      undefined,
    ],
    [
      'a claim written before claims named their claimant, with this run’s launch marker',
      item({
        zoneClaim: 'us-east-1c',
        launchBatch: { batchId: 'b', tokenSeed: launchTokenSeed(RUN, 1, 1, 'us-east-1c') },
      }),
      RUN,
      'us-east-1c',
    ],
    [
      'no run to compare',
      item({ zoneClaim: 'us-east-1b', claimedBy: claimantOf(RUN, 1) }),
      undefined,
      undefined,
    ],
  ])('%s', (_what, it, run, zone) => {
    expect(zoneHeldByThisRun(it, run)).toBe(zone);
  });
});

const catalogue: InstanceTypeInfo[] = [
  { name: 't3.small', arches: ['amd64'], cores: 2, mem: 2048 },
];
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const PLAN = {
  region: 'us-east-1',
  instanceType: 't3.small',
  imageId: 'ami-1',
  applications: [],
  zonesConstraint: [],
} as unknown as LaunchPlan;

/** The claim step over fakes: the machine's claim as `held` says; every claim asked is kept. */
function setup(held: { zoneClaim?: string; claimedBy?: string; life?: string } | undefined) {
  const claims: ClaimRequest[] = [];
  const reads: string[] = [];
  const regional = {
    region: 'us-east-1',
    ec2: {},
    catalogue: {
      all: () => Promise.resolve(catalogue),
      zonesOffering: (_type: string, zones: readonly string[]) => Promise.resolve([...zones]),
    },
    zones: { zones: () => Promise.resolve(ZONES.map((name) => ({ name, state: 'available' }))) },
  } as unknown as RegionalEc2;
  const deps = {
    repo: {},
    store: {
      claimHolder: (_model: string, machineId: string) => {
        reads.push(machineId);
        return Promise.resolve(held);
      },
      claimZones: (_model: string, requests: readonly ClaimRequest[]) => {
        claims.push(...requests);
        return Promise.resolve(
          requests.map((r): ClaimResult => ({ ok: true, zone: r.order({})[0]! })),
        );
      },
    },
    ec2ForRegion: () => regional,
    defaultRegion: 'us-east-1',
    tuning: {
      startAttempts: 10,
      retryDelayMs: 10_000,
      capacityMemoryMs: 0,
      launchBatchIdleMs: 10,
      launchBatchMaxMs: 10,
    },
    deployment: 'test',
    taskQueue: 'q',
  } as unknown as ActivityDeps;
  const { claimZone } = launchActivities(deps, new PlacementGroups(() => regional));
  const step = (input: Partial<ClaimZoneInput>, run?: typeof RUN) => {
    const full: ClaimZoneInput = {
      model: 'm',
      machineId: '0',
      plan: PLAN,
      exclude: [],
      attempt: 1,
      maxAttempts: 10,
      ...input,
    };
    if (!run) return claimZone(full);
    const env = new MockActivityEnvironment({
      isLocal: true,
      workflowExecution: run,
      startToCloseTimeoutMs: 30_000,
    });
    return env.run(claimZone, full);
  };
  return { claims, reads, step };
}

describe('the claim step (claimZone)', () => {
  it('keeps the zone its own run claimed for this attempt, and claims nothing', async () => {
    const t = setup({ zoneClaim: 'us-east-1c', claimedBy: claimantOf(RUN, 1), life: 'alive' });
    await expect(t.step({}, RUN)).resolves.toBe('us-east-1c');
    expect(t.claims).toEqual([]);
    expect(t.reads).toEqual(['0']);
  });

  it.each([
    [
      'another run claimed it',
      { zoneClaim: 'us-east-1c', claimedBy: claimantOf(OTHER_RUN, 1) },
      {},
    ],
    [
      'it was claimed for another attempt',
      { zoneClaim: 'us-east-1c', claimedBy: claimantOf(RUN, 1) },
      { attempt: 2 },
    ],
    [
      'its zone failed in this attempt',
      { zoneClaim: 'us-east-1c', claimedBy: claimantOf(RUN, 1) },
      { exclude: ['us-east-1c'] },
    ],
    ['the machine holds no claim', { claimedBy: claimantOf(RUN, 1) }, {}],
    [
      'the machine is Dead',
      { zoneClaim: 'us-east-1c', claimedBy: claimantOf(RUN, 1), life: 'dead' },
      {},
    ],
  ])('claims afresh when %s, naming this run and attempt', async (_what, held, input) => {
    const t = setup(held);
    // the fakes answer a fresh claim with the first zone in order
    await expect(t.step(input, RUN)).resolves.toBe('us-east-1a');
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]!.claimedBy).toBe(
      claimantOf(RUN, (input as { attempt?: number }).attempt ?? 1),
    );
  });

  it('outside a run (no workflow to compare) claims without reading or naming a claimant', async () => {
    const t = setup({ zoneClaim: 'us-east-1c', claimedBy: claimantOf(RUN, 1) });
    await expect(t.step({})).resolves.toBe('us-east-1a');
    expect(t.reads).toEqual([]);
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]!.claimedBy).toBeUndefined();
  });
});
