/**
 * A client-side token bucket (EC2's own model of its request limits: a burst,
 * then a refill rate). `take` waits its turn, first come first served, so
 * calls are spaced to what EC2 allows instead of being refused and retried.
 * The local EC2 endpoint's ThrottleBucket (local/ec2-proxy/limits.ts) is
 * EC2's side of the same bucket: it refuses instead of waiting.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly waiters: Array<() => void> = [];
  private timer?: NodeJS.Timeout;

  constructor(
    readonly burst: number,
    readonly refillPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Resolves when a token is taken. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.drain();
    });
  }

  /**
   * Counts a call paced elsewhere (e.g. in a bucket shared with other
   * workers) without waiting: a token is taken if one is left, so that a
   * later `take` does not burst over calls already made.
   */
  spend(): void {
    this.refill();
    this.tokens = Math.max(0, this.tokens - 1);
  }

  /**
   * Gives back a token taken for a call that was not made (what it was
   * taken for was dropped before it went out), so the next `take` does not
   * wait for it: EC2's own bucket never saw a call.
   */
  refund(): void {
    this.refill();
    this.tokens = Math.min(this.burst, this.tokens + 1);
    this.drain();
  }

  /**
   * The bucket left empty (EC2 refused a call: its own bucket is empty), so
   * the next `take` waits for a token to refill instead of using one this
   * bucket thought it had.
   */
  empty(): void {
    this.refill();
    this.tokens = 0;
  }

  /** Calls waiting for a token. */
  get waiting(): number {
    return this.waiters.length;
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(
      this.burst,
      this.tokens + ((now - this.last) / 1000) * this.refillPerSecond,
    );
    this.last = now;
  }

  private drain(): void {
    this.refill();
    while (this.waiters.length > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      this.waiters.shift()!();
    }
    if (this.waiters.length > 0 && !this.timer && this.refillPerSecond > 0) {
      const ms = Math.ceil(((1 - this.tokens) / this.refillPerSecond) * 1000);
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.drain();
        },
        Math.max(ms, 1),
      );
    }
  }
}
