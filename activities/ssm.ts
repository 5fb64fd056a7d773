import {
  DescribeInstanceInformationCommand,
  GetCommandInvocationCommand,
  SendCommandCommand,
  SSMClient,
  type SSMClientConfig,
} from '@aws-sdk/client-ssm';
import {
  containerImage,
  containerName,
  createContainerScript,
  deleteContainerScript,
  isFinalCommandStatus,
  RUN_SHELL_SCRIPT,
} from '../core/containers';
import { EntityNotFoundError } from '../state/errors';
import type { ContainerStore } from '../state/containers';
import type { MachineStatus } from '../state/types';
import { FAILURE } from '../temporal/failures';
import type { ActivityDeps } from './deps';
import { failure, orMachineGone } from './failures';
import type { MachineRef } from './types';
import { machineInError } from './metrics';

/** The container activities need these two beyond the usual deps. */
export interface ContainerDeps {
  containers: ContainerStore;
  /** The SSM client of a region (built once per region). */
  ssmForRegion: (region: string) => SSMClient;
}

/** How long Run Command may run a container command before SSM itself gives up (seconds). */
export const COMMAND_TIMEOUT_SECONDS = 600;

/** One SSM client per region, built on first use. */
export function regionalSsm(
  clientFor: (region: string) => SSMClient,
): (region: string) => SSMClient {
  const byRegion = new Map<string, SSMClient>();
  return (region) => {
    let c = byRegion.get(region);
    if (!c) {
      c = clientFor(region);
      byRegion.set(region, c);
    }
    return c;
  };
}

/** The worker's SSM client: the SDK's standard retries for throttling and transport faults. */
export function workerSsmClient(config: SSMClientConfig): SSMClient {
  return new SSMClient({ ...config, maxAttempts: 4 });
}

/** What the container's workflow needs to know of its host, read fresh. */
export interface ContainerHost {
  hostId: string;
  /** The container's own base (its image follows it). */
  base: string;
  /** Gone, or Dead/dying: the container can no longer be created on it. */
  gone: boolean;
  /** Manually provisioned: no instance the provisioner can run commands on. */
  manual?: boolean;
  status?: MachineStatus;
  instanceId?: string;
  zone?: string;
}

/** The end of a Run Command invocation, or that it is still running. */
export interface CommandOutcome {
  status: string;
  final: boolean;
  exitCode: number;
  stdout: string;
  stderr: string;
}

function errorName(err: unknown): string | undefined {
  return err instanceof Error ? err.name : undefined;
}

/** Run Command on container hosts (issue 15): the only code that talks to SSM. */
export function ssmActivities(
  deps: Pick<ActivityDeps, 'repo' | 'tuning'> & Partial<ContainerDeps>,
) {
  function need(): ContainerDeps {
    if (!deps.containers || !deps.ssmForRegion) {
      throw failure(
        FAILURE.containerFailed,
        'this worker has no SSM client: containers cannot be created',
      );
    }
    return { containers: deps.containers, ssmForRegion: deps.ssmForRegion };
  }

  /** Where the command is: still running, or its end with exit code and output. */
  async function commandOutcome(input: {
    region: string;
    commandId: string;
    instanceId: string;
  }): Promise<CommandOutcome> {
    const ssm = need().ssmForRegion(input.region);
    try {
      const out = await ssm.send(
        new GetCommandInvocationCommand({
          CommandId: input.commandId,
          InstanceId: input.instanceId,
        }),
      );
      const status = out.Status ?? 'Pending';
      return {
        status,
        final: isFinalCommandStatus(status),
        exitCode: out.ResponseCode ?? -1,
        stdout: out.StandardOutputContent ?? '',
        stderr: out.StandardErrorContent ?? '',
      };
    } catch (err) {
      // SSM knows a fresh command's invocation only after a moment
      if (errorName(err) === 'InvocationDoesNotExist') {
        return { status: 'Pending', final: false, exitCode: -1, stdout: '', stderr: '' };
      }
      throw err;
    }
  }

  return {
    /** The container's host as it is now. */
    async containerHost(ref: MachineRef & { hostId: string }): Promise<ContainerHost> {
      const container = await orMachineGone(deps.repo.getMachine(ref.model, ref.machineId));
      const host = await deps.repo.getMachine(ref.model, ref.hostId).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      if (!host) return { hostId: ref.hostId, base: container.base, gone: true };
      return {
        hostId: ref.hostId,
        base: container.base,
        gone: host.life !== 'alive',
        ...(host.manual ? { manual: true } : {}),
        status: host.status,
        ...(host.instanceId ? { instanceId: host.instanceId } : {}),
        ...(host.zone ? { zone: host.zone } : {}),
      };
    },

    /** Whether SSM reports the instance's agent online (registered and pinging). */
    async instanceOnline(input: { region: string; instanceId: string }): Promise<boolean> {
      const ssm = need().ssmForRegion(input.region);
      const out = await ssm.send(
        new DescribeInstanceInformationCommand({
          Filters: [{ Key: 'InstanceIds', Values: [input.instanceId] }],
        }),
      );
      return (out.InstanceInformationList ?? []).some(
        (i) => i.InstanceId === input.instanceId && i.PingStatus === 'Online',
      );
    },

    /**
     * Sends the container's create or delete command to its host, once: the
     * command id is recorded on the container, and a retried activity (or a
     * workflow that starts over) finds it and sends nothing, unless that
     * command ended in failure (a retry of a failed create sends it again).
     * Should the worker die between sending and recording, the script is
     * idempotent (create launches only a missing container, delete removes
     * only an existing one), so running it twice is harmless. A delete for a
     * container never created on this host sends nothing (`commandId` empty).
     */
    async sendContainerCommand(
      input: MachineRef & {
        region: string;
        instanceId: string;
        action: 'create' | 'delete';
        base: string;
        modelUid?: string;
      },
    ): Promise<{ commandId: string; name: string; sent: boolean }> {
      const { containers, ssmForRegion } = need();
      const name = containerName(input);
      const recorded = await orMachineGone(containers.command(input.model, input.machineId));
      if (input.action === 'delete' && recorded?.instanceId !== input.instanceId) {
        return { commandId: '', name, sent: false };
      }
      if (
        recorded &&
        recorded.action === input.action &&
        recorded.instanceId === input.instanceId
      ) {
        const outcome = await commandOutcome({
          region: input.region,
          commandId: recorded.commandId,
          instanceId: recorded.instanceId,
        });
        if (!outcome.final || outcome.status === 'Success') {
          return { commandId: recorded.commandId, name, sent: false };
        }
      }
      let commands: string[];
      try {
        commands =
          input.action === 'create'
            ? createContainerScript(name, containerImage(input.base))
            : deleteContainerScript(name);
      } catch (err) {
        throw failure(FAILURE.containerFailed, (err as Error).message);
      }
      const out = await ssmForRegion(input.region).send(
        new SendCommandCommand({
          DocumentName: RUN_SHELL_SCRIPT,
          InstanceIds: [input.instanceId],
          Parameters: { commands },
          TimeoutSeconds: COMMAND_TIMEOUT_SECONDS,
          Comment: `${input.action} container ${name}`.slice(0, 100),
        }),
      );
      const commandId = out.Command?.CommandId;
      if (!commandId) throw new Error('SendCommand answered without a command id');
      await orMachineGone(
        containers.recordCommand(input.model, input.machineId, {
          commandId,
          instanceId: input.instanceId,
          action: input.action,
        }),
      );
      return { commandId, name, sent: true };
    },

    commandOutcome,

    async recordContainerStatus(
      input: MachineRef & { status: MachineStatus; message: string },
    ): Promise<void> {
      await orMachineGone(
        need().containers.recordStatus(input.model, input.machineId, input.status, input.message),
      );
    },

    async recordContainerRunning(input: MachineRef & { zone?: string }): Promise<void> {
      await orMachineGone(
        need().containers.recordRunning(input.model, input.machineId, input.zone),
      );
    },

    async recordContainerError(input: MachineRef & { message: string }): Promise<void> {
      await orMachineGone(
        need().containers.recordError(input.model, input.machineId, input.message),
      );
      machineInError();
    },

    /** Removes the Dead container; a dying host left empty goes Dead and its workflow is told. */
    async removeContainer(ref: MachineRef): Promise<{ hostDead?: string }> {
      return need().containers.removeContainer(ref.model, ref.machineId);
    },

    /** Worker settings of container provisioning, recorded in history. */
    containerTuning(): Promise<{
      pollMs: number;
      onlineTimeoutMs: number;
      commandTimeoutMs: number;
    }> {
      return Promise.resolve({
        pollMs: deps.tuning.containerPollMs ?? 5_000,
        onlineTimeoutMs: deps.tuning.containerOnlineTimeoutMs ?? 600_000,
        commandTimeoutMs: (COMMAND_TIMEOUT_SECONDS + 60) * 1000,
      });
    },
  };
}
