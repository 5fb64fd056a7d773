import { claimCoalescer } from '../../../activities/launch';
import type { ClaimRequest } from '../../../state/zone-claim';

/** Claims of one model's machines, as a burst's first reads bring them: one every `gapMs`. */
async function claimSpaced(count: number, gapMs: number) {
  const rounds: number[] = [];
  const claims = claimCoalescer({
    claimZones: async (_model, requests) => {
      rounds.push(requests.length);
      // a round's two DynamoDB calls
      await new Promise((r) => setTimeout(r, 5));
      return requests.map(() => ({ ok: true as const, zone: 'us-east-1a' }));
    },
  });
  const zones: Array<Promise<string>> = [];
  for (let i = 0; i < count; i++) {
    zones.push(claims.submit('m', { machineId: String(i) } as unknown as ClaimRequest));
    await new Promise((r) => setTimeout(r, gapMs));
  }
  return { zones: await Promise.all(zones), rounds };
}

describe("the worker's zone claims (claimCoalescer)", () => {
  it('makes claims arriving 20 ms apart in a few rounds, not one each: a round is two DynamoDB calls', async () => {
    const { zones, rounds } = await claimSpaced(30, 20);
    expect(zones).toEqual(Array.from({ length: 30 }, () => 'us-east-1a'));
    expect(rounds.reduce((a, b) => a + b, 0)).toBe(30);
    // ~600 ms of arrivals in rounds of at most 400 ms: 2–3 rounds (one a claim with a 15 ms idle
    // window, shorter than the gap); 8 leaves room for a busy machine's late timers
    expect(rounds.length).toBeLessThanOrEqual(8);
  });
});
