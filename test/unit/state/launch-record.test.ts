import { recordSend, type LaunchRecord } from '../../../core/launch-estimate';
import {
  LaunchRecordStore,
  MAX_FLUSH_FAILURES,
  MAX_RESERVE_LEAD_MS,
  ReservationRefused,
} from '../../../state/launch-record';
import { answeredDynamoDb } from '../../support/answered-dynamodb';

const REGION = 'us-east-1';
const BUCKETS = {
  requests: { burst: 5, perSecond: 2 },
  instances: { burst: 1000, perSecond: 2 },
};

/**
 * A LaunchRecordStore over a DynamoDB client whose calls never leave the
 * process: one item, kept here, read by GetItem and replaced by PutItem
 * (plain values: answered before the document client's marshalling).
 * `hold` may delay or refuse a PutItem.
 */
function store(opts: { item?: Record<string, unknown>; hold?: (put: number) => Promise<void> }) {
  let item = opts.item;
  let puts = 0;
  const { client, sent } = answeredDynamoDb(async (s) => {
    if (s.command === 'PutItemCommand') {
      puts += 1;
      await opts.hold?.(puts);
      item = s.input.Item as Record<string, unknown>;
      return {};
    }
    // a projection answers only the attributes it names, as DynamoDB does
    const names = s.input.ExpressionAttributeNames as Record<string, string> | undefined;
    const projected =
      item && typeof s.input.ProjectionExpression === 'string'
        ? Object.fromEntries(
            s.input.ProjectionExpression.split(',')
              .map((n) => names?.[n.trim()] ?? n.trim())
              .filter((n) => n in item!)
              .map((n) => [n, item![n]]),
          )
        : item;
    return projected ? { Item: projected } : {};
  });
  return {
    records: new LaunchRecordStore(client, 'table', 'dep'),
    sent,
    item: () => item,
    puts: () => sent.filter((s) => s.command === 'PutItemCommand'),
  };
}

/** A record whose request bucket is full again only `aheadMs` from now (turns queued). */
function queued(aheadMs: number): Record<string, unknown> {
  const now = Date.now();
  return {
    requests: { ...BUCKETS.requests, fullAt: now + aheadMs },
    instances: { ...BUCKETS.instances, fullAt: now },
    version: 7,
  };
}

const waitFor = async (cond: () => boolean, what: string): Promise<void> => {
  const until = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('LaunchRecordStore.reserve: a turn the caller will not use is never written', () => {
  it('books the next turn with one conditional PutItem on the version read', async () => {
    const s = store({ item: queued(0) });
    const now = Date.now();
    const at = await s.records.reserve(REGION, BUCKETS, { now: () => now, maxWaitMs: 60_000 });
    expect(at).toBe(now); // a full bucket: at once
    expect(s.puts()).toHaveLength(1);
    expect(s.puts()[0]!.input.ConditionExpression).toBe('#version = :version');
    expect(s.puts()[0]!.input.ExpressionAttributeValues).toEqual({ ':version': 7 });
    expect((s.item() as { version: number }).version).toBe(8);
  });

  it('a turn past maxWaitMs: rejects with ReservationRefused, nothing written, the record unchanged', async () => {
    const before = queued(200_000); // 400 turns queued at 2/s: the next is ~197.5 s away
    const s = store({ item: before });
    const err = await s.records
      .reserve(REGION, BUCKETS, { maxWaitMs: 60_000 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReservationRefused);
    expect((err as Error).message).toMatch(/^the launch record's next turn is 19[78] s away$/);
    expect(s.puts()).toEqual([]);
    expect(s.item()).toBe(before);
    // the store's copy was not moved either: the next write is computed on the same record
    const at = await s.records.reserve(REGION, BUCKETS, { maxWaitMs: 300_000 });
    expect(s.puts()).toHaveLength(1);
    expect(at - Date.now()).toBeGreaterThan(190_000);
    expect((s.item() as { version: number }).version).toBe(8);
  });

  it('a deadline passed while queued behind a stalled write: rejects, nothing written', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    const s = store({ item: queued(0), hold: (n) => (n === 1 ? stalled : Promise.resolve()) });
    const first = s.records.reserve(REGION, BUCKETS, {});
    await waitFor(() => s.puts().length === 1, 'the first PutItem');
    const late = s.records
      .reserve(REGION, BUCKETS, { deadlineMs: Date.now() + 50 })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    release();
    await first;
    const err = await late;
    expect(err).toBeInstanceOf(ReservationRefused);
    expect((err as Error).message).toBe('the reservation was given up before it was written');
    expect(s.puts()).toHaveLength(1);
    expect((s.item() as { version: number }).version).toBe(8);
  });

  it('a deadline passed while queued behind a failed write: rejects before reading (a hung table cannot grow the chain)', async () => {
    let fail!: (err: Error) => void;
    const failing = new Promise<void>((_, reject) => (fail = reject));
    const s = store({ item: queued(0), hold: (n) => (n === 1 ? failing : Promise.resolve()) });
    const first = s.records.reserve(REGION, BUCKETS, {}).catch((e: unknown) => e);
    await waitFor(() => s.puts().length === 1, 'the first PutItem');
    const late = s.records
      .reserve(REGION, BUCKETS, { deadlineMs: Date.now() + 50 })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    const sentBefore = s.sent.length;
    // the first write fails without an answer: this process's copy of the record is dropped
    fail(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' }));
    expect(((await first) as Error).message).toBe('socket hang up');
    const err = await late;
    expect(err).toBeInstanceOf(ReservationRefused);
    expect((err as Error).message).toBe('the reservation was given up before it was written');
    // refused before its read: nothing sent after the failed write
    expect(s.sent.slice(sentBefore)).toEqual([]);
  });
});

describe('LaunchRecordStore.countLater: each instance counted once', () => {
  const onErrorLog = (): { errors: unknown[]; onError: (e: unknown) => void } => {
    const errors: unknown[] = [];
    return { errors, onError: (e) => errors.push(e) };
  };

  it('counted by the next reservation, in the same write', async () => {
    const base = queued(0);
    const s = store({ item: base });
    const { errors, onError } = onErrorLog();
    const sentAt = Date.now();
    s.records.countLater(REGION, BUCKETS, { atMs: sentAt, instances: 300 }, onError, 60_000);
    expect(s.records.uncountedIn(REGION)).toBe(300);
    await s.records.reserve(REGION, BUCKETS, {});
    expect(s.records.uncountedIn(REGION)).toBe(0);
    const written = s.item() as unknown as LaunchRecord;
    const expected = recordSend(base as unknown as LaunchRecord, BUCKETS, {
      atMs: sentAt,
      calls: 0,
      instances: 300,
    });
    // 300 instances at 2/s: the instance bucket full again 150 s after the send, once
    expect(written.instances.fullAt).toBe(expected.instances.fullAt);
    expect(written.instances.fullAt - sentAt).toBe(150_000);
    expect(errors).toEqual([]);
  });

  it('a flush that fires while a reservation is in flight does not count its instances again', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    const s = store({ item: queued(0), hold: (n) => (n === 1 ? stalled : Promise.resolve()) });
    const { errors, onError } = onErrorLog();
    const sentAt = Date.now();
    s.records.countLater(REGION, BUCKETS, { atMs: sentAt, instances: 300 }, onError, 20);
    // the reservation takes the 300 instances and its PutItem is held past the flush's timer
    const reserved = s.records.reserve(REGION, BUCKETS, {});
    await waitFor(() => s.puts().length === 1, 'the reservation’s PutItem');
    await new Promise((r) => setTimeout(r, 100));
    release();
    await reserved;
    await new Promise((r) => setTimeout(r, 100));
    // the flush found nothing left to count: no second write
    expect(s.puts()).toHaveLength(1);
    expect((s.item() as unknown as LaunchRecord).instances.fullAt - sentAt).toBe(150_000);
    expect(s.records.uncountedIn(REGION)).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a failed flush is reported and tried again', async () => {
    const s = store({
      item: queued(0),
      hold: (n) => (n === 1 ? Promise.reject(new Error('table busy')) : Promise.resolve()),
    });
    const { errors, onError } = onErrorLog();
    const sentAt = Date.now();
    s.records.countLater(REGION, BUCKETS, { atMs: sentAt, instances: 40 }, onError, 10);
    await waitFor(() => s.records.uncountedIn(REGION) === 0, 'the second flush');
    expect(s.puts()).toHaveLength(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['table busy']);
    expect((s.item() as unknown as LaunchRecord).instances.fullAt - sentAt).toBe(20_000);
  });

  it(`after ${MAX_FLUSH_FAILURES} failed flushes in a row the instances are dropped (bounded)`, async () => {
    const s = store({ item: queued(0), hold: () => Promise.reject(new Error('no table')) });
    const { errors, onError } = onErrorLog();
    s.records.countLater(REGION, BUCKETS, { atMs: Date.now(), instances: 40 }, onError, 10);
    await waitFor(() => errors.length === MAX_FLUSH_FAILURES, 'the failed flushes');
    expect(s.records.uncountedIn(REGION)).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(s.puts()).toHaveLength(MAX_FLUSH_FAILURES);
    expect(errors).toHaveLength(MAX_FLUSH_FAILURES);
  });
});

describe('LaunchRecordStore: a turn booked ahead by the time a write takes', () => {
  it('books as of now + the slowest recent write, so the call is not later than its turn', async () => {
    const s = store({
      hold: (put) => new Promise((r) => setTimeout(r, put === 1 ? 300 : 0)),
    });
    expect(s.records.leadMs()).toBe(0);
    const first = Date.now();
    const turn1 = await s.records.reserve(REGION, BUCKETS);
    // an empty record: the bucket is full, the turn is now
    expect(turn1 - first).toBeLessThan(100);
    // the first write took about 300 ms: the next turn is booked that far ahead, though
    // the bucket still holds tokens
    expect(s.records.leadMs()).toBeGreaterThanOrEqual(290);
    expect(s.records.leadMs()).toBeLessThanOrEqual(MAX_RESERVE_LEAD_MS);
    const second = Date.now();
    const turn2 = await s.records.reserve(REGION, BUCKETS);
    expect(turn2 - second).toBeGreaterThanOrEqual(290);
    // and answered before it
    expect(Date.now()).toBeLessThan(turn2);
  });

  it('predictTurn reads (eventually consistent) and writes nothing: the turn a reservation would get', async () => {
    const s = store({ item: queued(5_000) });
    const now = Date.now();
    const { at, spacedUntil } = await s.records.predictTurn(REGION, BUCKETS, { now: () => now });
    expect(spacedUntil).toBeUndefined();
    // 5 s owed at 2/s = 10 tokens; the 11th is 6 past a burst of 5: 3 s away (the record was
    // made a few ms before `now`)
    expect(at - now).toBeGreaterThan(2_950);
    expect(at - now).toBeLessThanOrEqual(3_000);
    expect(s.puts()).toHaveLength(0);
    expect(s.sent.map((x) => x.command)).toEqual(['GetItemCommand']);
    expect(s.sent[0]!.input.ConsistentRead).toBeUndefined();
  });
});

describe('LaunchRecordStore: key spacing between workers (the record keeps each key’s last bookings)', () => {
  const S = 5_000;
  const spacingOf = (worker: string) => ({ key: 'k1', worker, spacingMs: S });

  it("predictTurn: another worker's recent booking of the same key spaces this one; reads the keys only when asked", async () => {
    const now = Date.now();
    const s = store({ item: { ...queued(0), keys: { k1: { B: now - 1_000 } } } });
    const spaced = await s.records.predictTurn(REGION, BUCKETS, {
      now: () => now,
      spacing: spacingOf('A'),
    });
    expect(spaced.spacedUntil).toBe(now + 4_000);
    expect(spaced.at).toBe(now);
    expect(s.sent[0]!.input.ProjectionExpression).toBe('#requests, #instances, #version, #keys');
    // its own booking does not space it; neither does another key's, nor a prediction without a key
    expect(
      (await s.records.predictTurn(REGION, BUCKETS, { spacing: spacingOf('B') })).spacedUntil,
    ).toBeUndefined();
    const other = { key: 'k2', worker: 'A', spacingMs: S };
    expect(
      (await s.records.predictTurn(REGION, BUCKETS, { spacing: other })).spacedUntil,
    ).toBeUndefined();
    expect((await s.records.predictTurn(REGION, BUCKETS)).spacedUntil).toBeUndefined();
    expect(s.sent[3]!.input.ProjectionExpression).toBe('#requests, #instances, #version');
  });

  it('reserve writes its key booking into the item (old bookings pruned), and the next worker is spaced by it', async () => {
    const now = Date.now();
    const s = store({ item: { ...queued(0), keys: { gone: { C: now - 120_000 } } } });
    const at = await s.records.reserve(REGION, BUCKETS, { spacing: spacingOf('A') });
    const item = s.item() as { keys?: Record<string, Record<string, number>>; version: number };
    expect(item.keys).toEqual({ k1: { A: at } });
    expect(item.version).toBe(8);
    const b = await s.records.predictTurn(REGION, BUCKETS, { spacing: spacingOf('B') });
    expect(b.spacedUntil).toBe(at + S);
    // a later write without a key (a locally paced call's record) keeps the bookings
    await s.records.record(REGION, BUCKETS, { atMs: Date.now(), calls: 1, instances: 1 });
    expect((s.item() as { keys?: unknown }).keys).toEqual({ k1: { A: at } });
  });

  it('an item written before key spacing (no keys) reads, predicts and reserves as before', async () => {
    const s = store({ item: queued(0) });
    const record = await s.records.read(REGION);
    expect(record).toBeDefined();
    expect(record!.keys).toBeUndefined();
    expect(record!.version).toBe(7);
    const p = await s.records.predictTurn(REGION, BUCKETS, { spacing: spacingOf('A') });
    expect(p.spacedUntil).toBeUndefined();
    const at = await s.records.reserve(REGION, BUCKETS, { spacing: spacingOf('A') });
    expect((s.item() as { keys?: unknown }).keys).toEqual({ k1: { A: at } });
    // and stored with the field (read() leaves it out: plans read the buckets only)
    expect((s.item() as { keys?: unknown }).keys).toEqual({ k1: { A: at } });
  });

  it('reserve keeps only the bookings spacedUntil can read (3 spacings), however many stale keys the item had', async () => {
    const now = Date.now();
    const stale: Record<string, Record<string, number>> = {};
    for (let i = 0; i < 40; i++)
      stale[`key${i}`] = { B: now - 3 * S - 2_000, C: now - 3 * S - 2_000 };
    const s = store({ item: { ...queued(0), keys: { ...stale, k1: { B: now - 1_000 } } } });
    const at = await s.records.reserve(REGION, BUCKETS, { spacing: spacingOf('A') });
    expect((s.item() as { keys?: unknown }).keys).toEqual({ k1: { B: now - 1_000, A: at } });
  });

  it('read() leaves the key bookings out; a write still reads and keeps the other workers’ bookings', async () => {
    const now = Date.now();
    const s = store({ item: { ...queued(0), keys: { k1: { B: now - 1_000 } } } });
    const record = await s.records.read(REGION);
    expect(record!.version).toBe(7);
    expect(record!.keys).toBeUndefined();
    expect(s.sent[0]!.input.ProjectionExpression).toBe('#requests, #instances, #version');
    // the write (nothing known yet) reads the whole item, so B's booking is kept
    const at = await s.records.reserve(REGION, BUCKETS, { spacing: spacingOf('A') });
    expect((s.item() as { keys?: unknown }).keys).toEqual({ k1: { B: now - 1_000, A: at } });
  });
});
