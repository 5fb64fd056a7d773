import { TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import type { ActivityDeps } from './deps';
import { liveInstancesTagged, notTerminated } from './tags';
import type { MachineRef } from './types';

/** Stopping a Dead machine's instances. */
export function teardownActivities(deps: ActivityDeps) {
  return {
    /** Live instances tagged for the machine (a launch that was never recorded included). */
    async instancesTaggedFor(input: MachineRef & { region: string }): Promise<string[]> {
      const instances = await liveInstancesTagged(deps.ec2ForRegion(input.region).ec2, {
        deployment: deps.deployment,
        model: input.model,
        machineId: input.machineId,
      });
      return instances.flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
    },

    /** Asks EC2 to terminate instances; terminated or unknown ones are skipped. */
    async terminateInstances(input: { region: string; instanceIds: string[] }): Promise<void> {
      const { ec2 } = deps.ec2ForRegion(input.region);
      // Only those EC2 still knows and has not terminated: an unknown id fails the whole call.
      const live = await notTerminated(ec2, input.instanceIds);
      if (live.length === 0) return;
      await ec2.send(new TerminateInstancesCommand({ InstanceIds: live }));
    },

    /** Those of the instances EC2 does not yet report terminated. */
    async instancesNotTerminated(input: {
      region: string;
      instanceIds: string[];
    }): Promise<string[]> {
      return notTerminated(deps.ec2ForRegion(input.region).ec2, input.instanceIds);
    },
  };
}
