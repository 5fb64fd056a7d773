import {
  bucketsLeft,
  EC2_INSTANCE_BUCKET,
  EC2_REQUEST_BUCKET,
  estimateLaunch,
  fullAtAfter,
  KEY_ACTIVE_SPACINGS,
  MAX_INSTANCES_PER_CALL,
  recordSend,
  reserveSend,
  spacedUntil,
  tokenAvailableAt,
  tokensLeft,
  type LaunchBudget,
  type KeySpacing,
  type LaunchRecord,
} from '../../../core/launch-estimate';

const budget: LaunchBudget = {
  requests: EC2_REQUEST_BUCKET,
  instances: EC2_INSTANCE_BUCKET,
  maxPerCall: MAX_INSTANCES_PER_CALL,
  batchWaitSeconds: 1,
  roundTripSeconds: 2,
};

describe('tokenAvailableAt: a full bucket gives its burst at once, then its rate', () => {
  it.each([
    [{ burst: 5, perSecond: 2 }, 1, 0],
    [{ burst: 5, perSecond: 2 }, 5, 0],
    [{ burst: 5, perSecond: 2 }, 6, 0.5],
    [{ burst: 5, perSecond: 2 }, 25, 10],
    [{ burst: 1000, perSecond: 2 }, 1200, 100],
    [{ burst: 1, perSecond: 0 }, 2, Number.POSITIVE_INFINITY],
  ])('%o: token %i at %d s', (bucket, n, seconds) => {
    expect(tokenAvailableAt(bucket, n)).toBe(seconds);
  });
});

describe('estimateLaunch', () => {
  it('launches nothing in no time and says nothing', () => {
    expect(estimateLaunch([], budget)).toEqual({ seconds: 0, calls: 0, notes: [] });
    expect(estimateLaunch([0, 0], budget)).toEqual({ seconds: 0, calls: 0, notes: [] });
  });

  it('within both bursts: the batch wait and one round trip', () => {
    // 3 machines in 3 zones: 3 calls, 3 instances, both within the burst
    expect(estimateLaunch([1, 1, 1], budget)).toEqual({ seconds: 3, calls: 3, notes: [] });
    // 1,000 machines over 5 zones: 5 calls, 1,000 instances: still the burst
    expect(estimateLaunch([200, 200, 200, 200, 200], budget)).toEqual({
      seconds: 3,
      calls: 5,
      notes: [],
    });
  });

  it("over the instance bucket: the rest at its rate, and a note in the contract's words", () => {
    // 1,200 over 6 zones: 1,000 at once, 200 more at 2 a second = 100 s
    const e = estimateLaunch([200, 200, 200, 200, 200, 200], budget);
    expect(e.notes).toEqual([
      '1,200 machines over the next 100 s: 1,000 at once, then 2 a second',
      '6 RunInstances calls over the next 1 s: 5 at once, then 2 a second',
    ]);
    expect(e.calls).toBe(6);
    expect(e.seconds).toBe(1 + 100 + 2);
  });

  it('over the request bucket: calls paced at its rate', () => {
    // 25 specs (e.g. 25 zones × types): 5 at once, 20 more at 2 a second = 10 s
    const e = estimateLaunch(
      Array.from({ length: 25 }, () => 1),
      budget,
    );
    expect(e).toEqual({
      seconds: 1 + 10 + 2,
      calls: 25,
      notes: ['25 RunInstances calls over the next 10 s: 5 at once, then 2 a second'],
    });
  });

  it('a batch larger than one call takes several calls', () => {
    const e = estimateLaunch([2500], { ...budget, instances: { burst: 5000, perSecond: 2 } });
    expect(e.calls).toBe(3);
    expect(e.seconds).toBe(3);
  });

  it('the slower bucket decides', () => {
    const slowCalls = { ...budget, requests: { burst: 1, perSecond: 0.1 } };
    // 3 calls: the 3rd token 20 s away; instances within their burst
    expect(estimateLaunch([1, 1, 1], slowCalls).seconds).toBe(1 + 20 + 2);
    const fewInstances = { ...budget, instances: { burst: 2, perSecond: 1 } };
    // 4 instances: the 4th 2 s away; one call
    expect(estimateLaunch([4], fewInstances)).toEqual({
      seconds: 1 + 2 + 2,
      calls: 1,
      notes: ['4 machines over the next 2 s: 2 at once, then 1 a second'],
    });
  });
});

describe('tokensLeft and fullAtAfter: a bucket as the time it is full again', () => {
  const b = { burst: 1000, perSecond: 2 };
  it('a bucket never drained, or full again by now, is full', () => {
    expect(tokensLeft(b, undefined, 5_000)).toBe(1000);
    expect(tokensLeft(b, 4_000, 5_000)).toBe(1000);
    expect(tokensLeft(b, 5_000, 5_000)).toBe(1000);
  });

  it('1,000 taken from a full bucket at t: empty at t, full again 500 s later, refilling at 2 a second', () => {
    const fullAt = fullAtAfter(b, 1000, 10_000, 1000);
    expect(fullAt).toBe(10_000 + 500_000);
    expect(tokensLeft(b, fullAt, 10_000)).toBe(0);
    expect(tokensLeft(b, fullAt, 20_000)).toBe(20); // 10 s later: 20 back
    expect(tokensLeft(b, fullAt, 260_000)).toBe(500);
    expect(tokensLeft(b, fullAt, 510_000)).toBe(1000);
    expect(tokensLeft(b, fullAt, 900_000)).toBe(1000); // never above the burst
  });

  it('taking from a partly drained bucket adds to what is missing', () => {
    // 400 left at t = 0 (600 missing): take 100 → 700 missing → full 350 s later
    expect(fullAtAfter(b, 400, 0, 100)).toBe(350_000);
  });

  it('taking more than is left empties the bucket and no further (EC2 granted what the settings did not know)', () => {
    expect(fullAtAfter(b, 100, 0, 300)).toBe(500_000);
    expect(fullAtAfter(b, 0, 0, 5)).toBe(500_000);
  });
});

describe("recordSend and bucketsLeft: the deployment's record of its RunInstances", () => {
  const buckets = { requests: EC2_REQUEST_BUCKET, instances: EC2_INSTANCE_BUCKET };

  it('no record: both buckets full', () => {
    expect(bucketsLeft(undefined, buckets, 123)).toEqual({ requests: 5, instances: 1000 });
  });

  it('a 1,000-machine launch in 5 calls drains both; they refill at their rates', () => {
    let r: LaunchRecord | undefined;
    for (let i = 0; i < 5; i++) r = recordSend(r, buckets, { atMs: 0, calls: 1, instances: 200 });
    expect(r!.version).toBe(5);
    expect(r!.instances).toEqual({ burst: 1000, perSecond: 2, fullAt: 500_000 });
    expect(r!.requests).toEqual({ burst: 5, perSecond: 2, fullAt: 2_500 });
    expect(bucketsLeft(r, buckets, 0)).toEqual({ requests: 0, instances: 0 });
    expect(bucketsLeft(r, buckets, 1_000)).toEqual({ requests: 2, instances: 2 });
    expect(bucketsLeft(r, buckets, 100_000)).toEqual({ requests: 5, instances: 200 });
  });

  it('a send recorded after a later one (two workers) never counts less; at most the refill between them more', () => {
    const a = recordSend(
      recordSend(undefined, buckets, { atMs: 0, calls: 1, instances: 300 }),
      buckets,
      { atMs: 10_000, calls: 1, instances: 300 },
    );
    const b = recordSend(
      recordSend(undefined, buckets, { atMs: 10_000, calls: 1, instances: 300 }),
      buckets,
      { atMs: 0, calls: 1, instances: 300 },
    );
    // in order: 600 taken, 20 back by t = 10 s: full again at 10 s + 580 / 2 s
    expect(a.instances.fullAt).toBe(300_000);
    // the other order misses the 20 that came back between the two sends: 10 s later
    expect(b.instances.fullAt).toBe(310_000);
  });

  it("the record keeps the writer's settings; the reader counts with them", () => {
    const small = { requests: EC2_REQUEST_BUCKET, instances: { burst: 4, perSecond: 0.02 } };
    const r = recordSend(undefined, small, { atMs: 0, calls: 1, instances: 3 });
    expect(r.instances).toEqual({ burst: 4, perSecond: 0.02, fullAt: 150_000 });
    // read with other (default) settings: the record's decide
    expect(bucketsLeft(r, buckets, 50_000).instances).toBeCloseTo(2, 9);
  });

  it('a plan right after a 1,000-machine launch: the bucket is drained, the same plan waits for the refill', () => {
    let r: LaunchRecord | undefined;
    for (let i = 0; i < 5; i++) r = recordSend(r, buckets, { atMs: 0, calls: 1, instances: 200 });
    const before = estimateLaunch([10, 10, 10], budget);
    expect(before).toEqual({ seconds: 3, calls: 3, notes: [] });
    // 10 s after the launch: 20 instances and all 5 calls back
    const after = estimateLaunch([10, 10, 10], budget, bucketsLeft(r, buckets, 10_000));
    // 30 machines, 20 now, 10 more at 2 a second: 5 s
    expect(after).toEqual({
      seconds: 1 + 5 + 2,
      calls: 3,
      notes: [
        '30 machines over the next 5 s: 20 at once, then 2 a second',
        "this deployment's recent launches leave 20 of the 1,000 instances EC2 launches at once; they come back at 2 a second",
      ],
    });
    // at once: nothing left, 30 at 2 a second (the calls' bucket 1.5 s for the 3rd call)
    expect(estimateLaunch([10, 10, 10], budget, bucketsLeft(r, buckets, 0))).toEqual({
      seconds: 1 + 15 + 2,
      calls: 3,
      notes: [
        '30 machines over the next 15 s: 0 at once, then 2 a second',
        '3 RunInstances calls over the next 2 s: 0 at once, then 2 a second',
        "this deployment's recent launches leave 0 of the 1,000 instances EC2 launches at once; they come back at 2 a second",
        "this deployment's recent launches leave 0 of the 5 RunInstances calls at once; they come back at 2 a second",
      ],
    });
  });
});

describe('reserveSend: one RunInstances reserved in the shared record (GCRA)', () => {
  const buckets = {
    requests: { burst: 5, perSecond: 2 },
    instances: { burst: 1000, perSecond: 2 },
  };
  const T0 = 1_700_000_000_000;

  /** Reserves `n` calls one after the other, each at `at(i)`, threading the record through. */
  function reserveMany(n: number, at: (i: number) => number, start?: LaunchRecord) {
    let record = start;
    const sends: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = reserveSend(record, buckets, at(i));
      sends.push(r.sendAtMs - T0);
      record = r.next;
    }
    return { sends, record: record! };
  }

  it('an absent record is a full bucket: the burst goes at once, then one call every 500 ms', () => {
    const { sends, record } = reserveMany(8, () => T0);
    expect(sends).toEqual([0, 0, 0, 0, 0, 500, 1000, 1500]);
    // 8 tokens taken from a full bucket of 5 at T0: full again 8 intervals later
    expect(record.requests).toEqual({ burst: 5, perSecond: 2, fullAt: T0 + 4000 });
    expect(record.version).toBe(8);
    // nothing launched yet: the instance bucket is full at T0
    expect(record.instances).toEqual({ burst: 1000, perSecond: 2, fullAt: T0 });
  });

  it('refills at the rate: after a drained burst, waiting 1 s gives two calls at once', () => {
    const drained = reserveMany(5, () => T0).record;
    const later = reserveMany(3, () => T0 + 1000, drained);
    expect(later.sends).toEqual([1000, 1000, 1500]);
    // a bucket left alone until its full-again time gives a whole burst again
    const rested = reserveMany(6, () => drained.requests.fullAt, drained);
    expect(rested.sends.map((s) => s - 2500)).toEqual([0, 0, 0, 0, 0, 500]);
  });

  it('two workers reserving in one record get distinct turns: together they spend one bucket', () => {
    // worker A and worker B alternate, each reading what the other wrote (the version check's job)
    const { sends } = reserveMany(12, (i) => T0 + i * 10);
    expect(sends.slice(0, 5)).toEqual([0, 10, 20, 30, 40]);
    // from the sixth call on, one every 500 ms whoever asks: 5 + 2 a second, as EC2 allows
    expect(sends.slice(5)).toEqual([500, 1000, 1500, 2000, 2500, 3000, 3500]);
    for (let i = 6; i < sends.length; i++) expect(sends[i]! - sends[i - 1]!).toBe(500);
  });

  it('a conflict re-reserved on the winner’s record goes after the winner’s turn', () => {
    const drained = reserveMany(5, () => T0).record;
    // both workers computed from the same record (version 5); A's write won
    const a = reserveSend(drained, buckets, T0 + 100);
    const bLost = reserveSend(drained, buckets, T0 + 100);
    expect(bLost.next.version).toBe(a.next.version); // the same version: B's conditional write fails
    // B re-reads A's record and reserves again: the next turn, not the same one
    const b = reserveSend(a.next, buckets, T0 + 110);
    expect(a.sendAtMs - T0).toBe(500);
    expect(b.sendAtMs - T0).toBe(1000);
    expect(b.next.version).toBe(7);
  });

  it('counts this worker’s earlier calls’ instances in the same write, at their send times', () => {
    const first = reserveSend(undefined, buckets, T0);
    const r = reserveSend(first.next, buckets, T0 + 1000, [
      { atMs: T0 + 200, instances: 300 },
      { atMs: T0 + 400, instances: 100 },
    ]);
    expect(r.sendAtMs).toBe(T0 + 1000);
    // 300 then 100 instances from a full 1,000: 400 missing at 2 a second, from the first send
    expect(r.next.instances.fullAt).toBe(T0 + 200 + 150_000 + 50_000);
    expect(r.next.version).toBe(2);
    const left = bucketsLeft(r.next, buckets, T0 + 1000);
    expect(left.instances).toBeCloseTo(1000 - 400 + 1.6, 5);
    // two calls taken, the first one's token back by T0 + 500: 4 left
    expect(left.requests).toBeCloseTo(4, 5);
  });

  it('a record written with a slower rate is never made fuller by a faster one', () => {
    const slow = { ...buckets, requests: { burst: 5, perSecond: 0.5 } };
    let drained: LaunchRecord | undefined;
    for (let i = 0; i < 5; i++) drained = reserveSend(drained, slow, T0).next;
    // 5 taken at T0 at 0.5 a second: empty, and full again at T0 + 10 s
    expect(drained!.requests.fullAt).toBe(T0 + 10_000);
    // a writer with EC2's 2 a second waits one of its own intervals, and keeps the later time
    const r = reserveSend(drained, buckets, T0);
    expect(r.sendAtMs).toBe(T0 + 500);
    expect(r.next.requests).toEqual({ burst: 5, perSecond: 2, fullAt: T0 + 10_000 });
  });
});

describe("spacedUntil and withKeyBooked: workers' calls of one launch key spaced", () => {
  const NOW = 1_800_000_000_000;
  const S = 5_000;
  const mine: KeySpacing = { key: 'k1', worker: 'A', spacingMs: S };
  const buckets = { requests: EC2_REQUEST_BUCKET, instances: EC2_INSTANCE_BUCKET };
  const withKeys = (keys: LaunchRecord['keys']): LaunchRecord => ({
    ...reserveSend(undefined, buckets, NOW - 60_000).next,
    ...(keys ? { keys } : {}),
  });

  it("another worker's recent call of the key: this worker waits a spacing after it", () => {
    expect(spacedUntil(withKeys({ k1: { B: NOW - 1_000 } }), mine, NOW)).toBe(NOW + 4_000);
  });

  it('its own calls alone are not spaced (one worker behaves as without spacing)', () => {
    expect(spacedUntil(withKeys({ k1: { A: NOW - 1_000 } }), mine, NOW)).toBeUndefined();
  });

  it('another key, or no keys at all (a record written before spacing): not spaced', () => {
    expect(spacedUntil(withKeys({ k2: { B: NOW - 1_000 } }), mine, NOW)).toBeUndefined();
    expect(spacedUntil(withKeys(undefined), mine, NOW)).toBeUndefined();
    expect(spacedUntil(undefined, mine, NOW)).toBeUndefined();
  });

  it('the other worker launched the key too, this one last: it yields half a spacing more', () => {
    const record = withKeys({ k1: { B: NOW - 3_000, A: NOW - 1_000 } });
    expect(spacedUntil(record, mine, NOW)).toBe(NOW - 1_000 + 1.5 * S);
  });

  it('another worker whose last call of the key is over three spacings old no longer counts', () => {
    const record = withKeys({ k1: { B: NOW - 3 * S - 1, A: NOW - 1_000 } });
    expect(spacedUntil(record, mine, NOW)).toBeUndefined();
    expect(spacedUntil(withKeys({ k1: { B: NOW - 3 * S - 1 } }), mine, NOW)).toBeUndefined();
  });

  it("its own latest booking: yields ownYieldMs after the spacing when given (this worker's gate-to-booking take)", () => {
    const record = withKeys({ k1: { A: NOW - 1_000, B: NOW - 6_000 } });
    expect(spacedUntil(record, { ...mine, ownYieldMs: 4_000 }, NOW)).toBe(NOW - 1_000 + S + 4_000);
    // another worker's latest: the spacing alone
    const theirs = withKeys({ k1: { A: NOW - 6_000, B: NOW - 1_000 } });
    expect(spacedUntil(theirs, { ...mine, ownYieldMs: 4_000 }, NOW)).toBe(NOW - 1_000 + S);
  });

  it('off with a spacing of 0', () => {
    const record = withKeys({ k1: { B: NOW - 1_000 } });
    expect(spacedUntil(record, { ...mine, spacingMs: 0 }, NOW)).toBeUndefined();
  });

  it('reserveSend books the key for its worker at its turn, drops bookings older than spacedUntil reads (3 spacings), keeps the others', () => {
    const kept = NOW - KEY_ACTIVE_SPACINGS * S;
    const before = withKeys({
      k1: { B: NOW - 2_000, C: kept - 1 },
      k2: { B: kept },
      old: { C: kept - 1 },
    });
    const r = reserveSend(before, buckets, NOW, [], mine);
    expect(r.next.keys).toEqual({ k1: { B: NOW - 2_000, A: r.sendAtMs }, k2: { B: kept } });
    // what was dropped could not space anyone: a booking 3 spacings old still counts, older not
    expect(spacedUntil(withKeys({ k1: { B: kept } }), mine, NOW)).toBeDefined();
    expect(spacedUntil(withKeys({ k1: { B: kept - 1 } }), mine, NOW)).toBeUndefined();
    // the turn is the bucket's own: the spacing is waited for before, at the gate
    expect(r.sendAtMs).toBe(reserveSend(before, buckets, NOW).sendAtMs);
  });

  it('without spacing, reserveSend and recordSend carry the keys over unchanged', () => {
    const before = withKeys({ k1: { B: NOW - 2_000 } });
    expect(reserveSend(before, buckets, NOW).next.keys).toEqual({ k1: { B: NOW - 2_000 } });
    expect(recordSend(before, buckets, { atMs: NOW, calls: 1, instances: 3 }).keys).toEqual({
      k1: { B: NOW - 2_000 },
    });
  });
});
