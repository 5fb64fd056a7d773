import { Annotations, Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  ComparisonOperator,
  type IMetric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Operation, type Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { AppMetrics } from './app-metrics';
import type { ProvisionerWorker } from './worker';
import { METRIC } from '../../config/metrics';

export interface ProvisionerAlarmsProps {
  alarmEmail?: string;
  functions: ReadonlyMap<string, IFunction>;
  table: Table;
  api: HttpApi;
  worker: ProvisionerWorker;
  workerDesiredCount: number;
  /** The provisioner's own EMF metrics (machines in error, 5xx by the handlers, EC2 throttling). */
  appMetrics: AppMetrics;
}

/** Throttled EC2 calls in five minutes that say the worker is pushing EC2 too hard (retries absorb fewer). */
export const THROTTLED_CALLS_THRESHOLD = 50;

/** DynamoDB operations the repository issues, whose throttling is alarmed. */
const TABLE_OPERATIONS = [
  Operation.GET_ITEM,
  Operation.BATCH_GET_ITEM,
  Operation.PUT_ITEM,
  Operation.UPDATE_ITEM,
  Operation.DELETE_ITEM,
  Operation.QUERY,
  Operation.TRANSACT_WRITE_ITEMS,
];

const FIVE_MINUTES = Duration.minutes(5);

/** Alarms on what keeps the provisioner alive, sent to one SNS topic. */
export class ProvisionerAlarms extends Construct {
  readonly topic: Topic;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ProvisionerAlarmsProps) {
    super(scope, id);
    this.topic = new Topic(this, 'Topic', { displayName: 'Provisioner alarms', enforceSSL: true });
    if (props.alarmEmail) {
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    } else {
      Annotations.of(this).addWarningV2(
        'provisioner:noAlarmEmail',
        'no alarm email configured (-c alarmEmail=…): alarms go to an SNS topic nobody is subscribed to',
      );
    }

    for (const [name, fn] of props.functions) {
      this.add(`${name}Errors`, {
        description: `Lambda ${name}: invocation errors`,
        metric: fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 1,
      });
      this.add(`${name}Throttles`, {
        description: `Lambda ${name}: throttled invocations`,
        metric: fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 1,
      });
    }

    this.add('TableThrottles', {
      description: 'DynamoDB: throttled requests on the provisioner table',
      metric: props.table.metricThrottledRequestsForOperations({
        operations: TABLE_OPERATIONS,
        period: FIVE_MINUTES,
      }),
      threshold: 1,
    });

    this.add('Api5xx', {
      description: 'HTTP API: server errors',
      metric: props.api.metricServerError({ period: FIVE_MINUTES }),
      threshold: 5,
    });

    const app = props.appMetrics;
    this.add('MachinesInError', {
      description: 'Provisioner: machines put in status error (provisioning failed for good)',
      metric: app.metric(METRIC.machinesInError, 'Sum', FIVE_MINUTES),
      threshold: 1,
    });
    this.add('HandlerServerErrors', {
      description: 'Provisioner API handlers: 5xx answers (EMF ServerErrors, all routes)',
      metric: app.metric(METRIC.serverErrors, 'Sum', FIVE_MINUTES),
      threshold: 5,
    });
    this.add('Ec2Throttling', {
      description: `Worker: ${THROTTLED_CALLS_THRESHOLD} or more EC2 calls throttled in 5 minutes`,
      metric: app.metric(METRIC.throttledCalls, 'Sum', FIVE_MINUTES),
      threshold: THROTTLED_CALLS_THRESHOLD,
    });

    this.add('WorkerTasksBelowDesired', {
      description: `Worker: fewer than ${props.workerDesiredCount} running task(s)`,
      metric: props.worker.metricRunningTaskCount(),
      threshold: props.workerDesiredCount,
      comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 5,
      // No data point means no task reported: treat as down.
      treatMissingData: TreatMissingData.BREACHING,
    });
  }

  private add(
    id: string,
    options: {
      description: string;
      metric: IMetric;
      threshold: number;
      comparisonOperator?: ComparisonOperator;
      evaluationPeriods?: number;
      treatMissingData?: TreatMissingData;
    },
  ): void {
    const alarm = new Alarm(this, id, {
      alarmDescription: options.description,
      metric: options.metric,
      threshold: options.threshold,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      comparisonOperator:
        options.comparisonOperator ?? ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: options.treatMissingData ?? TreatMissingData.NOT_BREACHING,
    });
    const action = new SnsAction(this.topic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
  }
}
