/** How long a coalescer waits for more requests before it sends what it has. */
export interface CoalescerWindows {
  /** Sent this long after the latest request arrived (Karpenter: 35 ms). */
  idleMs: number;
  /** …and never later than this after the first one (Karpenter: 1 s). */
  maxMs: number;
  /** …or at once when this many are waiting. */
  maxSize: number;
}

/** One request's outcome in a batch: its value, or the error it alone failed with. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * A request withdrawn (its `signal` aborted) before its batch went out: the
 * caller is answered at once; the batch, when it goes, still holds the
 * request, and `send` sees its signal aborted (e.g. leaves it out). A batch
 * whose requests were all withdrawn does not go: it is dropped.
 */
export class Withdrawn extends Error {
  constructor() {
    super('the request was withdrawn (aborted) before its batch went out');
    this.name = 'Withdrawn';
  }
}

interface Pending<Req, Res> {
  /** Its window closed and it waits for the gate: still open to requests until then. */
  closing?: boolean;
  /** Handed to `send`: a request withdrawn from now on is the batch's to answer. */
  dispatched?: boolean;
  /** How many of its requests were withdrawn. */
  withdrawn?: number;
  requests: Req[];
  settle: Array<{ resolve: (v: Res) => void; reject: (e: unknown) => void }>;
  idleTimer?: NodeJS.Timeout;
  maxTimer?: NodeJS.Timeout;
}

/**
 * Gathers requests that share a key and arrive close together into one call
 * of `send` (Karpenter's batcher): the batch goes out after `idleMs` without a
 * new request, after `maxMs` at most, or when `maxSize` are waiting. `send`
 * answers each request in order; if it throws, every request of the batch
 * fails with that error.
 */
export class Coalescer<Req, Res, G = void> {
  private readonly pending = new Map<string, Pending<Req, Res>>();
  /** `oneAtATime`: per key, settles when the last batch sent (or waiting to be) has settled. */
  private readonly last = new Map<string, Promise<void>>();

  /**
   * `gate`, when given, is awaited once a batch's window closes and before it
   * is sent (e.g. a rate limiter's token); the batch keeps taking requests
   * while it waits, so batches grow when calls are scarce. What it resolves
   * with is passed to `send` with the batch (e.g. how the batch was paced).
   *
   * `oneAtATime`: a key's batches are sent one after the other, each once
   * the one before it has settled (e.g. writes that would race each other),
   * or once it has waited `maxWaitMs` for it (a call that hangs holds the
   * others back no longer); a batch whose window closed keeps taking
   * requests while it waits.
   *
   * `dropped`: a batch whose requests were all withdrawn while it waited at
   * the gate is dropped when the gate lets it through, not sent (`send`
   * would have nothing to do); this is handed what the gate gave it, to give
   * back (e.g. a rate limiter's token).
   */
  constructor(
    private readonly windows: CoalescerWindows,
    private readonly send: (
      key: string,
      requests: Req[],
      gated: G | undefined,
    ) => Promise<Array<Settled<Res>>>,
    private readonly gate?: (key: string) => Promise<G>,
    private readonly options: {
      oneAtATime?: { maxWaitMs: number };
      dropped?: (key: string, gated: G | undefined) => void;
    } = {},
  ) {}

  /**
   * `signal`: aborted while the request's batch has not gone out yet, the
   * request is answered at once (Withdrawn); `send` still gets it, and must
   * look at the signal itself (it is aborted by then) to leave it out,
   * unless every request of the batch was withdrawn: it is not sent.
   */
  submit(key: string, request: Req, signal?: AbortSignal): Promise<Res> {
    return new Promise<Res>((resolveOnce, rejectOnce) => {
      if (signal?.aborted) {
        rejectOnce(new Withdrawn());
        return;
      }
      let batch = this.pending.get(key);
      if (!batch) {
        batch = { requests: [], settle: [] };
        this.pending.set(key, batch);
        const started = batch;
        started.maxTimer = setTimeout(() => this.flush(key, started), this.windows.maxMs);
      }
      let resolve = resolveOnce;
      let reject = rejectOnce;
      if (signal) {
        const joined = batch;
        const withdraw = () => {
          if (joined.dispatched) return;
          rejectOnce(new Withdrawn());
          joined.withdrawn = (joined.withdrawn ?? 0) + 1;
          // every request withdrawn before its window closed: the batch is dropped, not sent
          if (!joined.closing && joined.withdrawn === joined.requests.length) {
            clearTimeout(joined.idleTimer);
            clearTimeout(joined.maxTimer);
            if (this.pending.get(key) === joined) this.pending.delete(key);
          }
        };
        signal.addEventListener('abort', withdraw, { once: true });
        resolve = (v) => {
          signal.removeEventListener('abort', withdraw);
          resolveOnce(v);
        };
        reject = (e) => {
          signal.removeEventListener('abort', withdraw);
          // the batch's own error (whatever `send` failed with), passed on as it is
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          rejectOnce(e);
        };
      }
      batch.requests.push(request);
      batch.settle.push({ resolve, reject });
      if (batch.requests.length >= this.windows.maxSize) {
        // full: the next request starts a batch of its own
        if (this.pending.get(key) === batch) this.pending.delete(key);
        this.flush(key, batch, true);
        return;
      }
      if (batch.closing) return;
      clearTimeout(batch.idleTimer);
      const current = batch;
      batch.idleTimer = setTimeout(() => this.flush(key, current), this.windows.idleMs);
    });
  }

  /** Requests waiting for their batch to go out (all keys). */
  get waiting(): number {
    let n = 0;
    for (const b of this.pending.values()) n += b.requests.length;
    return n;
  }

  private flush(key: string, batch: Pending<Req, Res>, full = false): void {
    clearTimeout(batch.idleTimer);
    clearTimeout(batch.maxTimer);
    if (batch.closing && !full) return; // already waiting for the gate or the batch before it
    const first = !batch.closing;
    batch.closing = true;
    if (!first && full) return;
    // oneAtATime: this batch goes once the key's previous batch has settled
    let settled = (): void => undefined;
    const oneAtATime = this.options.oneAtATime;
    const before = oneAtATime ? this.last.get(key) : undefined;
    const previous = before && oneAtATime ? atMost(before, oneAtATime.maxWaitMs) : undefined;
    if (oneAtATime) {
      const mine = new Promise<void>((resolve) => (settled = resolve));
      this.last.set(key, mine);
      void mine.then(() => {
        if (this.last.get(key) === mine) this.last.delete(key);
      });
    }
    const go = (gated?: G) => {
      if (this.pending.get(key) === batch) this.pending.delete(key);
      // every request withdrawn (and answered) while the batch waited: nothing goes out
      if (batch.withdrawn === batch.requests.length) {
        settled();
        this.options.dropped?.(key, gated);
        return;
      }
      this.dispatch(key, batch, settled, gated);
    };
    if (!this.gate && !previous) {
      go();
      return;
    }
    const gate = this.gate;
    const ready = previous ? previous.then(() => gate?.(key)) : gate!(key);
    ready.then(
      (gated) => go(gated),
      (err: unknown) => {
        if (this.pending.get(key) === batch) this.pending.delete(key);
        for (const s of batch.settle) s.reject(err);
        settled();
      },
    );
  }

  private dispatch(
    key: string,
    batch: Pending<Req, Res>,
    settled: () => void,
    gated: G | undefined,
  ): void {
    batch.dispatched = true;
    this.send(key, batch.requests, gated).then(
      (results) => {
        settled();
        batch.settle.forEach((s, i) => {
          const r = results[i];
          if (!r) s.reject(new Error('the batch gave no answer for this request'));
          else if (r.ok) s.resolve(r.value);
          else s.reject(r.error);
        });
      },
      (err: unknown) => {
        settled();
        for (const s of batch.settle) s.reject(err);
      },
    );
  }
}

/** Settles when `p` settles or after `ms`, whichever is first. */
function atMost(p: Promise<void>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    void p.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
