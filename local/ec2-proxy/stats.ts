/** What `GET /_admin/stats` reports (API.md, section 2). */
export interface StatsSnapshot {
  /** EC2 calls received, per action (throttled and faulted calls included). */
  readonly calls: Readonly<Record<string, number>>;
  /** Faults injected, per EC2 error code. */
  readonly injected: Readonly<Record<string, number>>;
  /** Calls refused by the limits (RequestLimitExceeded). */
  readonly throttled: number;
}

export class ProxyStats {
  private calls = new Map<string, number>();
  private injected = new Map<string, number>();
  private throttled = 0;

  call(action: string): void {
    this.calls.set(action, (this.calls.get(action) ?? 0) + 1);
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
  }

  snapshot(): StatsSnapshot {
    return {
      calls: Object.fromEntries([...this.calls].sort(([a], [b]) => a.localeCompare(b))),
      injected: Object.fromEntries([...this.injected].sort(([a], [b]) => a.localeCompare(b))),
      throttled: this.throttled,
    };
  }
}
