import type { CpuProfile } from '../../bench/profile';

/**
 * A V8 CPU profile of `nodes` that took `samples` (node ids, in order) 1 ms
 * apart from time 0, as `node --cpu-prof` writes one (the bench's profile
 * tests); `thread` as its file name would tell it.
 */
export function sampledProfile(
  nodes: CpuProfile['nodes'],
  samples: number[],
  thread?: string,
): CpuProfile {
  return {
    nodes,
    startTime: 0,
    endTime: samples.length * 1000,
    samples,
    timeDeltas: samples.map(() => 1000),
    ...(thread !== undefined ? { thread } : {}),
  };
}
