import {
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  RunInstancesCommand,
  type EC2Client,
  type Instance,
} from '@aws-sdk/client-ec2';
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import type { ProvisioningTuning } from '../config/env';
import type { Repository } from '../state/repository';
import { classifyLaunchError } from './ec2-errors';
import { ImageFinder } from './images';
import { InstanceTypeCatalogue } from './instance-types';
import { planLaunch, orderZones } from './plan';
import type { LaunchPlan, MachineRef, StatusUpdate } from './types';

export interface ActivityDeps {
  repo: Repository;
  ec2: EC2Client;
  region: string;
  tuning: ProvisioningTuning;
  /** Tag value that scopes this deployment's instances (IAM conditions in the cloud use it). */
  deployment: string;
}

export const TAG_MODEL = 'provisioner:model';
export const TAG_MACHINE = 'provisioner:machine';
export const TAG_DEPLOYMENT = 'provisioner:deployment';

/** Instance states that still count as "this machine has an instance". */
const LIVE_STATES = ['pending', 'running', 'stopping', 'stopped'];

export function createActivities(deps: ActivityDeps) {
  const { repo, ec2 } = deps;
  const images = new ImageFinder(ec2);
  const catalogue = new InstanceTypeCatalogue(ec2);

  async function instanceTaggedFor(
    model: string,
    machineId: string,
  ): Promise<Instance | undefined> {
    const out = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: `tag:${TAG_MODEL}`, Values: [model] },
          { Name: `tag:${TAG_MACHINE}`, Values: [machineId] },
          { Name: 'instance-state-name', Values: LIVE_STATES },
        ],
      }),
    );
    const instances = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    instances.sort((a, b) => (a.LaunchTime?.getTime() ?? 0) - (b.LaunchTime?.getTime() ?? 0));
    return instances[0];
  }

  return {
    /** Worker tuning, read from the worker's environment and recorded in history. */
    tuning(): Promise<{ startAttempts: number; retryDelayMs: number }> {
      return Promise.resolve({
        startAttempts: deps.tuning.startAttempts,
        retryDelayMs: deps.tuning.retryDelayMs,
      });
    },

    async planLaunch(ref: MachineRef): Promise<LaunchPlan> {
      const [model, machine] = await Promise.all([
        repo.getModel(ref.model),
        repo.getMachine(ref.model, ref.machineId),
      ]);
      return planLaunch({ model, machine, images, catalogue });
    },

    /** The least populous healthy zone this machine has not failed in. */
    async chooseZone(input: MachineRef & { plan: LaunchPlan; exclude: string[] }): Promise<string> {
      const [zonesOut, machines] = await Promise.all([
        ec2.send(new DescribeAvailabilityZonesCommand({})),
        repo.listMachines(input.model),
      ]);
      const offered = await Promise.all(
        (zonesOut.AvailabilityZones ?? []).map(async (z) => ({
          name: z.ZoneName ?? '',
          state: z.State ?? 'unavailable',
          offersType: z.ZoneName
            ? (await catalogue.offeredIn(z.ZoneName)).has(input.plan.instanceType)
            : false,
        })),
      );
      const population: Record<string, number> = {};
      for (const m of machines) {
        if (m.id !== input.machineId && m.zone && m.life !== 'dead')
          population[m.zone] = (population[m.zone] ?? 0) + 1;
      }
      const ordered = orderZones({
        machineId: input.machineId,
        zones: offered.filter((z) => z.offersType).map(({ name, state }) => ({ name, state })),
        population,
        failedZones: input.exclude,
        allowedZones: input.plan.allowedZones,
      });
      const first = ordered[0];
      if (!first) {
        throw ApplicationFailure.create({
          type: 'NoSuitableZone',
          message: `suitable availability zone for machine ${input.machineId} not found`,
          nonRetryable: true,
        });
      }
      return first;
    },

    /**
     * Launches the machine's instance in one zone. An instance already tagged
     * for this machine is adopted instead (a lost response never becomes a
     * second instance), and the client token makes a repeated call idempotent.
     */
    async startInstance(
      input: MachineRef & { zone: string; plan: LaunchPlan; tokenSeed: string },
    ): Promise<{ instanceId: string; zone: string }> {
      const existing = await instanceTaggedFor(input.model, input.machineId);
      if (existing?.InstanceId) {
        return {
          instanceId: existing.InstanceId,
          zone: existing.Placement?.AvailabilityZone ?? input.zone,
        };
      }
      const clientToken = createHash('sha256').update(input.tokenSeed).digest('hex');
      try {
        const out = await ec2.send(
          new RunInstancesCommand({
            ImageId: input.plan.imageId,
            InstanceType: input.plan.instanceType as never,
            MinCount: 1,
            MaxCount: 1,
            ClientToken: clientToken,
            Placement: { AvailabilityZone: input.zone },
            TagSpecifications: [
              {
                ResourceType: 'instance',
                Tags: [
                  { Key: 'Name', Value: `${input.model}-machine-${input.machineId}` },
                  { Key: TAG_MODEL, Value: input.model },
                  { Key: TAG_MACHINE, Value: input.machineId },
                  { Key: TAG_DEPLOYMENT, Value: deps.deployment },
                ],
              },
            ],
          }),
        );
        const instance = out.Instances?.[0];
        if (!instance?.InstanceId) throw new Error('RunInstances answered without an instance');
        return {
          instanceId: instance.InstanceId,
          zone: instance.Placement?.AvailabilityZone ?? input.zone,
        };
      } catch (err) {
        throw classifyLaunchError(err, input.zone);
      }
    },

    async recordRunning(
      input: MachineRef & { plan: LaunchPlan; instanceId: string; zone: string },
    ): Promise<void> {
      await repo.updateMachine(input.model, input.machineId, {
        status: 'running',
        message: '',
        instanceId: input.instanceId,
        imageId: input.plan.imageId,
        zone: input.zone,
        instanceType: input.plan.instanceType,
        hardware: input.plan.hardware,
      });
    },

    async recordStatus(update: StatusUpdate): Promise<void> {
      await repo.updateMachine(
        update.model,
        update.machineId,
        { status: update.status, message: update.message },
        update.status === 'error' ? ['instanceId'] : [],
      );
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
