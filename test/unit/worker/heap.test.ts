import { execFileSync } from 'node:child_process';
import { workerNodeOptions } from '../../../worker/heap';

/**
 * The young generation (MiB) a Node process gets with `NODE_OPTIONS`, read
 * as its heap limit less an old generation fixed at 256 MiB (a 1 GiB task's
 * quarter): V8's young generation is three semi-spaces.
 */
function youngGenerationMiB(nodeOptions: string): number {
  const out = execFileSync(
    process.execPath,
    [
      '--max-old-space-size=256',
      '-e',
      'process.stdout.write(String(require("node:v8").getHeapStatistics().heap_size_limit))',
    ],
    { env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions }, encoding: 'utf8' },
  );
  return Number(out) / 2 ** 20 - 256;
}

describe('workerNodeOptions', () => {
  it('sets 16 MiB semi-spaces, in a form Node takes from NODE_OPTIONS (the task definition passes it so)', () => {
    expect(workerNodeOptions()).toEqual(['--max-semi-space-size=16']);
    // Node refuses an option NODE_OPTIONS does not allow: execFileSync would throw; V8's young
    // generation is three semi-spaces, 16 MiB each, the size every bench figure was measured with
    expect(youngGenerationMiB(workerNodeOptions().join(' '))).toBe(48);
    // and it is not V8's floor, which is what a 1 GiB task derives
    expect(youngGenerationMiB('--max-semi-space-size=1')).toBe(3);
  });
});
