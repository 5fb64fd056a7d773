import type { ActivityDeps } from '../../../activities/deps';
import { modelPage, sweeperActivities } from '../../../activities/sweeper';
import type { SweepReport } from '../../../activities/types';
import { provisioningTuning } from '../../../config/env';

describe('modelPage', () => {
  it.each<[string, string[], string | undefined, number, { page: string[]; next?: string }]>([
    ['all in one page', ['b', 'a'], undefined, 10, { page: ['a', 'b'] }],
    ['a first page', ['c', 'a', 'b'], undefined, 2, { page: ['a', 'b'], next: 'b' }],
    ['the page after', ['c', 'a', 'b'], 'b', 2, { page: ['c'] }],
    ['exactly a page', ['a', 'b'], undefined, 2, { page: ['a', 'b'] }],
    ['nothing after the last', ['a'], 'a', 2, { page: [] }],
    ['no models', [], undefined, 2, { page: [] }],
  ])('%s', (_label, names, after, limit, expected) => {
    expect(modelPage(names, after, limit)).toEqual(expected);
  });
});

function report(model: string, changes: Partial<SweepReport> = {}): SweepReport {
  return {
    model,
    modelGone: false,
    strays: [],
    terminated: [],
    restarted: [],
    instanceChanges: [],
    lost: [],
    reprovisioned: [],
    ...changes,
  };
}

describe('sweepModelPage', () => {
  const names = Array.from({ length: 5 }, (_, i) => `m${i}`);
  const deps = {
    repo: { listModels: () => Promise.resolve(names.map((name) => ({ name }))) },
    tuning: provisioningTuning({ PROVISIONER_SWEEP_INTERVAL: '7s' }),
  } as unknown as ActivityDeps;

  it('sweeps a page, reports only what changed and what failed, and where the next page starts', async () => {
    const swept: string[] = [];
    const { sweepModelPage } = sweeperActivities(deps, ({ model }) => {
      swept.push(model);
      if (model === 'm1') return Promise.reject(new Error('DescribeInstances: throttled'));
      return Promise.resolve(
        report(model, model === 'm2' ? { terminated: ['i-stray'], strays: ['i-stray'] } : {}),
      );
    });
    const first = await sweepModelPage({ limit: 3 });
    expect(swept.sort()).toEqual(['m0', 'm1', 'm2']);
    expect(first).toEqual({
      swept: 3,
      next: 'm2',
      intervalMs: 7000,
      changed: [report('m2', { terminated: ['i-stray'], strays: ['i-stray'] })],
      failed: [{ model: 'm1', error: 'DescribeInstances: throttled' }],
      tookMs: expect.any(Number) as number,
      listings: 0,
    });
    const second = await sweepModelPage({ after: 'm2', limit: 3 });
    expect(second).toEqual({
      swept: 2,
      intervalMs: 7000,
      changed: [],
      failed: [],
      tookMs: expect.any(Number) as number,
      listings: 0,
    });
    expect(swept.sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
  });
});
