import { join } from 'node:path';
import { categorize, ownFile } from '../../../bench/profile-categories';
import type { CpuProfile } from '../../../bench/profile';
import { sampledProfile } from '../../support/cpu-profiles';

const ROOT = join(__dirname, '..', '..', '..');
const own = (path: string) => `file://${join(ROOT, path)}`;

/**
 * A main-thread profile, 1 ms a sample: our claim calling into the AWS SDK's
 * DynamoDB marshalling (4 samples), the SDK's shared middleware alone (3),
 * our claim alone (2), the collector (1) and idle (5, left out).
 */
function profile(): CpuProfile {
  const f = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });
  const nodes = [
    { id: 1, callFrame: f('(root)', ''), children: [2, 4, 6, 7] },
    { id: 2, callFrame: f('claimOnce', own('state/zone-claim.ts')), children: [3] },
    { id: 3, callFrame: f('marshall', 'file:///x/node_modules/@aws-sdk/util-dynamodb/i.js') },
    { id: 4, callFrame: f('(anonymous)', 'file:///x/node_modules/@smithy/core/retry.js') },
    { id: 6, callFrame: f('(garbage collector)', '') },
    { id: 7, callFrame: f('(idle)', '') },
  ];
  return sampledProfile(nodes, [3, 3, 3, 3, 4, 4, 4, 2, 2, 6, 7, 7, 7, 7, 7, 3], 'main (pid 1)');
}

describe('categorize', () => {
  it('gives each sample to the first category on its stack, and counts it in every one and our files', () => {
    const s = categorize([profile()]);
    // the last sample has no next one to say how long it lasted
    expect(s.busyMs).toBe(10);
    expect(Object.fromEntries(s.owner)).toEqual({
      'AWS SDK: DynamoDB (client, marshalling)': 4,
      'AWS SDK: shared (middleware, serde, retries)': 3,
      'our code (not above)': 2,
      'garbage collector': 1,
    });
    expect(s.inclusive.get('our code (not above)')).toBe(6);
    expect(Object.fromEntries(s.ownFiles)).toEqual({ 'state/zone-claim.ts': 6 });
    expect(Object.fromEntries(s.ownFunctions)).toEqual({ 'claimOnce [state/zone-claim.ts:1]': 6 });
  });

  it('counts only the window asked for', () => {
    // samples at 1..16 ms: the window 5–9 ms holds the SDK's 3 samples and our 2
    const s = categorize([profile()], { fromUs: 5000, toUs: 9000 });
    expect(s.busyMs).toBe(5);
    expect(s.owner.get('AWS SDK: shared (middleware, serde, retries)')).toBe(3);
  });

  it('names our own files, never a package or Node', () => {
    expect(ownFile(own('activities/launch.ts'))).toBe('activities/launch.ts');
    expect(ownFile(own('node_modules/@smithy/core/x.js'))).toBeUndefined();
    expect(ownFile('node:internal/async_hooks')).toBeUndefined();
  });
});
