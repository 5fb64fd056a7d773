import { Metrics } from '@aws-lambda-powertools/metrics';
import { metricsNamespace, unitOf, WORKER_SERVICE, type MetricName, type Unit } from './metrics';

/**
 * Samples of one distribution kept per flush: EMF takes at most 100 values
 * per metric, and Powertools publishes a record by itself when a metric
 * reaches 100 (before this code has finished it).
 */
export const MAX_SAMPLES = 99;

interface Series {
  name: string;
  unit: Unit;
  dimensions: Record<string, string>;
  /** Counters: the sum since the last flush. */
  total: number;
  /** Distributions: up to MAX_SAMPLES values (a uniform reservoir past that). */
  samples?: number[];
  seen: number;
}

/**
 * The worker's metrics: every event is one addition to an in-memory series
 * (a map lookup and an add; no JSON, no I/O), and `flush` writes what
 * accumulated as EMF records through Powertools Metrics, one record per
 * dimension combination, on a timer (`start`) and at shutdown. Same names
 * and namespace as the API's (config/metrics.ts).
 */
export class WorkerMetrics {
  private readonly series = new Map<string, Series>();
  private timer: NodeJS.Timeout | undefined;
  private metrics: Metrics | undefined;

  constructor(
    private readonly options: {
      namespace?: () => string;
      /** Where Powertools writes; tests hand in their own. */
      make?: (namespace: string) => Metrics;
    } = {},
  ) {}

  /** Adds `n` to a counter (with `dimensions`, e.g. `{ Code: 'InsufficientInstanceCapacity' }`). */
  count(name: MetricName, n = 1, dimensions?: Record<string, string>): void {
    this.add(name, unitOf(name), n, dimensions);
  }

  /** Records one value of a distribution (e.g. a batch's size). */
  observe(name: MetricName, value: number, dimensions?: Record<string, string>): void {
    this.sample(name, unitOf(name), value, dimensions);
  }

  /** `count` for a metric outside the catalogue (the Temporal SDK's own, worker/telemetry.ts). */
  add(name: string, unit: Unit, n: number, dimensions?: Record<string, string>): void {
    if (n === 0) return;
    this.entry(name, unit, dimensions).total += n;
  }

  /** `observe` for a metric outside the catalogue. */
  sample(name: string, unit: Unit, value: number, dimensions?: Record<string, string>): void {
    const s = this.entry(name, unit, dimensions);
    s.samples ??= [];
    s.seen++;
    if (s.samples.length < MAX_SAMPLES) {
      s.samples.push(value);
    } else {
      const slot = Math.floor(Math.random() * s.seen);
      if (slot < MAX_SAMPLES) s.samples[slot] = value;
    }
  }

  private entry(name: string, unit: Unit, dimensions?: Record<string, string>): Series {
    const key = dimensions === undefined ? name : `${name}\n${JSON.stringify(dimensions)}`;
    let s = this.series.get(key);
    if (!s) {
      s = { name, unit, dimensions: dimensions ?? {}, total: 0, seen: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  /** Writes what accumulated since the last flush (nothing when nothing happened). */
  flush(): void {
    if (this.series.size === 0) return;
    const groups = new Map<string, Series[]>();
    for (const s of this.series.values()) {
      const key = JSON.stringify(s.dimensions);
      const group = groups.get(key);
      if (group) group.push(s);
      else groups.set(key, [s]);
    }
    this.series.clear();
    const m = this.powertools();
    for (const group of groups.values()) {
      const dimensions = group[0]!.dimensions;
      const dimensioned = Object.keys(dimensions).length > 0;
      // counters in one record; each distribution in its own (its values are an array)
      const counters = group.filter((s) => s.samples === undefined);
      if (counters.length > 0) {
        this.begin(m, dimensions, dimensioned);
        for (const s of counters) m.addMetric(s.name, s.unit, s.total);
        m.publishStoredMetrics();
      }
      for (const s of group) {
        if (s.samples === undefined || s.samples.length === 0) continue;
        this.begin(m, dimensions, dimensioned);
        for (const v of s.samples) m.addMetric(s.name, s.unit, v);
        m.publishStoredMetrics();
      }
    }
  }

  /** A record's dimensions: its own and, when it has some, the service-wide set too (alarms watch that). */
  private begin(m: Metrics, dimensions: Record<string, string>, dimensioned: boolean): void {
    for (const [k, v] of Object.entries(dimensions)) m.addDimension(k, v);
    if (dimensioned) m.addDimensions({});
  }

  private powertools(): Metrics {
    if (!this.metrics) {
      const namespace = (this.options.namespace ?? metricsNamespace)();
      this.metrics = this.options.make
        ? this.options.make(namespace)
        : new Metrics({ namespace, serviceName: WORKER_SERVICE });
    }
    return this.metrics;
  }

  /** Flushes every `intervalMs` (unref'd: never keeps the process alive) and once more at exit. */
  start(intervalMs: number): void {
    if (this.timer) return;
    const safe = () => {
      try {
        this.flush();
      } catch {
        // a failed flush loses one interval's counts, never the worker
      }
    };
    this.timer = setInterval(safe, intervalMs);
    this.timer.unref();
    process.once('beforeExit', safe);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.flush();
  }
}

/** The worker process's metrics (started by worker/main.ts; a no-op buffer elsewhere until flushed). */
export const workerMetrics = new WorkerMetrics();
