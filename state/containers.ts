import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { parentMachineId } from '../core/placement';
import { EntityNotFoundError, retryOnConcurrentChange } from './errors';
import { machineSk, modelPk } from './keys';
import { machineKey } from './items';
import { Repository } from './repository';
import type { HostContainers, MachineStatus } from './types';
import { documentClient } from './table';

/** The Run Command a container's workflow sent last (kept on the container's item). */
export interface ContainerCommand {
  commandId: string;
  /** The host instance it was sent to. */
  instanceId: string;
  action: 'create' | 'delete';
}

/** Message of a container whose host went `down` (and how it is recognised to come back). */
export const HOST_DOWN_PREFIX = 'host machine ';
export const hostDownMessage = (hostId: string): string => `${HOST_DOWN_PREFIX}${hostId} is down`;

/**
 * The DynamoDB writes of container machines (issue 15) beyond the
 * Repository: the Run Command a container's workflow sent (so a retried
 * activity never sends it again), the container running on its host's zone,
 * its removal (with the host's list of containers, in one transaction), and a
 * host's liveness passed on to its containers.
 */
export class ContainerStore {
  private readonly doc: DynamoDBDocumentClient;
  private readonly repo: Repository;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
  ) {
    this.doc = documentClient(client);
    this.repo = new Repository(client, tableName);
  }

  private key(model: string, machineId: string) {
    return { pk: modelPk(model), sk: machineSk(machineId) };
  }

  /** The command recorded for the container, if any. */
  async command(model: string, machineId: string): Promise<ContainerCommand | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: this.key(model, machineId),
        ProjectionExpression: 'containerCommand',
        ConsistentRead: true,
      }),
    );
    if (!out.Item) throw new EntityNotFoundError(`machine ${machineId} not found`);
    return out.Item.containerCommand as ContainerCommand | undefined;
  }

  async recordCommand(model: string, machineId: string, command: ContainerCommand): Promise<void> {
    await this.update(model, machineId, 'SET containerCommand = :c, updatedAt = :now', {
      ':c': command,
    });
  }

  /** Status and message, as the workflow goes (`pending` while waiting, `allocating` while creating). */
  async recordStatus(
    model: string,
    machineId: string,
    status: MachineStatus,
    message: string,
  ): Promise<void> {
    await this.update(model, machineId, 'SET #status = :s, #message = :m, updatedAt = :now', {
      ':s': status,
      ':m': message,
    });
  }

  /** The container runs on its host: `running`, in its host's zone. */
  async recordRunning(model: string, machineId: string, zone: string | undefined): Promise<void> {
    await this.update(
      model,
      machineId,
      'SET #status = :s, #message = :m, updatedAt = :now' + (zone ? ', #zone = :zone' : ''),
      {
        ':s': 'running',
        ':m': '',
        ...(zone ? { ':zone': zone } : {}),
      },
    );
  }

  /** Creating it failed for good: `error` with the cause, no zone. */
  async recordError(model: string, machineId: string, message: string): Promise<void> {
    await this.update(
      model,
      machineId,
      'SET #status = :s, #message = :m, updatedAt = :now, ' +
        '#errorCount = if_not_exists(#errorCount, :zero) + :one REMOVE #zone',
      { ':s': 'error', ':m': message, ':zero': 0, ':one': 1 },
    );
  }

  private async update(
    model: string,
    machineId: string,
    expression: string,
    values: Record<string, unknown>,
  ): Promise<void> {
    const names: Record<string, string> = {};
    for (const n of ['status', 'message', 'zone', 'errorCount']) {
      if (expression.includes(`#${n}`)) names[`#${n}`] = n;
    }
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(model, machineId),
          UpdateExpression: expression,
          ConditionExpression: 'attribute_exists(pk)',
          ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
          ExpressionAttributeValues: { ...values, ':now': new Date().toISOString() },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new EntityNotFoundError(`machine ${machineId} not found`);
      }
      throw err;
    }
  }

  /**
   * Removes a Dead container and takes it off its host's list, in one
   * transaction. A host that is dying (destroyed with --force, or its model
   * destroyed) and is left with no units and no containers goes Dead here:
   * a host is never Dead while it has containers (Juju's rule). Returns the
   * host when it went Dead, so its workflow is told. Idempotent: an absent
   * container is already removed.
   */
  async removeContainer(model: string, machineId: string): Promise<{ hostDead?: string }> {
    const hostId = parentMachineId(machineId);
    return retryOnConcurrentChange(async () => {
      const container = await this.repo.getMachine(model, machineId).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      });
      if (!container) return {};
      const tx = this.repo.transaction();
      tx.delete(machineKey(model, machineId), 'life = :dead', { ':dead': 'dead' });
      const host =
        hostId === undefined
          ? undefined
          : await this.repo.getMachine(model, hostId).catch((err: unknown) => {
              if (err instanceof EntityNotFoundError) return undefined;
              throw err;
            });
      let hostDead: string | undefined;
      if (host) {
        const containers = host.containers.filter((c) => c !== machineId);
        const dies =
          host.life === 'dying' && containers.length === 0 && host.principals.length === 0;
        if (dies && host.manual) {
          // a manual host has nothing to tear down: it goes at once, as destroying one does
          tx.delete(machineKey(model, host.id), 'version = :v', { ':v': host.version ?? 0 });
          await this.repo.commit(tx);
          return {};
        }
        if (dies) hostDead = host.id;
        tx.update(
          machineKey(model, host.id),
          'SET containers = :c, life = :life, version = :next',
          {
            condition: 'version = :v',
            values: {
              ':c': containers,
              ':life': dies ? 'dead' : host.life,
              ':v': host.version ?? 0,
              ':next': (host.version ?? 0) + 1,
            },
          },
        );
      }
      await this.repo.commit(tx);
      return hostDead ? { hostDead } : {};
    });
  }

  /**
   * A host's instance was lost (`down`) or came back: its containers follow.
   * Only containers that are running (or down because of the host) change.
   * Returns the containers changed.
   */
  async followHost(
    model: string,
    hostId: string,
    hostDown: boolean,
    /** The host as the caller has just read or written it (saves reading it again). */
    known?: HostContainers,
  ): Promise<string[]> {
    const host =
      known ??
      (await this.repo.getMachine(model, hostId).catch((err: unknown) => {
        if (err instanceof EntityNotFoundError) return undefined;
        throw err;
      }));
    if (!host) return [];
    const changed: string[] = [];
    const message = hostDownMessage(hostId);
    for (const id of host.containers) {
      const status = hostDown ? 'down' : 'running';
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.key(model, id),
            UpdateExpression: 'SET #status = :s, #message = :m, updatedAt = :now',
            ConditionExpression: hostDown
              ? '#life = :alive AND #status = :running'
              : // back to running only on the instance the container was made on
                '#life = :alive AND #status = :down AND #message = :downMessage AND ' +
                '#cmd.#instance = :host',
            ExpressionAttributeNames: {
              '#status': 'status',
              '#message': 'message',
              '#life': 'life',
              ...(hostDown ? {} : { '#cmd': 'containerCommand', '#instance': 'instanceId' }),
            },
            ExpressionAttributeValues: {
              ':s': status,
              ':m': hostDown ? message : '',
              ':alive': 'alive',
              ...(hostDown
                ? { ':running': 'running' }
                : { ':down': 'down', ':downMessage': message, ':host': host.instanceId ?? '' }),
              ':now': new Date().toISOString(),
            },
          }),
        );
        changed.push(id);
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        if (
          !hostDown &&
          host.instanceId &&
          (await this.movedHost(model, id, hostId, host.instanceId))
        ) {
          changed.push(id);
        }
      }
    }
    return changed;
  }

  /**
   * A container down with its host, whose host came back on another instance
   * (reprovisioned): the container was never made there, so it goes to
   * `error` (retry-provisioning creates it on the new instance) instead of
   * showing `running`.
   */
  private async movedHost(
    model: string,
    id: string,
    hostId: string,
    hostInstance: string,
  ): Promise<boolean> {
    const status = 'error';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(model, id),
          UpdateExpression:
            'SET #status = :s, #message = :m, updatedAt = :now, ' +
            '#errorCount = if_not_exists(#errorCount, :zero) + :one',
          ConditionExpression:
            '#life = :alive AND #status = :down AND #message = :downMessage AND ' +
            '(attribute_not_exists(#cmd) OR #cmd.#instance <> :host)',
          ExpressionAttributeNames: {
            '#errorCount': 'errorCount',
            '#status': 'status',
            '#message': 'message',
            '#life': 'life',
            '#cmd': 'containerCommand',
            '#instance': 'instanceId',
          },
          ExpressionAttributeValues: {
            ':zero': 0,
            ':one': 1,
            ':s': status,
            ':m':
              `machine ${hostId} has a new instance (${hostInstance}) and the container was on ` +
              `the old one: retry-provisioning creates it there`,
            ':alive': 'alive',
            ':down': 'down',
            ':downMessage': hostDownMessage(hostId),
            ':host': hostInstance,
            ':now': new Date().toISOString(),
          },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}
