import type { ClaimZoneInput } from '../../../activities/launch';
import { zoneHeldByThisRun, zoneMarkedByThisRun } from '../../../activities/records';
import type { LaunchPlan } from '../../../activities/types';
import { machineClaimItem } from '../../../state/zone-count-items';
import type { CreatedMachine } from '../../../temporal/created-machine';
import { NoSuitableZoneError, type InstanceTypeInfo } from '../../../core';
import { FAILURE } from '../../../temporal/failures';
import { claimantOf, launchTokenSeed } from '../../../temporal/launch-token';
import type { ClaimRequest } from '../../../state/zone-claim';
import { heldZone, StaleViewError } from '../../../state/zone-claim';
import { machineView, type MachineView } from '../../../state/zone-count-reads';
import type { MachineRecord } from '../../../state/types';
import { firstReadFakes, localActivityOf, RUN, ZONES } from '../../support/first-read';
import { machineItem as itemOf } from '../../support/machines';

/**
 * Issue 26, LAUNCH_IN_TASK (workflows/patches.ts): a machine's first read
 * plans and claims, and says the launch runs in the same workflow task
 * (`launchInTask`). If that task is lost (its worker died while the launch
 * ran), the first read runs again: when it finds the launch marker this
 * very run made for attempt 1, with the machine still claimed in that zone,
 * it answers that zone and claims nothing, so the launch run again has the
 * same token seed and finds its batch.
 */

const OTHER_RUN = { ...RUN, runId: '9b1e7f3a-0c2d-4e5f-8a9b-0c1d2e3f4a5b' };

/** The marker a launch batch leaves on its member (state/launch-batches.ts). */
const markerOf = (run: typeof RUN, pass: number, attempt: number, zone: string) => ({
  batchId: 'b-1',
  tokenSeed: launchTokenSeed(run, pass, attempt, zone),
});

describe('zoneMarkedByThisRun', () => {
  it.each([
    [
      "this run's attempt-1 marker, the machine still claimed in its zone",
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: markerOf(RUN, 1, 1, 'us-east-1b') }),
      RUN,
      'us-east-1b',
    ],
    [
      "this run's attempt-1 marker of a later pass (one carried by continue-as-new)",
      itemOf({ zoneClaim: 'us-east-1c', launchBatch: markerOf(RUN, 4, 1, 'us-east-1c') }),
      RUN,
      'us-east-1c',
    ],
    [
      "another run's marker (the run before this one continued as new)",
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: markerOf(OTHER_RUN, 1, 1, 'us-east-1b') }),
      RUN,
      undefined,
    ],
    [
      "this run's marker of attempt 2",
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: markerOf(RUN, 1, 2, 'us-east-1b') }),
      RUN,
      undefined,
    ],
    [
      "this run's marker, the claim moved to another zone since (a failover)",
      itemOf({ zoneClaim: 'us-east-1c', launchBatch: markerOf(RUN, 1, 1, 'us-east-1b') }),
      RUN,
      undefined,
    ],
    [
      "this run's marker, the claim released since",
      itemOf({ launchBatch: markerOf(RUN, 1, 1, 'us-east-1b') }),
      RUN,
      undefined,
    ],
    ['no marker', itemOf({ zoneClaim: 'us-east-1b' }), RUN, undefined],
    [
      'a marker without a token seed',
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: { batchId: 'b-1' } }),
      RUN,
      undefined,
    ],
    [
      'a marker whose seed is no seed of this run',
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: { batchId: 'b-1', tokenSeed: 'us-east-1b' } }),
      RUN,
      undefined,
    ],
    [
      'no run (not called for a workflow)',
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: markerOf(RUN, 1, 1, 'us-east-1b') }),
      undefined,
      undefined,
    ],
  ])('%s', (_what, item, run, zone) => {
    expect(zoneMarkedByThisRun(item, run)).toBe(zone);
  });
});

const catalogue: InstanceTypeInfo[] = [
  { name: 't3.small', arches: ['amd64'], cores: 2, mem: 2048 },
  { name: 't3.xlarge', arches: ['amd64'], cores: 4, mem: 16384 },
];
/** A plan, for the claim step (it plans nothing itself). */
const PLAN = {
  region: 'us-east-1',
  instanceType: 't3.small',
  imageId: 'ami-1',
  applications: [],
  zonesConstraint: [],
} as unknown as LaunchPlan;

/**
 * A machine's first read and preparation over fakes: the table holds `item`
 * (undefined: no machine), each zone claim is answered by `answers` in turn
 * (or the claim's own first choice), and every claim asked is kept.
 */
function setup(item: Record<string, unknown> | undefined) {
  const {
    claims,
    answers,
    launch: { prepareLaunch, claimZone },
    records,
  } = firstReadFakes({
    item,
    catalogue,
    tuning: { launchBatchIdleMs: 10, launchBatchMaxMs: 10 },
  });
  /** The claim step for attempt 1 (or as `input` says), as a local activity of `run` runs it. */
  const claimStep = (input: Partial<ClaimZoneInput>, run?: typeof RUN) => {
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
    return localActivityOf(run, 30_000).run(claimZone, full);
  };
  /** The first read with `prepare`, as a local activity of `run` runs it (or outside any). */
  const firstRead = (run?: typeof RUN, created?: CreatedMachine) => {
    const read = () =>
      records.loadMachine({
        model: 'm',
        machineId: '0',
        prepare: true,
        ...(created ? { created } : {}),
      });
    if (!run) return read();
    return localActivityOf(run, 60_000).run<[], Awaited<ReturnType<typeof read>>, typeof read>(
      read,
    );
  };
  return { claims, answers, prepareLaunch, firstRead, claimStep };
}

const TUNING = { startAttempts: 10, retryDelayMs: 10_000 };
const REF = { model: 'm', machineId: '0' };
const machineOf = (item: Record<string, unknown>) => item as unknown as MachineRecord;

/** What add-machine wrote (MachineWorkflowInput.created). */
const CREATED: CreatedMachine = {
  modelUid: 'uid-1',
  region: 'us-east-1',
  availabilitySets: false,
  base: 'ubuntu@24.04',
  constraints: '',
  applications: [],
};

describe('prepareLaunch', () => {
  it('answers the held zone with launchInTask, and claims nothing', async () => {
    const item = itemOf({ status: 'allocating', zoneClaim: 'us-east-1c' });
    const t = setup(item);
    const answer = await t.prepareLaunch(
      REF,
      machineOf(item),
      machineView(item),
      TUNING,
      undefined,
      'us-east-1c',
    );
    expect(answer).toEqual({
      plan: expect.objectContaining({ instanceType: 't3.small', imageId: 'ami-1' }),
      zone: 'us-east-1c',
      launchInTask: true,
    });
    expect(t.claims).toEqual([]);
  });

  it('claims from a read and answers the zone with launchInTask', async () => {
    const item = itemOf();
    const t = setup(item);
    const answer = await t.prepareLaunch(REF, machineOf(item), machineView(item), TUNING);
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]).toMatchObject({ machineId: '0', groups: [] });
    expect(t.claims[0]!.strict).toBeUndefined();
    expect(answer).toEqual({
      plan: expect.objectContaining({ instanceType: 't3.small' }),
      zone: 'us-east-1a',
      launchInTask: true,
    });
  });

  it("claims from a creation's word (strictly) and answers the zone with launchInTask", async () => {
    const item = itemOf();
    const t = setup(item);
    t.answers.push({ ok: true, zone: 'us-east-1b' });
    const answer = await t.prepareLaunch(REF, machineOf(item), machineView(item), TUNING, {
      model: { name: 'm', uid: 'uid-1', region: 'us-east-1', availabilitySets: false },
    });
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]!.strict).toBe(true);
    expect(answer).toEqual({
      plan: expect.objectContaining({ instanceType: 't3.small' }),
      zone: 'us-east-1b',
      launchInTask: true,
    });
  });

  it("answers 'stale' alone when the creation's claim found the machine changed", async () => {
    const item = itemOf();
    const t = setup(item);
    t.answers.push({ ok: false, error: new StaleViewError('machine 0 is not as created') });
    const answer = await t.prepareLaunch(REF, machineOf(item), machineView(item), TUNING, {
      model: { name: 'm', uid: 'uid-1', region: 'us-east-1', availabilitySets: false },
    });
    expect(answer).toBe('stale');
  });

  it('answers a failed claim or plan without launchInTask (the launch is not next)', async () => {
    const item = itemOf();
    const t = setup(item);
    t.answers.push({ ok: false, error: new NoSuitableZoneError('no zone offers t3.small') });
    const failedClaim = await t.prepareLaunch(REF, machineOf(item), machineView(item), TUNING);
    expect(failedClaim).toEqual({
      plan: expect.objectContaining({ instanceType: 't3.small' }),
      claimFailure: { type: FAILURE.noSuitableZone, message: 'no zone offers t3.small' },
    });
    const huge = itemOf({ constraints: 'mem=1024G' });
    const failedPlan = await t.prepareLaunch(REF, machineOf(huge), machineView(huge), TUNING);
    expect(failedPlan).toEqual({
      planFailure: { type: FAILURE.planFailed, message: expect.any(String) },
    });
    // a held zone does not hide a plan that fails
    const held = await t.prepareLaunch(
      REF,
      machineOf(huge),
      machineView(huge),
      TUNING,
      undefined,
      'us-east-1a',
    );
    expect(held).toEqual(failedPlan);
  });
});

describe("a machine's first read, run again after its workflow task was lost", () => {
  it('answers the zone its own run marked a launch in, and claims nothing', async () => {
    const item = itemOf({
      status: 'allocating',
      zoneClaim: 'us-east-1b',
      launchBatch: markerOf(RUN, 1, 1, 'us-east-1b'),
    });
    const t = setup(item);
    const answer = await t.firstRead(RUN);
    expect(answer).toMatchObject({
      life: 'alive',
      prepared: { zone: 'us-east-1b', launchInTask: true, plan: { instanceType: 't3.small' } },
    });
    expect(t.claims).toEqual([]);
  });

  it("claims afresh when the marker is another run's, or there is no run", async () => {
    const item = itemOf({
      status: 'allocating',
      zoneClaim: 'us-east-1b',
      launchBatch: markerOf(OTHER_RUN, 1, 1, 'us-east-1b'),
    });
    const t = setup(item);
    t.answers.push({ ok: true, zone: 'us-east-1a' }, { ok: true, zone: 'us-east-1c' });
    expect((await t.firstRead(RUN))?.prepared).toMatchObject({
      zone: 'us-east-1a',
      launchInTask: true,
    });
    expect(t.claims).toHaveLength(1);
    // called outside any activity (no run to compare): a claim as before
    const mine = setup(
      itemOf({ zoneClaim: 'us-east-1b', launchBatch: markerOf(RUN, 1, 1, 'us-east-1b') }),
    );
    mine.answers.push({ ok: true, zone: 'us-east-1c' });
    expect((await mine.firstRead())?.prepared).toMatchObject({ zone: 'us-east-1c' });
    expect(mine.claims).toHaveLength(1);
  });

  it("falls back from a creation's word (the machine is claimed now) to the read, and answers the marked zone", async () => {
    const item = itemOf({
      status: 'allocating',
      zoneClaim: 'us-east-1c',
      launchBatch: markerOf(RUN, 1, 1, 'us-east-1c'),
    });
    const t = setup(item);
    // the strict claim from the creation: refused, the machine is allocating
    t.answers.push({ ok: false, error: new StaleViewError('machine 0 is not as created') });
    const answer = await t.firstRead(RUN, CREATED);
    expect(answer?.prepared).toMatchObject({ zone: 'us-east-1c', launchInTask: true });
    expect(answer?.prepared?.fromCreation).toBeUndefined();
    // the strict claim only: no second claim from the read
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]!.strict).toBe(true);
  });
});

/**
 * The review's findings 1 and 2: a zone claim records the run and attempt
 * that made it (`claimedBy`), and a first read or claim step of that run,
 * run again for the same attempt (its workflow task was lost: the launch it
 * ran may be out, or still waiting unmarked in its batch), keeps that zone
 * instead of claiming again, so its launch has the lost one's token seed.
 */
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
      "another claimant's claim, beside this run's launch marker (the claim moved on since)",
      item({
        zoneClaim: 'us-east-1c',
        claimedBy: claimantOf(OTHER_RUN, 1),
        launchBatch: { batchId: 'b', tokenSeed: launchTokenSeed(RUN, 1, 1, 'us-east-1c') },
      }),
      RUN,
      undefined,
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

describe('the claim step (claimZone)', () => {
  it.each([
    ['attempt 1', {}, 1, []],
    [
      'attempt 2, after failing in a zone',
      { attempt: 2, exclude: ['us-east-1c'] },
      2,
      ['us-east-1c'],
    ],
  ])(
    'asks the claim as this run and attempt, with the zones it failed in (%s)',
    async (_what, input, attempt, exclude) => {
      const t = setup(itemOf());
      await expect(t.claimStep(input, RUN)).resolves.toBe('us-east-1a');
      expect(t.claims).toHaveLength(1);
      expect(t.claims[0]!.claimedBy).toBe(claimantOf(RUN, attempt));
      expect(t.claims[0]!.exclude).toEqual(exclude);
    },
  );

  it('outside a run (no workflow to compare) names no claimant', async () => {
    const t = setup(itemOf());
    await expect(t.claimStep({})).resolves.toBe('us-east-1a');
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]!.claimedBy).toBeUndefined();
    expect(t.claims[0]!.exclude).toBeUndefined();
  });

  it('in a run without an attempt (a machineWorkflow run, unbatched) names no claimant', async () => {
    const t = setup(itemOf());
    await expect(t.claimStep({ attempt: undefined, maxAttempts: undefined }, RUN)).resolves.toBe(
      'us-east-1a',
    );
    expect(t.claims).toHaveLength(1);
    expect(t.claims[0]!.claimedBy).toBeUndefined();
    expect(t.claims[0]!.status).toBeUndefined();
  });
});

describe("heldZone (the claim keeps its own claimant's zone)", () => {
  const mine = claimantOf(RUN, 1);
  const request = (fields: Partial<ClaimRequest> = {}): ClaimRequest => ({
    machineId: '0',
    groups: [],
    order: () => ZONES,
    claimedBy: mine,
    exclude: [],
    ...fields,
  });
  const view = (fields: Partial<MachineView> = {}): MachineView => ({
    exists: true,
    life: 'alive',
    zoneClaim: 'us-east-1c',
    countedZone: 'us-east-1c',
    claimedBy: mine,
    ...fields,
  });
  it.each([
    ['its own claim, counted there', request(), view(), 'us-east-1c'],
    ["another run's claim", request(), view({ claimedBy: claimantOf(OTHER_RUN, 1) }), undefined],
    ['a claim for another attempt', request({ claimedBy: claimantOf(RUN, 2) }), view(), undefined],
    ['its zone failed in this attempt', request({ exclude: ['us-east-1c'] }), view(), undefined],
    ['no claim held', request(), view({ zoneClaim: undefined }), undefined],
    ['a claim not counted in its zone', request(), view({ countedZone: 'us-east-1a' }), undefined],
    ['a request naming no claimant', request({ claimedBy: undefined }), view(), undefined],
    ['a claim that names no claimant', request(), view({ claimedBy: undefined }), undefined],
  ])('%s', (_what, req, m, zone) => {
    expect(heldZone(req, m)).toBe(zone);
  });
});
