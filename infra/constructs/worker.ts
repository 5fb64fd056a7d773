import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import {
  GatewayVpcEndpointAwsService,
  FlowLogDestination,
  FlowLogTrafficType,
  Peer,
  Port,
  SecurityGroup,
  SubnetType,
  Vpc,
} from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import {
  Cluster,
  ContainerImage,
  ContainerInsights,
  CpuArchitecture,
  FargateService,
  FargateTaskDefinition,
  LogDrivers,
  OperatingSystemFamily,
  Secret as EcsSecret,
} from 'aws-cdk-lib/aws-ecs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { PROJECT_ROOT } from '../bundling';
import { acknowledge } from '../nag';
import type { WorkerSettings } from '../config';
import {
  ec2WorkerStatements,
  PLACEMENT_GROUP_PREFIX,
  pricingWorkerStatement,
  ssmWorkerStatements,
} from '../permissions';
import { InstanceProfileForHosts } from './instance-profile';
import type { StateTable } from './state-table';

export interface ProvisionerWorkerProps {
  settings: WorkerSettings;
  table: StateTable;
  /** Shared runtime settings (table, Temporal endpoint, secret ARN). */
  environment: Record<string, string>;
  temporalApiKeySecret: ISecret;
  /** Tag value scoping the EC2 instances this deployment may launch and terminate. */
  deployment: string;
  /** TCP port of the Temporal frontend, opened for egress. */
  temporalPort: number;
  logRetention: RetentionDays;
}

/** EC2 resource types the worker's launch statements name by wildcard (their ids are made by the launch). */
const EC2_WILDCARD_RESOURCE_TYPES = [
  'image',
  'instance',
  'key-pair',
  'network-interface',
  'security-group',
  'subnet',
  'volume',
] as const;

/** cdk-nag's rendering of `arn:…:ec2:<region>:<account>:<type>/*` (images have no account). */
function ec2WildcardResource(type: string): string {
  const account = type === 'image' ? '' : '<AWS::AccountId>';
  return `arn:<AWS::Partition>:ec2:<AWS::Region>:${account}:${type}/*`;
}

/** The Temporal worker: the repo's Dockerfile, built at deploy time, run on Fargate. */
export class ProvisionerWorker extends Construct {
  readonly cluster: Cluster;
  readonly service: FargateService;
  readonly logGroup: LogGroup;
  readonly vpc: Vpc;
  /** The role and instance profile of the instances the worker launches (SSM agent). */
  readonly hosts: InstanceProfileForHosts;

  constructor(scope: Construct, id: string, props: ProvisionerWorkerProps) {
    super(scope, id);
    const { settings } = props;
    const isPublic = settings.natGateways === 0;

    this.vpc = new Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: settings.natGateways,
      subnetConfiguration: isPublic
        ? [{ name: 'public', subnetType: SubnetType.PUBLIC, cidrMask: 24 }]
        : [
            { name: 'public', subnetType: SubnetType.PUBLIC, cidrMask: 24 },
            { name: 'private', subnetType: SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
          ],
      // Free gateway endpoints: DynamoDB traffic and ECR image layers skip the NAT.
      gatewayEndpoints: {
        DynamoDb: { service: GatewayVpcEndpointAwsService.DYNAMODB },
        S3: { service: GatewayVpcEndpointAwsService.S3 },
      },
    });
    // rejected traffic is kept for a week: enough to see what the worker tried to reach
    this.vpc.addFlowLog('FlowLog', {
      destination: FlowLogDestination.toCloudWatchLogs(
        new LogGroup(this, 'FlowLogs', {
          retention: props.logRetention,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
      ),
      trafficType: FlowLogTrafficType.REJECT,
    });

    this.cluster = new Cluster(this, 'Cluster', {
      vpc: this.vpc,
      // Container Insights publishes RunningTaskCount, which the health alarm watches.
      containerInsightsV2: ContainerInsights.ENABLED,
    });

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.hosts = new InstanceProfileForHosts(this, 'Hosts');

    const taskDefinition = new FargateTaskDefinition(this, 'TaskDefinition', {
      cpu: settings.cpu,
      memoryLimitMiB: settings.memoryMiB,
      runtimePlatform: {
        cpuArchitecture: CpuArchitecture.X86_64,
        operatingSystemFamily: OperatingSystemFamily.LINUX,
      },
    });
    taskDefinition.addContainer('worker', {
      image: ContainerImage.fromAsset(PROJECT_ROOT, {
        file: 'Dockerfile',
        platform: Platform.LINUX_AMD64,
      }),
      essential: true,
      logging: LogDrivers.awsLogs({ streamPrefix: 'worker', logGroup: this.logGroup }),
      environment: {
        ...props.environment,
        PROVISIONER_DEPLOYMENT: props.deployment,
        PROVISIONER_START_ATTEMPTS: String(settings.tuning.startAttempts),
        PROVISIONER_RETRY_DELAY: settings.tuning.retryDelay,
        PROVISIONER_SWEEP_INTERVAL: settings.tuning.sweepInterval,
        PROVISIONER_STRAY_GRACE: settings.tuning.strayGrace,
        // launched instances carry it, so their SSM agent registers (containers on their hosts)
        PROVISIONER_INSTANCE_PROFILE: this.hosts.profile.instanceProfileName,
        // Explicit, so config/env.ts never falls back to its local default region.
        AWS_REGION: Stack.of(this).region,
      },
      secrets: {
        TEMPORAL_API_KEY: EcsSecret.fromSecretsManager(props.temporalApiKeySecret),
      },
      stopTimeout: Duration.seconds(30),
    });

    acknowledge(
      taskDefinition,
      'ECS2',
      'The container’s environment holds only non-secret settings (table name, Temporal address, tuning); the Temporal API key comes from Secrets Manager as an ECS secret',
    );
    acknowledge(
      taskDefinition,
      'IAM5[Resource::*]',
      'Actions with no resource-level permissions: EC2 Describe*, SSM DescribeInstanceInformation and GetCommandInvocation, and the Price List API for the task role, ecr:GetAuthorizationToken for the execution role; everything that changes EC2 is scoped by resource and tag (infra/permissions.ts)',
    );
    for (const type of EC2_WILDCARD_RESOURCE_TYPES) {
      acknowledge(
        taskDefinition,
        `IAM5[Resource::${ec2WildcardResource(type)}]`,
        `RunInstances and its tagging create or touch ${type}s whose ids are unknown until launch; the statements are conditioned on this deployment's tag or on ec2:CreateAction (infra/permissions.ts)`,
      );
    }
    acknowledge(
      taskDefinition,
      `IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:placement-group/${PLACEMENT_GROUP_PREFIX}*]`,
      'Availability-set mode creates one partition placement group per application, named when the application is deployed; the grant covers only the names the provisioner gives them (core/partitions.ts)',
    );
    const taskRole = taskDefinition.taskRole;
    props.table.grantRepositoryAccess(taskRole);
    props.temporalApiKeySecret.grantRead(taskRole);
    for (const statement of ec2WorkerStatements(this, props.deployment)) {
      taskRole.addToPrincipalPolicy(statement);
    }
    taskRole.addToPrincipalPolicy(pricingWorkerStatement());
    for (const statement of ssmWorkerStatements(this, props.deployment, this.hosts.role.roleArn)) {
      taskRole.addToPrincipalPolicy(statement);
    }

    // No inbound traffic at all; out only to HTTPS (AWS APIs) and the Temporal frontend.
    const securityGroup = new SecurityGroup(this, 'SecurityGroup', {
      vpc: this.vpc,
      description: 'Provisioner worker: no ingress; egress to AWS APIs and Temporal',
      allowAllOutbound: false,
    });
    securityGroup.addEgressRule(Peer.anyIpv4(), Port.tcp(443), 'AWS APIs');
    if (props.temporalPort !== 443) {
      securityGroup.addEgressRule(
        Peer.anyIpv4(),
        Port.tcp(props.temporalPort),
        'Temporal frontend',
      );
    }

    this.service = new FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition,
      desiredCount: settings.desiredCount,
      assignPublicIp: isPublic,
      vpcSubnets: { subnetType: isPublic ? SubnetType.PUBLIC : SubnetType.PRIVATE_WITH_EGRESS },
      securityGroups: [securityGroup],
      circuitBreaker: { enable: true, rollback: true },
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
    });
  }

  /** Tasks running, from Container Insights (one data point a minute). */
  metricRunningTaskCount(): Metric {
    return new Metric({
      namespace: 'ECS/ContainerInsights',
      metricName: 'RunningTaskCount',
      dimensionsMap: {
        ClusterName: this.cluster.clusterName,
        ServiceName: this.service.serviceName,
      },
      statistic: 'Minimum',
      period: Duration.minutes(1),
    });
  }
}
