import { launchTokenSeed, parseRunSeed } from '../../../temporal/launch-token';

/**
 * A launch's token seed is made by the workflow and read back by a first
 * read run again after its workflow task was lost (LAUNCH_IN_TASK,
 * activities/records.ts `zoneMarkedByThisRun`): only a seed of this very run
 * is read back, whatever its workflow id holds.
 */
const RUN = { workflowId: 'machine:bench:7', runId: '0e0c3a3e-4f5a-4b8e-9a55-1d3c3f0b2a11' };

describe('launch token seeds', () => {
  it('reads back the pass, attempt and zone of a seed its own run made', () => {
    const seed = launchTokenSeed(RUN, 3, 2, 'us-east-1b');
    expect(seed).toBe(`machine:bench:7/${RUN.runId}/3/2/us-east-1b`);
    expect(parseRunSeed(seed, RUN)).toEqual({ pass: 3, attempt: 2, zone: 'us-east-1b' });
  });

  it.each([
    ['another run of the same workflow', { ...RUN, runId: 'a1f6c0de-0000-4000-8000-000000000000' }],
    ['another workflow', { ...RUN, workflowId: 'machine:bench:8' }],
    // a workflow id that is a prefix of this one's: never taken for it
    ['a workflow whose id this one extends', { ...RUN, workflowId: 'machine:bench:7' + '0' }],
  ])('answers nothing for a seed of %s', (_what, other) => {
    const seed = launchTokenSeed(other, 1, 1, 'us-east-1a');
    expect(parseRunSeed(seed, RUN)).toBeUndefined();
  });

  it.each([
    ['no pass, attempt or zone', `machine:bench:7/${RUN.runId}/`],
    ['no zone', `machine:bench:7/${RUN.runId}/1/1`],
    ['an empty zone', `machine:bench:7/${RUN.runId}/1/1/`],
    ['a zone with a slash', `machine:bench:7/${RUN.runId}/1/1/us-east-1a/x`],
    ['a pass that is not a number', `machine:bench:7/${RUN.runId}/one/1/us-east-1a`],
    ['an attempt that is not a number', `machine:bench:7/${RUN.runId}/1/-1/us-east-1a`],
    ['an empty attempt', `machine:bench:7/${RUN.runId}/1//us-east-1a`],
    ['the run id alone', `machine:bench:7/${RUN.runId}`],
    ['an empty seed', ''],
  ])('answers nothing for a seed with %s', (_what, seed) => {
    expect(parseRunSeed(seed, RUN)).toBeUndefined();
  });

  it('reads back a seed of a workflow whose id holds slashes (its slashes come before the run id)', () => {
    const run = { workflowId: 'machine:team/a:1/lxd/0', runId: RUN.runId };
    const seed = launchTokenSeed(run, 1, 1, 'us-east-1c');
    expect(seed).toBe(`machine:team/a:1/lxd/0/${RUN.runId}/1/1/us-east-1c`);
    expect(parseRunSeed(seed, run)).toEqual({ pass: 1, attempt: 1, zone: 'us-east-1c' });
    // a run whose workflow id is the start of that one's never takes it for its own
    expect(
      parseRunSeed(seed, { workflowId: 'machine:team/a:1', runId: RUN.runId }),
    ).toBeUndefined();
    expect(parseRunSeed(seed, { workflowId: 'machine:team', runId: 'a:1' })).toBeUndefined();
  });
});
