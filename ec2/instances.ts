import {
  DescribeInstancesCommand,
  DescribeSubnetsCommand,
  RunInstancesCommand,
  TerminateInstancesCommand,
  type DescribeInstancesCommandInput,
  type DescribeInstancesCommandOutput,
  type EC2Client,
  type Instance,
  type RunInstancesCommandInput,
  type RunInstancesCommandOutput,
  type TerminateInstancesCommandOutput,
} from '@aws-sdk/client-ec2';

/**
 * The instance calls the worker makes (launch, describe, terminate, the
 * subnet a placement names). Callers hold an `Ec2Client` from regional.ts (the
 * worker's paced client) and get EC2's own shapes back: this module is the one
 * place that knows the SDK's command classes.
 */

export type Ec2Client = EC2Client;
/** An instance as EC2 describes it. */
export type Ec2Instance = Instance;
export type RunInstancesInput = RunInstancesCommandInput;

export function runInstances(
  ec2: Ec2Client,
  input: RunInstancesInput,
): Promise<RunInstancesCommandOutput> {
  return ec2.send(new RunInstancesCommand(input));
}

export function describeInstances(
  ec2: Ec2Client,
  input: DescribeInstancesCommandInput,
): Promise<DescribeInstancesCommandOutput> {
  return ec2.send(new DescribeInstancesCommand(input));
}

export function terminateInstances(
  ec2: Ec2Client,
  instanceIds: string[],
): Promise<TerminateInstancesCommandOutput> {
  return ec2.send(new TerminateInstancesCommand({ InstanceIds: instanceIds }));
}

/** A subnet by id (`subnet-…`) or CIDR block, with its zone. */
export async function findSubnet(
  ec2: Ec2Client,
  idOrCidr: string,
): Promise<{ subnetId: string; zone: string } | undefined> {
  const filter = idOrCidr.startsWith('subnet-')
    ? { Name: 'subnet-id', Values: [idOrCidr] }
    : { Name: 'cidr-block', Values: [idOrCidr] };
  const out = await ec2.send(new DescribeSubnetsCommand({ Filters: [filter] }));
  const subnet = (out.Subnets ?? []).find((s) => s.SubnetId && s.AvailabilityZone);
  return subnet ? { subnetId: subnet.SubnetId!, zone: subnet.AvailabilityZone! } : undefined;
}
