/** What `GET /_admin/stats` reports (API.md, section 2). */
export interface StatsSnapshot {
  /** EC2 calls received, per action (throttled and faulted calls included). */
  readonly calls: Readonly<Record<string, number>>;
  /** Faults injected, per EC2 error code. */
  readonly injected: Readonly<Record<string, number>>;
  /** Calls refused by the limits (RequestLimitExceeded). */
  readonly throttled: number;
  /**
   * The calls per action again, per caller: the `x-provisioner-caller`
   * header the worker sends to a local endpoint (ec2/caller.ts), `unnamed`
   * for calls without it.
   */
  readonly byCaller: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** What `byCaller` counts a call without a caller header under. */
export const UNNAMED_CALLER = 'unnamed';

function sorted(counts: ReadonlyMap<string, number>): Record<string, number> {
  return Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)));
}

export class ProxyStats {
  private calls = new Map<string, number>();
  private injected = new Map<string, number>();
  private throttled = 0;
  private byCaller = new Map<string, Map<string, number>>();

  call(action: string, caller: string = UNNAMED_CALLER): void {
    this.calls.set(action, (this.calls.get(action) ?? 0) + 1);
    let counts = this.byCaller.get(caller);
    if (!counts) this.byCaller.set(caller, (counts = new Map<string, number>()));
    counts.set(action, (counts.get(action) ?? 0) + 1);
  }

  inject(code: string): void {
    this.injected.set(code, (this.injected.get(code) ?? 0) + 1);
  }

  throttle(): void {
    this.throttled += 1;
  }

  reset(): void {
    this.calls = new Map();
    this.injected = new Map();
    this.throttled = 0;
    this.byCaller = new Map();
  }

  snapshot(): StatsSnapshot {
    return {
      calls: sorted(this.calls),
      injected: sorted(this.injected),
      throttled: this.throttled,
      byCaller: Object.fromEntries(
        [...this.byCaller]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([caller, counts]) => [caller, sorted(counts)]),
      ),
    };
  }
}
