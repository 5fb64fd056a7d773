import {
  DescribeAvailabilityZonesCommand,
  DescribeSubnetsCommand,
  RunInstancesCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { createHash } from 'node:crypto';
import { NoSuitableZoneError, orderZones, type AvailabilityZone } from '../core';
import { FAILURE } from '../workflows/failures';
import { classifyLaunchError } from './ec2-errors';
import type { ActivityDeps } from './deps';
import { failure, orMachineGone } from './failures';
import { buildLaunchPlan, LaunchPlanError, MIN_ROOT_DISK_MIB } from './plan';
import { groupPopulation } from './placement';
import { instanceTags, liveInstancesTagged } from './tags';
import type { LaunchPlan, MachineRef, StartedInstance } from './types';

/** A subnet by id (`subnet-…`) or CIDR block, with its zone. */
async function findSubnet(
  ec2: EC2Client,
  idOrCidr: string,
): Promise<{ subnetId: string; zone: string } | undefined> {
  const filter = idOrCidr.startsWith('subnet-')
    ? { Name: 'subnet-id', Values: [idOrCidr] }
    : { Name: 'cidr-block', Values: [idOrCidr] };
  const out = await ec2.send(new DescribeSubnetsCommand({ Filters: [filter] }));
  const subnet = (out.Subnets ?? []).find((s) => s.SubnetId && s.AvailabilityZone);
  return subnet ? { subnetId: subnet.SubnetId!, zone: subnet.AvailabilityZone! } : undefined;
}

/** The root device of Canonical's Ubuntu images (Juju uses the same). */
const ROOT_DEVICE = '/dev/sda1';

/** EC2's idempotency token: at most 64 ASCII characters, stable for one machine and zone attempt. */
export function clientToken(seed: string): string {
  return createHash('sha256').update(seed).digest('hex');
}

/** Planning, zone choice and the launch itself: the only code that starts EC2 instances. */
export function launchActivities(deps: ActivityDeps) {
  const { repo, store } = deps;

  async function zonesOf(region: string): Promise<AvailabilityZone[]> {
    // Read fresh for every choice: an impaired zone is never chosen.
    const out = await deps.ec2ForRegion(region).ec2.send(new DescribeAvailabilityZonesCommand({}));
    return (out.AvailabilityZones ?? []).flatMap((z) =>
      // Local and Wavelength zones are opt-in extras, never spread targets.
      z.ZoneName && (z.ZoneType === undefined || z.ZoneType === 'availability-zone')
        ? [{ name: z.ZoneName, state: z.State ?? 'unavailable' }]
        : [],
    );
  }

  return {
    /** Resolves instance type, hardware, image and allowed zones from the machine's current record. */
    async planLaunch(ref: MachineRef): Promise<LaunchPlan> {
      const [model, machine] = await orMachineGone(
        Promise.all([repo.getModel(ref.model), repo.getMachine(ref.model, ref.machineId)]),
      );
      const regional = deps.ec2ForRegion(model.region);
      const [catalogue, zones, prices] = await Promise.all([
        regional.catalogue.all(),
        zonesOf(model.region),
        // never throws: an unreadable price list gives no prices (size order)
        deps.prices?.forRegion(model.region),
      ]);
      try {
        return await buildLaunchPlan({
          model,
          machine,
          catalogue,
          ...(prices ? { prices } : {}),
          zones: zones.map((z) => z.name),
          zonesOffering: (type, names) => regional.catalogue.zonesOffering(type, names),
          findImage: (q) => regional.images.find(q),
          findSubnet: (idOrCidr) => findSubnet(regional.ec2, idOrCidr),
        });
      } catch (err) {
        if (err instanceof LaunchPlanError) throw failure(FAILURE.planFailed, err.message);
        throw err;
      }
    },

    /**
     * Claims the zone to try next, atomically against the machine's group:
     * healthy zones that the plan allows and that offer its type, minus the
     * zones this machine already failed in, least populous first.
     */
    async claimZone(input: MachineRef & { plan: LaunchPlan; exclude: string[] }): Promise<string> {
      const { plan } = input;
      const regional = deps.ec2ForRegion(plan.region);
      const zones = await zonesOf(plan.region);
      const offering = new Set(
        await regional.catalogue.zonesOffering(
          plan.instanceType,
          zones.map((z) => z.name),
        ),
      );
      const candidates = zones.filter((z) => offering.has(z.name));
      try {
        return await orMachineGone(
          store.claimZone(input.model, input.machineId, (machines) => {
            const self = machines.find((m) => m.id === input.machineId);
            const ordered = orderZones({
              machineId: input.machineId,
              zones: candidates,
              population: groupPopulation(machines, {
                id: input.machineId,
                applications: self?.applications ?? plan.applications,
              }),
              failedZones: input.exclude,
              zonesConstraint: plan.zonesConstraint,
              ...(plan.placementZone !== undefined ? { placementZone: plan.placementZone } : {}),
            });
            return ordered[0] as string;
          }),
        );
      } catch (err) {
        if (err instanceof NoSuitableZoneError) throw failure(FAILURE.noSuitableZone, err.message);
        throw err;
      }
    },

    /**
     * Launches the machine's instance in one zone. An instance already tagged
     * for this machine is adopted instead (a lost response never becomes a
     * second instance), and the client token makes a repeated call idempotent.
     */
    async startInstance(
      input: MachineRef & { zone: string; plan: LaunchPlan; tokenSeed: string },
    ): Promise<StartedInstance> {
      const { ec2 } = deps.ec2ForRegion(input.plan.region);
      const [existing] = await liveInstancesTagged(ec2, {
        deployment: deps.deployment,
        model: input.model,
        machineId: input.machineId,
      });
      if (existing?.InstanceId) {
        return {
          instanceId: existing.InstanceId,
          zone: existing.Placement?.AvailabilityZone ?? input.zone,
          instanceType: existing.InstanceType ?? input.plan.instanceType,
          imageId: existing.ImageId ?? input.plan.imageId,
          adopted: true,
        };
      }
      let instanceId: string | undefined;
      let zone = input.zone;
      try {
        const out = await ec2.send(
          new RunInstancesCommand({
            ImageId: input.plan.imageId,
            InstanceType: input.plan.instanceType as never,
            MinCount: 1,
            MaxCount: 1,
            ClientToken: clientToken(input.tokenSeed),
            Placement: { AvailabilityZone: input.zone },
            ...(input.plan.subnetId ? { SubnetId: input.plan.subnetId } : {}),
            // Juju's root device for Ubuntu images; its size is the plan's root disk (root-disk constraint, 8 GiB at least)
            BlockDeviceMappings: [
              {
                DeviceName: ROOT_DEVICE,
                Ebs: {
                  VolumeSize: Math.ceil((input.plan.hardware.rootDisk ?? MIN_ROOT_DISK_MIB) / 1024),
                  VolumeType: 'gp3',
                  DeleteOnTermination: true,
                },
              },
            ],
            TagSpecifications: [
              {
                ResourceType: 'instance',
                Tags: instanceTags({
                  model: input.model,
                  machineId: input.machineId,
                  applications: input.plan.applications,
                  deployment: deps.deployment,
                }),
              },
            ],
          }),
        );
        const instance = out.Instances?.[0];
        instanceId = instance?.InstanceId;
        zone = instance?.Placement?.AvailabilityZone ?? input.zone;
      } catch (err) {
        throw classifyLaunchError(err, input.zone);
      }
      if (!instanceId) {
        throw failure(FAILURE.startFailed, 'RunInstances answered without an instance');
      }
      return {
        instanceId,
        zone,
        instanceType: input.plan.instanceType,
        imageId: input.plan.imageId,
        adopted: false,
      };
    },
  };
}
