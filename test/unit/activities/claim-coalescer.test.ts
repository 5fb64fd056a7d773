import { claimCoalescer } from '../../../activities/launch';
import type { ClaimRequest } from '../../../state/zone-claim';

/**
 * Claims of one model's machines, as a burst's first reads bring them: one
 * every `gapMs`, on Jest's fake clock (so a busy machine's late timers cannot
 * change the rounds).
 */
async function claimSpaced(count: number, gapMs: number) {
  const rounds: number[] = [];
  const claims = claimCoalescer({
    claimZones: async (_model, requests) => {
      rounds.push(requests.length);
      // a round's DynamoDB calls
      await new Promise((r) => setTimeout(r, 5));
      return requests.map(() => ({ ok: true as const, zone: 'us-east-1a' }));
    },
  });
  const zones: Array<Promise<string>> = [];
  for (let i = 0; i < count; i++) {
    zones.push(claims.submit('m', { machineId: String(i) } as unknown as ClaimRequest));
    await jest.advanceTimersByTimeAsync(gapMs);
  }
  await jest.advanceTimersByTimeAsync(1_000);
  return { zones: await Promise.all(zones), rounds };
}

describe("the worker's zone claims (claimCoalescer)", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('makes claims arriving 20 ms apart in a few rounds, not one each: fewer rounds, fewer DynamoDB calls', async () => {
    const { zones, rounds } = await claimSpaced(30, 20);
    expect(zones).toEqual(Array.from({ length: 30 }, () => 'us-east-1a'));
    expect(rounds.reduce((a, b) => a + b, 0)).toBe(30);
    // ~600 ms of arrivals in rounds of at most 400 ms: 2–3 rounds (with a 15 ms idle window,
    // shorter than the gap, one round a claim: 30)
    expect(rounds.length).toBeGreaterThanOrEqual(2);
    expect(rounds.length).toBeLessThanOrEqual(3);
  });
});
