import { Annotations, CfnOutput, RemovalPolicy, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { DEFAULT_TABLE_NAME } from '../state/schema';
import { ACCOUNT_PLACEHOLDER, deploymentId, temporalUiUrl, type EnvironmentConfig } from './config';
import { ProvisionerAlarms } from './constructs/alarms';
import { ProvisionerApi } from './constructs/api';
import { ProvisionerDashboard } from './constructs/dashboard';
import { ProvisionerIdentity } from './constructs/identity';
import { InstanceEvents } from './constructs/instance-events';
import { SearchAttributes } from './constructs/search-attributes';
import { StateTable } from './constructs/state-table';
import { ProvisionerWorker } from './constructs/worker';
import { acknowledge } from './nag';
import { AppMetrics } from './constructs/app-metrics';
import { namespaceFor } from '../config/metrics';

export interface ProvisionerStackProps extends StackProps {
  config: EnvironmentConfig;
}

/** Everything one environment runs: table, API, worker, EC2 state-change events, search attributes, alarms. */
export class ProvisionerStack extends Stack {
  readonly config: EnvironmentConfig;
  readonly table: StateTable;
  readonly api: ProvisionerApi;
  readonly worker: ProvisionerWorker;
  readonly instanceEvents: InstanceEvents;
  readonly searchAttributes: SearchAttributes;
  readonly alarms: ProvisionerAlarms;
  readonly dashboard: ProvisionerDashboard;
  readonly apiTokenSecret: Secret;
  readonly temporalApiKeySecret: ISecret;

  constructor(scope: Construct, id: string, props: ProvisionerStackProps) {
    super(scope, id, props);
    const { config } = props;
    this.config = config;
    const deployment = deploymentId(config);
    Tags.of(this).add('provisioner:environment', config.name);

    if (config.temporal.namespace.includes(ACCOUNT_PLACEHOLDER)) {
      Annotations.of(this).addWarningV2(
        'provisioner:temporalPlaceholder',
        `Temporal namespace "${config.temporal.namespace}" is a placeholder: set it in infra/config.ts ` +
          'or with -c temporalAddress=… -c temporalNamespace=… before deploying',
      );
    }

    this.table = new StateTable(this, 'State', {
      tableName: `${DEFAULT_TABLE_NAME}-${config.name}`,
      retain: config.retainData,
    });

    // Created by whoever sets up the environment (docs/deploy.md); never in plain config.
    this.temporalApiKeySecret = Secret.fromSecretNameV2(
      this,
      'TemporalApiKey',
      config.temporal.apiKeySecretName,
    );
    this.apiTokenSecret = new Secret(this, 'ApiToken', {
      secretName: `provisioner/${config.name}/api-token`,
      description: `Bearer token of the ${config.name} provisioner API`,
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    acknowledge(
      this.apiTokenSecret,
      'SMG4',
      'A static bearer token held by API clients: rotating it on a schedule would lock every client out; it is rotated by hand (docs/deploy.md)',
    );

    const runtimeEnvironment = {
      PROVISIONER_TABLE: this.table.table.tableName,
      TEMPORAL_ADDRESS: config.temporal.address,
      TEMPORAL_NAMESPACE: config.temporal.namespace,
      TEMPORAL_API_KEY_SECRET_ARN: this.temporalApiKeySecret.secretArn,
    };
    // one CloudWatch namespace per environment for the EMF metrics of the API and the worker
    const metricsNamespace = namespaceFor(config.name);
    const appMetrics = new AppMetrics(metricsNamespace);

    const identity = new ProvisionerIdentity(this, 'Identity', {
      environmentName: config.name,
      retain: config.retainData,
      ...(config.identity ? { existing: config.identity } : {}),
    });

    this.api = new ProvisionerApi(this, 'Api', {
      identity,
      settings: config.api,
      table: this.table,
      environment: {
        ...runtimeEnvironment,
        PROVISIONER_API_TOKEN_SECRET_ARN: this.apiTokenSecret.secretArn,
        ...(config.adminTokenDisabled ? { PROVISIONER_ADMIN_TOKEN_DISABLED: 'true' } : {}),
        POWERTOOLS_SERVICE_NAME: 'provisioner-api',
        // plans read the launch record the worker keeps under this deployment (state/launch-record.ts)
        PROVISIONER_DEPLOYMENT: deployment,
        POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
      },
      apiTokenSecret: this.apiTokenSecret,
      temporalApiKeySecret: this.temporalApiKeySecret,
      logRetention: config.logRetention,
    });

    this.searchAttributes = new SearchAttributes(this, 'SearchAttributes', {
      temporal: config.temporal,
      apiKeySecret: config.temporal.searchAttributes.opsApiKeySecretName
        ? Secret.fromSecretNameV2(
            this,
            'TemporalOpsApiKey',
            config.temporal.searchAttributes.opsApiKeySecretName,
          )
        : this.temporalApiKeySecret,
      logRetention: config.logRetention,
    });

    this.worker = new ProvisionerWorker(this, 'Worker', {
      settings: config.worker,
      table: this.table,
      environment: {
        ...runtimeEnvironment,
        POWERTOOLS_SERVICE_NAME: 'provisioner-worker',
        POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
        // the SDK's metrics as EMF on stdout, with the worker's own (worker/telemetry.ts)
        PROVISIONER_TEMPORAL_METRICS: 'emf',
      },
      temporalApiKeySecret: this.temporalApiKeySecret,
      deployment,
      temporalPort: Number(config.temporal.address.split(':').pop()),
      logRetention: config.logRetention,
    });
    // Workflows set the attributes from their first task: register them before any worker polls.
    this.worker.service.node.addDependency(this.searchAttributes.resource);

    this.instanceEvents = new InstanceEvents(this, 'InstanceEvents', {
      table: this.table,
      // its bundle takes in the metrics catalogue: its metrics go to the environment's namespace
      environment: { ...runtimeEnvironment, POWERTOOLS_METRICS_NAMESPACE: metricsNamespace },
      temporalApiKeySecret: this.temporalApiKeySecret,
      deployment,
      logRetention: config.logRetention,
    });

    this.alarms = new ProvisionerAlarms(this, 'Alarms', {
      alarmEmail: config.alarmEmail,
      functions: new Map<string, IFunction>([
        ...this.api.functions,
        ['instanceEvents', this.instanceEvents.function] as const,
      ]),
      table: this.table.table,
      api: this.api.api,
      worker: this.worker,
      workerDesiredCount: config.worker.desiredCount,
      appMetrics,
    });

    this.dashboard = new ProvisionerDashboard(this, 'Dashboard', {
      dashboardName: deployment,
      functions: new Map<string, IFunction>([
        ...this.api.functions,
        ['instanceEvents', this.instanceEvents.function] as const,
      ]),
      table: this.table.table,
      api: this.api.api,
      worker: this.worker,
      appMetrics,
    });

    new CfnOutput(this, 'ApiUrl', {
      value: this.api.url,
      description: 'Base URL of the HTTPS API',
    });
    new CfnOutput(this, 'TableName', { value: this.table.table.tableName });
    new CfnOutput(this, 'ApiTokenSecretArn', {
      value: this.apiTokenSecret.secretArn,
      description: 'aws secretsmanager get-secret-value --secret-id <this> to read the API token',
    });
    new CfnOutput(this, 'WorkerLogGroup', { value: this.worker.logGroup.logGroupName });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.alarms.topic.topicArn });
    new CfnOutput(this, 'DashboardUrl', {
      value: `https://console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards:name=${deployment}`,
      description: 'The CloudWatch dashboard of this environment',
    });
    const uiUrl = temporalUiUrl(config.temporal);
    if (uiUrl) new CfnOutput(this, 'TemporalUiUrl', { value: uiUrl });
  }
}
