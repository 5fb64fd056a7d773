import { DescribeRegionsCommand } from '@aws-sdk/client-ec2';
import type { Ec2Client } from './instances';

/** The regions EC2 offers the account (DescribeRegions), by name. */
export async function describeRegionNames(
  ec2: Pick<Ec2Client, 'send'>,
): Promise<ReadonlySet<string>> {
  const out = await ec2.send(new DescribeRegionsCommand({}));
  return new Set((out.Regions ?? []).flatMap((r) => (r.RegionName ? [r.RegionName] : [])));
}
