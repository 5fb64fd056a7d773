import { Arn, ArnFormat, Aws, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';

/** The tag that marks an EC2 instance as launched by one deployment (activities/index.ts sets it). */
export const DEPLOYMENT_TAG = 'provisioner:deployment';

/**
 * DynamoDB actions the repository uses. `TransactWriteItems` is authorized
 * per item (Put/Update/Delete/ConditionCheck), `TransactGetItems` as GetItem;
 * `BatchGetItem` is its own action (zone claims and releases read their
 * counters with it, state/zone-counts.ts), not covered by GetItem.
 * `PartiQLUpdate`: the worker's BatchExecuteStatement of UPDATE statements
 * (state/statement-batch.ts: a launch batch's marks, the records of launched
 * instances, the running catch-up's routine `running` writes,
 * state/provisioning.ts recordRoutineRunningAll, the sweep's address writes)
 * is authorized per
 * statement as PartiQLUpdate on the table.
 */
export const TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
  'dynamodb:PartiQLUpdate',
] as const;

/** EC2 read calls the activities make; EC2 supports no resource scoping for them. */
export const EC2_DESCRIBE_ACTIONS = [
  'ec2:DescribeInstances',
  'ec2:DescribeImages',
  'ec2:DescribeInstanceTypes',
  'ec2:DescribeInstanceTypeOfferings',
  'ec2:DescribeAvailabilityZones',
  'ec2:DescribeSubnets',
  'ec2:DescribePlacementGroups',
] as const;

/** Availability-set mode's partition placement groups (ec2/placement-groups.ts). */
export const PLACEMENT_GROUP_ACTIONS = [
  'ec2:CreatePlacementGroup',
  'ec2:DeletePlacementGroup',
] as const;

/** The prefix of every placement group the provisioner names (core/partitions.ts). */
export const PLACEMENT_GROUP_PREFIX = 'juju-';

/**
 * The Price List API call the worker makes to order instance types by price
 * (activities/pricing.ts). The Price List API has no resources to scope to.
 */
export const PRICING_ACTIONS = ['pricing:GetProducts'] as const;

/** SSM reads of a container's workflow (activities/ssm.ts): neither supports resource-level scoping. */
export const SSM_READ_ACTIONS = [
  'ssm:DescribeInstanceInformation',
  'ssm:GetCommandInvocation',
] as const;

/** The only SSM document the worker runs (core/containers.ts). */
export const SSM_DOCUMENT = 'AWS-RunShellScript';

/** The AWS managed policy that lets the SSM agent on an instance register and take commands. */
export const SSM_INSTANCE_POLICY = 'AmazonSSMManagedInstanceCore';

/**
 * Containers on their hosts (issue 15): Run Command with AWS-RunShellScript
 * only, only on this deployment's instances; reading command results and
 * which instances are online; passing the instances' role to EC2 at launch.
 */
export function ssmWorkerStatements(
  scope: Construct,
  deployment: string,
  instanceRoleArn: string,
): PolicyStatement[] {
  const stack = Stack.of(scope);
  return [
    new PolicyStatement({
      sid: 'RunShellScriptDocument',
      effect: Effect.ALLOW,
      actions: ['ssm:SendCommand'],
      resources: [
        Arn.format(
          {
            service: 'ssm',
            account: '',
            resource: 'document',
            resourceName: SSM_DOCUMENT,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          },
          stack,
        ),
      ],
    }),
    new PolicyStatement({
      sid: 'SendCommandToOwnInstances',
      effect: Effect.ALLOW,
      actions: ['ssm:SendCommand'],
      resources: [ec2Arn(scope, 'instance')],
      conditions: { StringEquals: { [`ssm:resourceTag/${DEPLOYMENT_TAG}`]: deployment } },
    }),
    new PolicyStatement({
      sid: 'ReadCommandsAndInstances',
      effect: Effect.ALLOW,
      actions: [...SSM_READ_ACTIONS],
      resources: ['*'],
    }),
    new PolicyStatement({
      sid: 'PassInstanceRole',
      effect: Effect.ALLOW,
      actions: ['iam:PassRole'],
      resources: [instanceRoleArn],
      conditions: { StringEquals: { 'iam:PassedToService': 'ec2.amazonaws.com' } },
    }),
  ];
}

/** Reading on-demand prices: GetProducts on every resource (the only form IAM offers). */
export function pricingWorkerStatement(): PolicyStatement {
  return new PolicyStatement({
    sid: 'ReadPrices',
    effect: Effect.ALLOW,
    actions: [...PRICING_ACTIONS],
    resources: ['*'],
  });
}

function ec2Arn(
  scope: Construct,
  resource: string,
  account: string = Aws.ACCOUNT_ID,
  resourceName = '*',
): string {
  return Arn.format(
    {
      service: 'ec2',
      resource,
      resourceName,
      account,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    },
    Stack.of(scope),
  );
}

/**
 * What the worker's activities may do in EC2: launch instances only when they
 * carry this deployment's tag, tag only while launching, terminate only
 * instances with the tag, and describe.
 */
export function ec2WorkerStatements(scope: Construct, deployment: string): PolicyStatement[] {
  const instances = ec2Arn(scope, 'instance');
  return [
    new PolicyStatement({
      sid: 'RunTaggedInstances',
      effect: Effect.ALLOW,
      actions: ['ec2:RunInstances'],
      resources: [instances],
      conditions: { StringEquals: { [`aws:RequestTag/${DEPLOYMENT_TAG}`]: deployment } },
    }),
    new PolicyStatement({
      // The other resources a launch touches: they carry no request tags.
      sid: 'RunInstancesSupportingResources',
      effect: Effect.ALLOW,
      actions: ['ec2:RunInstances'],
      resources: [
        ec2Arn(scope, 'image', ''),
        ec2Arn(scope, 'subnet'),
        ec2Arn(scope, 'security-group'),
        ec2Arn(scope, 'network-interface'),
        ec2Arn(scope, 'volume'),
        ec2Arn(scope, 'key-pair'),
        ec2Arn(scope, 'placement-group', Aws.ACCOUNT_ID, `${PLACEMENT_GROUP_PREFIX}*`),
      ],
    }),
    new PolicyStatement({
      // availability-set mode: only the groups the provisioner names
      sid: 'ManagePlacementGroups',
      effect: Effect.ALLOW,
      actions: [...PLACEMENT_GROUP_ACTIONS],
      resources: [ec2Arn(scope, 'placement-group', Aws.ACCOUNT_ID, `${PLACEMENT_GROUP_PREFIX}*`)],
    }),
    new PolicyStatement({
      sid: 'TagOnLaunchOnly',
      effect: Effect.ALLOW,
      actions: ['ec2:CreateTags'],
      resources: [instances, ec2Arn(scope, 'volume'), ec2Arn(scope, 'network-interface')],
      conditions: { StringEquals: { 'ec2:CreateAction': 'RunInstances' } },
    }),
    new PolicyStatement({
      sid: 'TerminateOwnInstances',
      effect: Effect.ALLOW,
      actions: ['ec2:TerminateInstances'],
      resources: [instances],
      conditions: { StringEquals: { [`aws:ResourceTag/${DEPLOYMENT_TAG}`]: deployment } },
    }),
    new PolicyStatement({
      sid: 'Describe',
      effect: Effect.ALLOW,
      actions: [...EC2_DESCRIBE_ACTIONS],
      resources: ['*'],
    }),
  ];
}
