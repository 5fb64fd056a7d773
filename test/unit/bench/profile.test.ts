import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  profiledCpuNote,
  profileText,
  readProfiles,
  summarizeProfiles,
  threadOf,
  type CpuProfile,
} from '../../../bench/profile';
import { sampledProfile } from '../../support/cpu-profiles';

/** A profile of one function sampled `n` times, 1 ms apart, plus the collector sampled `gc` times. */
function profileOf(fn: string, url: string, n: number, gc: number): CpuProfile {
  const nodes = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2, 3] },
    { id: 2, callFrame: { functionName: fn, url, lineNumber: 0 } },
    { id: 3, callFrame: { functionName: '(garbage collector)', url: '', lineNumber: -1 } },
  ];
  return sampledProfile(nodes, [...Array<number>(n).fill(2), ...Array<number>(gc).fill(3), 2]);
}

describe('threadOf', () => {
  it.each([
    ['CPU.20261126.191033.6617.0.001.cpuprofile', 'main (pid 6617)'],
    ['CPU.20261126.191033.6617.2.003.cpuprofile', 'thread 2 (pid 6617)'],
    ['worker.cpuprofile', undefined],
    ['CPU.20261126.191033.6617.x.001.cpuprofile', undefined],
  ])('%s is %s', (file, thread) => {
    expect(threadOf(file)).toBe(thread);
  });
});

describe('summarizeProfiles by thread', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'profile-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('tells the main thread from the workflow thread, main first, each with its own areas', () => {
    // the workflow thread's file sorts first by name; the summary still puts main first
    writeFileSync(
      join(dir, 'CPU.20261126.191033.6617.1.002.cpuprofile'),
      JSON.stringify(profileOf('runInContext', 'node:vm', 30, 10)),
    );
    writeFileSync(
      join(dir, 'CPU.20261126.191033.6617.0.001.cpuprofile'),
      JSON.stringify(
        profileOf('send', 'file:///x/node_modules/@smithy/core/dist/index.js', 50, 10),
      ),
    );
    const s = summarizeProfiles(readProfiles(dir));
    expect(s.busyMs).toBe(100);
    expect(s.threads.map((t) => [t.thread, t.busyMs])).toEqual([
      ['main (pid 6617)', 60],
      ['thread 1 (pid 6617)', 40],
    ]);
    expect(s.threads[1]!.areas.map((a) => [a.name, a.ms, a.percent])).toEqual([
      ['node', 30, 75],
      ['(garbage collector)', 10, 25],
    ]);
    // the process-wide areas are the threads' summed
    expect(s.areas.find((a) => a.name === '(garbage collector)')?.ms).toBe(20);
    const text = profileText(s);
    expect(text).toContain('main (pid 6617): 0.1 s sampled busy (60.0 % of all); its areas:');
    expect(text).toContain('thread 1 (pid 6617): 0.0 s sampled busy (40.0 % of all); its areas:');
  });

  it('leaves threads out for files not named by Node', () => {
    writeFileSync(join(dir, 'a.cpuprofile'), JSON.stringify(profileOf('f', 'node:x', 5, 0)));
    const s = summarizeProfiles(readProfiles(dir));
    expect(s.busyMs).toBe(5);
    expect(s.threads).toEqual([]);
  });
});

describe('profiledCpuNote: what a profiled run says beside its worker CPU', () => {
  it("says the figure holds the profiler's own CPU, at least how much a machine, and not to compare it with an unprofiled run", () => {
    // 50 ms a second for 60 s, one worker, 1,000 machines: 3.0 ms a machine
    const note = profiledCpuNote(1_000, 60_000, 1);
    expect(note).toContain('N=1000: profiled (--cpu-prof)');
    expect(note).toContain("includes the profiler's own CPU (~50 ms of CPU a second a worker");
    expect(note).toContain('at least 3.0 ms a machine over this 60.0 s phase with 1 worker(s)');
    expect(note).toContain("Not comparable with an unprofiled run's figure");
  });

  it('grows with the phase and the workers, not with the machines', () => {
    expect(profiledCpuNote(300, 120_000, 2)).toContain(
      'at least 40.0 ms a machine over this 120.0 s phase with 2 worker(s)',
    );
  });
});
