import { parseArgs } from '../../../bench/args';
import { parseStarvation, runningShare, starve } from '../../../bench/starve';

describe('--starve-worker STOP/RUN', () => {
  it('reads seconds into milliseconds and the share of the time running', () => {
    const s = parseStarvation('0.3/0.05');
    expect(s).toEqual({ stopMs: 300, runMs: 50 });
    expect(runningShare(s as { stopMs: number; runMs: number })).toBeCloseTo(50 / 350, 6);
    expect(parseArgs(['--sizes', '1000', '--starve-worker', '0.2/0.1']).starveWorker).toEqual({
      stopMs: 200,
      runMs: 100,
    });
    expect(parseArgs(['--sizes', '1000']).starveWorker).toBeUndefined();
  });

  it.each(['', '0.3', '0.3/', '/0.05', '0/0.05', '0.3/0', '11/1', 'a/b', '0.3/0.05/1', '-1/1'])(
    'refuses %p naming the flag and what it takes',
    (text) => {
      expect(() => parseArgs(['--starve-worker', text])).toThrow(
        `--starve-worker takes STOP/RUN in seconds, each from 0.01 to 10 (e.g. 0.3/0.05), got ${text}`,
      );
    },
  );

  it('pulses each process group stopped then continued, and continues every one last', async () => {
    const sent: string[] = [];
    const starver = starve([11, 22], { stopMs: 10, runMs: 10 }, (pid, sig) => {
      sent.push(`${sig} ${pid}`);
    });
    // wait for a few whole pulses, however slow the machine
    for (let i = 0; i < 500 && starver.pulses < 3; i++) await new Promise((r) => setTimeout(r, 10));
    await starver.stop();
    expect(starver.pulses).toBeGreaterThanOrEqual(3);
    // groups, not single processes: the workers are spawned detached
    expect(sent.slice(0, 4)).toEqual(['SIGSTOP -11', 'SIGSTOP -22', 'SIGCONT -11', 'SIGCONT -22']);
    expect(sent.slice(-2)).toEqual(['SIGCONT -11', 'SIGCONT -22']);
    // each stop of both groups is followed by a continue of both before the next stop
    const rounds = sent.join(',').split('SIGSTOP -11,SIGSTOP -22,').slice(1);
    expect(rounds.length).toBeGreaterThanOrEqual(3);
    for (const round of rounds) expect(round.startsWith('SIGCONT -11,SIGCONT -22')).toBe(true);
  });

  it('stop() ends a long stop at once, continuing the groups, and leaves no exit listener', async () => {
    const listeners = process.listenerCount('exit');
    const sent: string[] = [];
    const starver = starve([11], { stopMs: 10_000, runMs: 10 }, (pid, sig) => {
      sent.push(`${sig} ${pid}`);
    });
    expect(process.listenerCount('exit')).toBe(listeners + 1);
    const began = Date.now();
    await starver.stop();
    // far below the 10 s stop it was in, on however busy a machine
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(sent[0]).toBe('SIGSTOP -11');
    expect(sent.at(-1)).toBe('SIGCONT -11');
    expect(process.listenerCount('exit')).toBe(listeners);
  });

  it('refuses to run with no worker process', () => {
    expect(() => starve([], { stopMs: 10, runMs: 10 }, () => undefined)).toThrow(
      '--starve-worker: no worker process to starve',
    );
  });

  it('a refusal other than a group gone (EPERM) ends the pulses, and stop() rejects with it', async () => {
    const sent: string[] = [];
    const starver = starve([11, 22], { stopMs: 10, runMs: 10 }, (pid, sig) => {
      if (pid === -22 && sig === 'SIGSTOP') {
        throw Object.assign(new Error('kill EPERM'), { code: 'EPERM' });
      }
      sent.push(`${sig} ${pid}`);
    });
    await expect(starver.stop()).rejects.toThrow('kill EPERM');
    // one round, then every group continued
    expect(starver.pulses).toBe(1);
    expect(sent.slice(-2)).toEqual(['SIGCONT -11', 'SIGCONT -22']);
  });

  it('a group gone (ESRCH) is skipped, the others still pulsed and continued', async () => {
    const sent: string[] = [];
    const starver = starve([11, 22], { stopMs: 10, runMs: 10 }, (pid, sig) => {
      if (pid === -11) throw Object.assign(new Error('kill ESRCH'), { code: 'ESRCH' });
      sent.push(`${sig} ${pid}`);
    });
    for (let i = 0; i < 500 && starver.pulses < 1; i++) await new Promise((r) => setTimeout(r, 10));
    await starver.stop();
    expect(sent[0]).toBe('SIGSTOP -22');
    expect(sent.at(-1)).toBe('SIGCONT -22');
  });
});
