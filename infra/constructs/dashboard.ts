import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Dashboard, GraphWidget, type IMetric, TextWidget } from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { ProvisionerWorker } from './worker';

export interface ProvisionerDashboardProps {
  /** `provisioner-<env>`: the dashboard's name in the CloudWatch console. */
  dashboardName: string;
  functions: ReadonlyMap<string, IFunction>;
  table: Table;
  api: HttpApi;
  worker: ProvisionerWorker;
}

const PERIOD = Duration.minutes(1);

/**
 * One CloudWatch dashboard per environment, from the metrics AWS publishes
 * for the stack's resources: the API's requests, 4xx, 5xx and latency, each
 * Lambda's invocations, errors, throttles and duration, the table's
 * throttling, and the worker's running tasks.
 */
export class ProvisionerDashboard extends Construct {
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: ProvisionerDashboardProps) {
    super(scope, id);
    const fns = [...props.functions];
    const perFunction = (metric: (fn: IFunction) => IMetric) => fns.map(([, fn]) => metric(fn));
    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${props.dashboardName}\nAPI, Lambdas, table and worker. Alarms go to the stack's alarm topic.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'API requests, 4xx, 5xx',
        left: [
          props.api.metricCount({ period: PERIOD, statistic: 'Sum' }),
          props.api.metricClientError({ period: PERIOD, statistic: 'Sum' }),
          props.api.metricServerError({ period: PERIOD, statistic: 'Sum' }),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: 'API latency (p50, p99)',
        left: [
          props.api.metricLatency({ period: PERIOD, statistic: 'p50' }),
          props.api.metricLatency({ period: PERIOD, statistic: 'p99' }),
        ],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Lambda errors',
        left: perFunction((fn) => fn.metricErrors({ period: PERIOD, statistic: 'Sum' })),
        width: 8,
      }),
      new GraphWidget({
        title: 'Lambda throttles',
        left: perFunction((fn) => fn.metricThrottles({ period: PERIOD, statistic: 'Sum' })),
        width: 8,
      }),
      new GraphWidget({
        title: 'Lambda duration (p99)',
        left: perFunction((fn) => fn.metricDuration({ period: PERIOD, statistic: 'p99' })),
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Table: throttle events, consumed capacity',
        left: [
          props.table.metric('ReadThrottleEvents', { period: PERIOD, statistic: 'Sum' }),
          props.table.metric('WriteThrottleEvents', { period: PERIOD, statistic: 'Sum' }),
        ],
        right: [
          props.table.metricConsumedReadCapacityUnits({ period: PERIOD, statistic: 'Sum' }),
          props.table.metricConsumedWriteCapacityUnits({ period: PERIOD, statistic: 'Sum' }),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: 'Worker running tasks',
        left: [props.worker.metricRunningTaskCount()],
        width: 12,
      }),
    );
  }
}
