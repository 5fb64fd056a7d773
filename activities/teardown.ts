import { TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import type { ActivityDeps } from './deps';
import { ec2ErrorCode } from './ec2-errors';
import { liveInstancesTagged, notTerminated } from './tags';
import type { MachineRef } from './types';

/** Stopping a Dead machine's instances. */
export function teardownActivities(deps: ActivityDeps) {
  return {
    /** Live instances tagged for the machine (a launch that was never recorded included). */
    async instancesTaggedFor(
      input: MachineRef & { region: string; modelUid?: string },
    ): Promise<string[]> {
      const instances = await liveInstancesTagged(deps.ec2ForRegion(input.region).ec2, {
        deployment: deps.deployment,
        model: input.model,
        machineId: input.machineId,
        ...(input.modelUid ? { modelUid: input.modelUid } : {}),
      });
      return instances.flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
    },

    /**
     * Asks EC2 to terminate instances, one call each (terminating a terminated
     * instance is a no-op). An id EC2 does not know is gone, unless this run
     * launched it: EC2 lists a new instance only after a few seconds, so a
     * fresh id it does not know yet is retried (with the activity's backoff),
     * never skipped, and never left running.
     */
    async terminateInstances(input: {
      region: string;
      instanceIds: string[];
      fresh?: string[];
    }): Promise<void> {
      const { ec2 } = deps.ec2ForRegion(input.region);
      for (const id of input.instanceIds) {
        try {
          await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
        } catch (err) {
          if (ec2ErrorCode(err) !== 'InvalidInstanceID.NotFound') throw err;
          if (input.fresh?.includes(id)) {
            throw new Error(
              `instance ${id} was just launched and EC2 does not list it yet; retrying`,
            );
          }
        }
      }
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
