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
import { acknowledge, acknowledgeWildcardResources } from '../nag';
import type { WorkerSettings } from '../config';
import { ec2WorkerStatements, pricingWorkerStatement, ssmWorkerStatements } from '../permissions';
import { InstanceProfileForHosts } from './instance-profile';
import { workerNodeOptions } from '../../worker/heap';
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

/** Why each wildcard resource of the worker's EC2 and SSM statements (infra/permissions.ts) is accepted. */
const WILDCARD_REASONS: Readonly<Record<string, string>> = {
  RunTaggedInstances:
    'RunInstances creates instances whose ids are unknown until launch; the statement allows it only when the request carries this deployment’s tag (aws:RequestTag)',
  RunInstancesSupportingResources:
    'RunInstances touches images, subnets, security groups, network interfaces, volumes and key pairs chosen per launch (their ids come from the model’s constraints or are made by the launch); placement groups only by the names the provisioner gives them (core/partitions.ts)',
  ManagePlacementGroups:
    'Availability-set mode creates one partition placement group per application, named when the application is deployed; the grant covers only the names the provisioner gives them (core/partitions.ts)',
  TagOnLaunchOnly:
    'Tags go on the instances, volumes and network interfaces a launch creates; the statement allows CreateTags only as part of RunInstances (ec2:CreateAction)',
  TerminateOwnInstances:
    'Terminates instances by id, known only at run time; the statement allows it only on instances carrying this deployment’s tag (aws:ResourceTag)',
  SendCommandToOwnInstances:
    'Run Command on container hosts, known only at run time; the statement allows it only on instances carrying this deployment’s tag (ssm:resourceTag)',
};

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
        // V8's young generation as the bench measures it, not derived from the task's memory
        // (1 MiB semi-spaces in a 1 GiB task): worker/heap.ts
        NODE_OPTIONS: workerNodeOptions().join(' '),
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
    const taskRole = taskDefinition.taskRole;
    props.table.grantRepositoryAccess(taskRole);
    props.temporalApiKeySecret.grantRead(taskRole);
    const statements = [
      ...ec2WorkerStatements(this, props.deployment),
      pricingWorkerStatement(),
      ...ssmWorkerStatements(this, props.deployment, this.hosts.role.roleArn),
    ];
    for (const statement of statements) taskRole.addToPrincipalPolicy(statement);
    // rendered from the statements as this synth resolves them: the CLI's concrete
    // region, a token in an environment-agnostic synth, any account
    acknowledgeWildcardResources(taskDefinition, statements, ({ sid }, resource) => {
      const reason = sid === undefined ? undefined : WILDCARD_REASONS[sid];
      if (!reason)
        throw new Error(`worker statement ${sid ?? '(no sid)'}: no reason for ${resource}`);
      return reason;
    });

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
