import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Dashboard, GraphWidget, type IMetric, TextWidget } from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { METRIC } from '../../config/metrics';
import type { AppMetrics } from './app-metrics';
import type { ProvisionerWorker } from './worker';

export interface ProvisionerDashboardProps {
  /** `provisioner-<env>`: the dashboard's name in the CloudWatch console. */
  dashboardName: string;
  functions: ReadonlyMap<string, IFunction>;
  table: Table;
  api: HttpApi;
  worker: ProvisionerWorker;
  appMetrics: AppMetrics;
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
    const app = props.appMetrics;
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Handlers: requests by route',
        left: [app.by(METRIC.requests, 'Route')],
        width: 8,
      }),
      new GraphWidget({
        title: 'Handlers: 4xx and 5xx',
        left: [app.metric(METRIC.clientErrors), app.metric(METRIC.serverErrors)],
        width: 8,
      }),
      new GraphWidget({
        title: 'Handlers: latency by route (p99)',
        left: [app.by(METRIC.latency, 'Route', 'p99')],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Audit entries not written (the requests themselves stood)',
        left: [app.metric(METRIC.auditWriteFailures)],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Launches, zone failovers, machines in error',
        left: [
          app.metric(METRIC.launches),
          app.metric(METRIC.zoneFailovers),
          app.metric(METRIC.machinesInError),
          app.metric(METRIC.teardownBlocked),
          app.metric(METRIC.firstLaunchesDeferred),
        ],
        width: 8,
      }),
      new GraphWidget({
        title: 'Launch errors by EC2 code',
        left: [app.by(METRIC.launchErrors, 'Code')],
        width: 8,
      }),
      new GraphWidget({
        title: 'Launch batch size; EC2 calls throttled',
        left: [app.metric(METRIC.batchSize, 'Average'), app.metric(METRIC.batchSize, 'Maximum')],
        right: [app.metric(METRIC.throttledCalls)],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Temporal: schedule-to-start latency (p99)',
        left: [
          app.temporal('temporal_workflow_task_schedule_to_start_latency', 'p99'),
          app.temporal('temporal_activity_schedule_to_start_latency', 'p99'),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: 'Temporal: failed requests; task slots and the workflow-task backlog',
        left: [
          app.temporal('temporal_request_failure', 'Sum'),
          app.temporal('temporal_long_request_failure', 'Sum'),
        ],
        // with the backlog gate on, the SDK's series holds only the activity slots; the gate's
        // own counts (worker/telemetry.ts sampleBacklogGate) stand for the workflow slots
        right: [
          app.temporal('temporal_worker_task_slots_available', 'Minimum'),
          app.temporal('workflow_task_slots_free', 'Minimum'),
          app.temporal('workflow_task_backlog', 'Maximum'),
          app.temporal('workflow_task_reservations_waiting', 'Maximum'),
          app.temporal('local_activities_running', 'Maximum'),
        ],
        width: 12,
      }),
    );
  }
}
