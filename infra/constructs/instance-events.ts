import { Duration } from 'aws-cdk-lib';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { bundledFunction } from '../bundling';
import { ROUTINE_WRITE_ATTRIBUTES } from '../../state/provisioning';
import { INSTANCE_INDEX } from '../../state/schema';
import type { StateTable } from './state-table';

/** The EventBridge pattern of EC2's own state changes (every instance of the account and region). */
export const INSTANCE_STATE_CHANGE_PATTERN = {
  source: ['aws.ec2'],
  detailType: ['EC2 Instance State-change Notification'],
};

export interface InstanceEventsProps {
  table: StateTable;
  /** Shared runtime settings (table, Temporal endpoint, secret ARNs). */
  environment: Record<string, string>;
  temporalApiKeySecret: ISecret;
  /** The deployment tag value: instances of other deployments are ignored. */
  deployment: string;
  logRetention: RetentionDays;
}

/**
 * EC2 Instance State-change Notifications → a Lambda that writes routine
 * news (pending, running) to the machine and signals the machine's workflow
 * the rest (functions/instance-events.ts). A missed or failed event is not
 * lost for good: each model's sweep describes its instances every interval
 * and records or signals what changed.
 */
export class InstanceEvents extends Construct {
  readonly function: NodejsFunction;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: InstanceEventsProps) {
    super(scope, id);
    this.function = bundledFunction(this, 'Handler', {
      entry: 'functions/instance-events.ts',
      description: 'Provisioner: EC2 instance state changes to machine workflows',
      memoryMiB: 256,
      timeout: Duration.seconds(30),
      logRetention: props.logRetention,
      environment: {
        ...props.environment,
        PROVISIONER_DEPLOYMENT: props.deployment,
        POWERTOOLS_SERVICE_NAME: 'provisioner-instance-events',
      },
    });
    // the machine recording the instance is all the handler reads (one Query of the
    // byInstance index, Repository.machineByInstance); it asks EC2 nothing
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [`${props.table.table.tableArn}/index/${INSTANCE_INDEX}`],
      }),
    );
    // routine news (pending, running) is written to the machine's item itself, one
    // conditional UpdateItem (ProvisioningStore.recordRoutineInstanceState); nothing else:
    // it may name only that write's key, set and condition attributes, and read nothing back
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:UpdateItem'],
        resources: [props.table.table.tableArn],
        conditions: {
          'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...ROUTINE_WRITE_ATTRIBUTES] },
          StringEqualsIfExists: { 'dynamodb:ReturnValues': 'NONE' },
        },
      }),
    );
    props.temporalApiKeySecret.grantRead(this.function);

    this.rule = new Rule(this, 'StateChanges', {
      description: 'EC2 instance state changes, for the provisioner’s machines',
      eventPattern: INSTANCE_STATE_CHANGE_PATTERN,
    });
    this.rule.addTarget(
      new LambdaFunction(this.function, {
        retryAttempts: 4,
        // a state older than a few sweeps is stale: the sweep has caught up by then
        maxEventAge: Duration.hours(1),
      }),
    );
  }
}
