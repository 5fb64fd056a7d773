import { Duration } from 'aws-cdk-lib';
import { MathExpression, Metric, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import type { DIMENSION } from '../../config/metrics';
import { API_SERVICE, METRIC, WORKER_SERVICE, type MetricName } from '../../config/metrics';

/**
 * The provisioner's own metrics (config/metrics.ts) as CloudWatch sees them
 * once the EMF lines are in the logs: each is published service-wide
 * (dimension `service`) and, where it has one, by `Route` or `Code` too.
 */
export class AppMetrics {
  constructor(readonly namespace: string) {}

  private service(name: MetricName): string {
    return (
      [
        METRIC.requests,
        METRIC.latency,
        METRIC.clientErrors,
        METRIC.serverErrors,
        METRIC.auditWriteFailures,
      ] as MetricName[]
    ).includes(name)
      ? API_SERVICE
      : WORKER_SERVICE;
  }

  /** One metric over the whole service. */
  metric(name: MetricName, statistic = 'Sum', period = Duration.minutes(1)): Metric {
    return new Metric({
      namespace: this.namespace,
      metricName: name,
      dimensionsMap: { service: this.service(name) },
      statistic,
      period,
    });
  }

  /** The metric by one of its dimensions (every route, every EC2 code), found by a search. */
  by(
    name: MetricName,
    dimension: (typeof DIMENSION)[keyof typeof DIMENSION],
    statistic = 'Sum',
  ): IMetric {
    return new MathExpression({
      expression: `SEARCH('{${this.namespace},service,${dimension}} MetricName="${name}"', '${statistic}', 60)`,
      label: '',
      period: Duration.minutes(1),
    });
  }

  /** The Temporal SDK's own metric, as the worker writes it (worker/telemetry.ts). */
  temporal(name: string, statistic: string): Metric {
    return new Metric({
      namespace: this.namespace,
      metricName: name,
      dimensionsMap: { service: WORKER_SERVICE },
      statistic,
      period: Duration.minutes(1),
    });
  }
}
