import type { ServiceContext } from '../../../service/context';
import { listModels, MODELS_PAGE_DEFAULT } from '../../../service/models';
import type { ModelRecord } from '../../../state/types';

/** A repository of `n` models (m000 …), counting the contents reads a summary makes. */
function contextOf(n: number) {
  const loads: string[] = [];
  const models: ModelRecord[] = Array.from({ length: n }, (_, i) => ({
    // listed in no particular order: the page is by name
    name: `m${String((i * 37) % n).padStart(3, '0')}`,
    uid: `uid-${i}`,
    region: 'us-east-1',
    constraints: '',
    harvestMode: 'all',
    availabilitySets: false,
    reprovisionLost: false,
    life: 'alive',
    createdAt: '2026-01-01T00:00:00.000Z',
  }));
  const ctx = {
    repo: {
      listModels: () => Promise.resolve(models),
      loadModel: (name: string) => {
        loads.push(name);
        return Promise.resolve({ machines: [], units: [] });
      },
    },
  } as unknown as ServiceContext;
  return { ctx, loads };
}

describe('listModels: pages', () => {
  it('a summary is one page of 100 models by name, reading only their contents, with a cursor to the rest', async () => {
    const { ctx, loads } = contextOf(250);
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await listModels(ctx, undefined, {
        summary: true,
        ...(cursor ? { cursor } : {}),
      });
      pages += 1;
      expect(page.models.length).toBeLessThanOrEqual(MODELS_PAGE_DEFAULT);
      expect(page.models.every((m) => m.summary?.machines === 0)).toBe(true);
      names.push(...page.models.map((m) => m.name));
      cursor = page.cursor;
    } while (cursor);
    expect(MODELS_PAGE_DEFAULT).toBe(100);
    expect(pages).toBe(3);
    expect(names).toEqual(Array.from({ length: 250 }, (_, i) => `m${String(i).padStart(3, '0')}`));
    // each model's contents read once over the three pages, never all in one request
    expect(loads.sort()).toEqual(names);
  });

  it('limit sets the page; without summary, limit or cursor every model comes at once', async () => {
    const { ctx, loads } = contextOf(5);
    const first = await listModels(ctx, undefined, { limit: 2 });
    expect(first.models.map((m) => m.name)).toEqual(['m000', 'm001']);
    expect(first.cursor).toEqual(expect.stringMatching(/^[A-Za-z0-9_-]+$/));
    const next = await listModels(ctx, undefined, { limit: 2, cursor: first.cursor! });
    expect(next.models.map((m) => m.name)).toEqual(['m002', 'm003']);
    const last = await listModels(ctx, undefined, { limit: 2, cursor: next.cursor! });
    expect(last).toEqual({ models: [expect.objectContaining({ name: 'm004' })] });
    const all = await listModels(ctx);
    expect(all.cursor).toBeUndefined();
    expect(all.models).toHaveLength(5);
    expect(loads).toEqual([]);
  });

  it.each([
    ['not base64 JSON', 'bm9wZQ'],
    ['another field', Buffer.from(JSON.stringify({ after: 'm001', x: 1 })).toString('base64url')],
    ['an empty name', Buffer.from(JSON.stringify({ after: '' })).toString('base64url')],
    ['padding', `${Buffer.from(JSON.stringify({ after: 'm001' })).toString('base64')}=`],
  ])('refuses a cursor the server did not make (%s): 400 invalid cursor', async (_what, cursor) => {
    const { ctx } = contextOf(3);
    await expect(listModels(ctx, undefined, { summary: true, cursor })).rejects.toMatchObject({
      code: 'bad-request',
      message: 'invalid cursor',
    });
  });
});
