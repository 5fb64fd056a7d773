import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  instanceStateMessage,
  isInstanceState,
  isLost,
  isRoutine,
  type InstanceState,
} from '../core/liveness';
import { ConcurrentChangeError, EntityConflictError, EntityNotFoundError } from './errors';
import {
  commitTransaction,
  documentClient,
  queryAll,
  Transaction,
  TRANSACTION_LIMIT,
} from './table';
import { MACHINE_SK_PREFIX, MODEL_SK, machineSk, modelPk } from './keys';
import {
  CONDITION_FAILED,
  DEFAULT_STATEMENT_BATCHING,
  quoted,
  sendStatements,
  STATEMENT_BATCH_LIMIT,
  StatementBatcher,
  type StatementBatching,
  type StatementSender,
  type StatementOutcome,
  type WriteStatement,
} from './statement-batch';
import type { Hardware, HostContainers, Life, MachineRecord } from './types';

/**
 * What zone choice needs of each machine of a model. `zoneClaim` is the zone a
 * machine's workflow has claimed for a launch in flight; `zone` is where its
 * instance is. A machine counts in `zone ?? zoneClaim`.
 */
export interface PlacementMachine {
  id: string;
  life: Life;
  applications: string[];
  zone?: string;
  zoneClaim?: string;
}

/** Thrown by a zone chooser to stop the claim (e.g. no zone left); passed through unchanged. */
export type ZoneChooser = (machines: readonly PlacementMachine[]) => string;

export { MachineDeadError, ZoneClaimContendedError } from './zone-counts';
import { LaunchBatchStore } from './launch-batches';
import { throttledPause, type BackoffOptions } from './backoff';
import { inLanes } from '../core/lanes';
import {
  machineView,
  ZoneCountStore,
  type ClaimRequest,
  type ClaimResult,
  type MachineView,
} from './zone-counts';

export interface RunningRecord {
  instanceId: string;
  imageId: string;
  zone: string;
  instanceType: string;
  hardware: Hardware;
  /** On-demand USD per hour the type was chosen at; absent when unknown. */
  pricePerHour?: number;
  /** Availability-set mode: the partition placement group and partition the instance is in. */
  placementGroup?: string;
  partition?: number;
}

export interface ProvisioningStoreOptions {
  /** Claim tries before giving up with ZoneClaimContendedError. */
  maxClaimTries?: number;
  /** Waits between contended tries (tests pass a no-op). */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /**
   * Single-item writes of the launch path (`recordRunning`, the launch
   * batches' `mark`, the catch-up's `recordRoutineRunningAll`) made close together go out as one
   * BatchExecuteStatement (state/statement-batch.ts): on, with its window,
   * unless `false` (PROVISIONER_DDB_WRITE_BATCHING=off).
   */
  batching?: StatementBatching;
}

/**
 * The DynamoDB writes the machine workflow makes beyond the Repository:
 * atomic zone claims, recording a launch or a failure, removing a machine and
 * then its model when the model is dying and empty.
 *
 * Zone claims use optimistic concurrency on one item per model
 * (`#ZONE-CLAIMS`, a version number): read the version, read the model's
 * machines, choose, then write the claim on the machine and bump the version
 * in one transaction conditional on the version being unchanged. A claim that
 * lost a race reads again, so machines of one group started at the same
 * moment see each other's claims and spread evenly. Per model rather than per
 * distribution group because groups overlap (a machine hosting two
 * applications belongs to both) and a model's machines are one Query anyway.
 */
export class ProvisioningStore {
  private readonly doc: DynamoDBDocumentClient;
  /** The distribution groups' zone counts. */
  readonly zones: ZoneCountStore;
  /** Launch batches and each machine's marker of the batch it joined. */
  readonly batches: LaunchBatchStore;
  /** Records of launched instances made close together, sent together; none when off. */
  private readonly runningRecords: StatementBatcher | undefined;
  /** Routine `running` writes of a catch-up window, sent together; none when off. */
  private readonly routineRunning: StatementBatcher | undefined;
  /** A sweep's address writes, sent together; none when off. */
  private readonly addressWrites: StatementBatcher | undefined;
  /** How the routine writes refused for throughput wait before they are written alone. */
  private readonly backoff: BackoffOptions;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    options: ProvisioningStoreOptions = {},
  ) {
    this.doc = documentClient(client);
    const batching = options.batching ?? DEFAULT_STATEMENT_BATCHING;
    this.batches = new LaunchBatchStore(client, tableName, { batching });
    // each kind of write its own batcher (its name in the meter's calls), none when batching is off
    const batcher = (name: string, send: StatementSender): StatementBatcher | undefined =>
      batching ? new StatementBatcher(send, batching.windowMs, { name }) : undefined;
    this.runningRecords = batcher('provisioning:recordRunning', (statements) =>
      this.recordRunningTogether(statements),
    );
    this.routineRunning = batcher('provisioning:recordRoutineRunning', (statements) =>
      this.recordRoutineRunningTogether(statements),
    );
    this.addressWrites = batcher('provisioning:recordAddresses', (statements) =>
      this.recordAddressesTogether(statements),
    );
    this.backoff = {
      ...(options.sleep ? { sleep: options.sleep } : {}),
      ...(options.random ? { random: options.random } : {}),
    };
    this.zones = new ZoneCountStore(client, tableName, {
      ...(options.maxClaimTries !== undefined ? { maxTries: options.maxClaimTries } : {}),
      ...(options.sleep ? { sleep: options.sleep } : {}),
      ...(options.random ? { random: options.random } : {}),
    });
  }

  /**
   * The machine's item (strongly consistent; `toMachine` makes the record of
   * it), with what a zone claim relies on of it (`ClaimRequest.view`): one
   * read serves the workflow's snapshot, its plan and its claim. Undefined
   * when there is no such machine.
   */
  async machineWithView(
    model: string,
    machineId: string,
  ): Promise<{ item: Record<string, unknown>; view: MachineView } | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: machineSk(machineId) },
        ConsistentRead: true,
      }),
    );
    if (!out.Item) return undefined;
    return { item: out.Item, view: machineView(out.Item) };
  }

  /** The zone the machine's workflow holds a claim on, if any. */
  async zoneClaim(model: string, machineId: string): Promise<string | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: machineSk(machineId) },
        ProjectionExpression: '#zoneClaim',
        ExpressionAttributeNames: { '#zoneClaim': 'zoneClaim' },
        ConsistentRead: true,
      }),
    );
    const claim: unknown = out.Item?.zoneClaim;
    return typeof claim === 'string' ? claim : undefined;
  }

  /** The zone and partition the machine is counted in (availability-set mode), if any. */
  async countedPlacement(
    model: string,
    machineId: string,
  ): Promise<{ zone?: string; partition?: number }> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: machineSk(machineId) },
        ProjectionExpression: '#zone, #partition',
        ExpressionAttributeNames: { '#zone': 'countedZone', '#partition': 'countedPartition' },
        ConsistentRead: true,
      }),
    );
    const zone: unknown = out.Item?.countedZone;
    const partition: unknown = out.Item?.countedPartition;
    return {
      ...(typeof zone === 'string' ? { zone } : {}),
      ...(typeof partition === 'number' ? { partition } : {}),
    };
  }

  /** Claims a zone for each request (see ZoneCountStore.claim). */
  claimZones(model: string, requests: readonly ClaimRequest[]): Promise<ClaimResult[]> {
    return this.zones.claim(model, requests);
  }

  /** Gives up the machine's zone claim and takes it out of the zone counts. */
  async releaseZoneClaim(model: string, machineId: string): Promise<void> {
    await this.zones.release(model, machineId);
  }

  /**
   * Records a launched instance: status `running`, its id, image, zone, type
   * and hardware; the claim becomes the zone. Returns the machine's life, so
   * a machine that went Dead meanwhile is torn down.
   *
   * Records made within a few milliseconds of each other (a batch's members
   * answered by one RunInstances) go out together as one
   * BatchExecuteStatement of the same write, conditional on the machine
   * being alive as well as there: the common case answers `alive` with no
   * read. A machine that is not alive (its refusal answers the item as it
   * was) is recorded alone as before, which answers its life; one that is
   * gone is EntityNotFoundError.
   */
  async recordRunning(model: string, machineId: string, run: RunningRecord): Promise<Life> {
    if (!this.runningRecords) return this.recordRunningAlone(model, machineId, run);
    const pk = modelPk(model);
    const sk = machineSk(machineId);
    const { set, remove } = runningWrites(run, new Date().toISOString());
    const outcome = await this.runningRecords.submit({
      item: `${pk}\n${sk}`,
      statement:
        `UPDATE ${quoted(this.tableName)} ` +
        Object.keys(set)
          .map((name) => `SET ${quoted(name)} = ? `)
          .join('') +
        remove.map((name) => `REMOVE ${quoted(name)} `).join('') +
        `WHERE ${quoted('pk')} = ? AND ${quoted('sk')} = ? AND ${quoted('life')} = ?`,
      parameters: [...Object.values(set), pk, sk, 'alive'],
    });
    if (outcome.ok) return 'alive';
    if (outcome.code === CONDITION_FAILED && !outcome.item) {
      throw new EntityNotFoundError(`machine ${machineId} not found`);
    }
    // not alive (dying, dead), or refused for another reason (the batcher logged it, the
    // capacity meter counts it): alone, as before
    return this.recordRunningAlone(model, machineId, run);
  }

  /** One call of records of launched instances (the call site the capacity meter names). */
  private async recordRunningTogether(statements: readonly WriteStatement[]) {
    return await sendStatements(this.doc, statements);
  }

  /** `recordRunning` as one UpdateItem answering the item as written (its life). */
  private async recordRunningAlone(
    model: string,
    machineId: string,
    run: RunningRecord,
  ): Promise<Life> {
    const { set, remove } = runningWrites(run, new Date().toISOString());
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const assignments = Object.entries(set).map(([name, value]) => {
      names[`#${name}`] = name;
      values[`:${name}`] = value;
      return `#${name} = :${name}`;
    });
    const removals = remove.map((name) => {
      names[`#${name}`] = name;
      return `#${name}`;
    });
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(machineId) },
          UpdateExpression: `SET ${assignments.join(', ')} REMOVE ${removals.join(', ')}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return (out.Attributes?.life as Life | undefined) ?? 'alive';
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new EntityNotFoundError(`machine ${machineId} not found`);
      }
      throw err;
    }
  }

  /**
   * Records a final provisioning failure: status `error` with the cause, no
   * instance id, no zone, no claim (so the zone no longer counts it), and
   * one more on its error count (a retry that fails again with the same
   * message is still told apart from the failure before it).
   */
  async recordError(model: string, machineId: string, message: string): Promise<void> {
    await this.zones.release(model, machineId);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(machineId) },
          UpdateExpression:
            'SET #status = :status, #message = :message, #updatedAt = :now, ' +
            '#errorCount = if_not_exists(#errorCount, :zero) + :one ' +
            'REMOVE #instanceId, #zone, #zoneClaim',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: {
            '#status': 'status',
            '#message': 'message',
            '#updatedAt': 'updatedAt',
            '#instanceId': 'instanceId',
            '#zone': 'zone',
            '#zoneClaim': 'zoneClaim',
            '#errorCount': 'errorCount',
          },
          ExpressionAttributeValues: {
            ':status': 'error',
            ':message': message,
            ':zero': 0,
            ':one': 1,
            ':now': new Date().toISOString(),
          },
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
   * Removes a Dead machine (only a Dead one), then its model if the model is
   * dying and this was its last machine. Idempotent: an absent machine is
   * already removed. Returns whether the model was removed.
   */
  async removeMachine(model: string, machineId: string): Promise<{ modelRemoved: boolean }> {
    // out of the zone counts first (teardown did it already, unless it was cut short)
    await this.zones.releaseIfDead(model, machineId);
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(machineId) },
          ConditionExpression: 'attribute_not_exists(pk) OR #life = :dead',
          ExpressionAttributeNames: { '#life': 'life' },
          ExpressionAttributeValues: { ':dead': 'dead' },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new EntityConflictError(`machine ${machineId} is not dead`);
      }
      throw err;
    }
    return { modelRemoved: await this.removeModelIfDyingAndEmpty(model) };
  }

  /**
   * Removes a dying model that has no entities left, with the items that only
   * serve it (counters, the zone-claims version), in one transaction
   * conditional on the model still dying. Every machine removal deletes its
   * machine before looking, so the last one to go always finds the model empty.
   */
  async removeModelIfDyingAndEmpty(model: string): Promise<boolean> {
    // One item, then at most one entity: a removal in a live or still-full model reads
    // no more than that, where reading the partition made N removals cost O(N²).
    const head = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: MODEL_SK },
        ProjectionExpression: '#life',
        ExpressionAttributeNames: { '#life': 'life' },
        ConsistentRead: true,
      }),
    );
    if (head.Item?.life !== 'dying') return false;
    const entity = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        // entity keys start with a letter; `#`-keys (the model, counters) sort before `$`
        KeyConditionExpression: 'pk = :pk AND sk >= :entities',
        ExpressionAttributeValues: { ':pk': modelPk(model), ':entities': '$' },
        ProjectionExpression: 'sk',
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    if ((entity.Items?.length ?? 0) > 0) return false;
    const items = await queryAll(this.doc, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': modelPk(model) },
      ProjectionExpression: 'pk, sk, #life',
      ExpressionAttributeNames: { '#life': 'life' },
      ConsistentRead: true,
    });
    const modelItem = items.find((i) => i.sk === MODEL_SK);
    if (!modelItem || modelItem.life !== 'dying') return false;
    // Entities (machines, applications, units, relations) have keys without a leading `#`;
    // `#`-keys beside the model item (counters, the zone-claims version) only serve the model.
    if (items.some((i) => !String(i.sk).startsWith('#'))) return false;
    const others = items.filter((i) => i.sk !== MODEL_SK);
    if (others.length > TRANSACTION_LIMIT - 1) {
      // more side items than one transaction holds: drop the surplus first (they only serve the model)
      for (const i of others.splice(TRANSACTION_LIMIT - 1)) {
        await this.doc.send(
          new DeleteCommand({ TableName: this.tableName, Key: { pk: i.pk, sk: i.sk } }),
        );
      }
    }
    const tx = new Transaction(this.tableName).delete(
      { pk: modelPk(model), sk: MODEL_SK },
      'life = :dying',
      { ':dying': 'dying' },
    );
    for (const i of others) tx.delete({ pk: String(i.pk), sk: String(i.sk) });
    try {
      await commitTransaction(this.doc, tx);
      return true;
    } catch (err) {
      // another removal got there first, or the model is not dying any more
      if (err instanceof ConcurrentChangeError) return false;
      throw err;
    }
  }

  /** The model's machines, for the sweep (strongly consistent). */
  async machines(
    model: string,
  ): Promise<
    Array<
      Pick<
        MachineRecord,
        | 'id'
        | 'life'
        | 'status'
        | 'instanceId'
        | 'manual'
        | 'instanceStatus'
        | 'instanceRecordedAt'
        | 'privateAddress'
        | 'publicAddress'
      > &
        Partial<Pick<MachineRecord, 'updatedAt'>>
    >
  > {
    const items = await queryAll(this.doc, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': MACHINE_SK_PREFIX },
      ProjectionExpression:
        '#id, #life, #status, #instanceId, #manual, #instanceStatus, #recordedAt, #updatedAt, ' +
        '#private, #public',
      ExpressionAttributeNames: {
        '#private': 'privateAddress',
        '#public': 'publicAddress',
        '#recordedAt': 'instanceRecordedAt',
        '#updatedAt': 'updatedAt',
        '#instanceStatus': 'instanceStatus',
        '#id': 'id',
        '#life': 'life',
        '#status': 'status',
        '#instanceId': 'instanceId',
        '#manual': 'manual',
      },
      ConsistentRead: true,
    });
    return items.map((i) => ({
      id: String(i.id),
      life: i.life as Life,
      status: i.status as MachineRecord['status'],
      ...(typeof i.instanceId === 'string' ? { instanceId: i.instanceId } : {}),
      ...(i.manual === true ? { manual: true } : {}),
      ...(isInstanceState(i.instanceStatus) ? { instanceStatus: i.instanceStatus } : {}),
      ...(typeof i.instanceRecordedAt === 'string'
        ? { instanceRecordedAt: i.instanceRecordedAt }
        : {}),
      ...(typeof i.updatedAt === 'string' ? { updatedAt: i.updatedAt } : {}),
      ...(typeof i.privateAddress === 'string' ? { privateAddress: i.privateAddress } : {}),
      ...(typeof i.publicAddress === 'string' ? { publicAddress: i.publicAddress } : {}),
    }));
  }

  /**
   * Records the IP addresses EC2 lists for the machine's instance, only while
   * the machine still records that instance (a reprovisioned machine never
   * gets its old instance's addresses). An address EC2 no longer lists (a
   * stopped instance's public IP) is removed. False when the write did not
   * apply.
   */
  async recordAddresses(
    model: string,
    machineId: string,
    instanceId: string,
    addresses: { privateAddress?: string; publicAddress?: string },
  ): Promise<boolean> {
    const set: string[] = [];
    const remove: string[] = [];
    const values: Record<string, unknown> = { ':instanceId': instanceId };
    addressUpdate(addresses, set, remove, values);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(machineId) },
          UpdateExpression: [
            set.length ? `SET ${set.join(', ')}` : '',
            remove.length ? `REMOVE ${remove.join(', ')}` : '',
          ]
            .filter(Boolean)
            .join(' '),
          ConditionExpression: '#instanceId = :instanceId',
          // each address is either set or removed: both names are always used
          ExpressionAttributeNames: {
            '#instanceId': 'instanceId',
            '#private': 'privateAddress',
            '#public': 'publicAddress',
          },
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /**
   * Routine liveness news (core/liveness.ts `isRoutine`: `pending`,
   * `running`), written by whoever hears it (the sweep, the state-change
   * handler, the launch's ask of the instances it just recorded) without the
   * machine's workflow: one UpdateItem (`routineInstanceWrite`), applied only
   * while the machine is alive, `running`, still records that instance and
   * records it starting, running or in no state yet. A machine `down`,
   * stopped, dying or Dead is left as it is (false): its workflow is to be
   * told instead, as it decides what the news means. The addresses EC2
   * lists, when the caller has them, go in the same write (an address
   * absent from `addresses` is removed; no `addresses`, none touched).
   *
   * `running` is written over nothing, `pending` or `running`; `pending`
   * only over nothing or `pending`: for one instance, running → pending is
   * never news (a restart goes through stopping and stopped, which this
   * write refuses), so a late `pending` (a retried event, a sweep that asked
   * EC2 before the `running` landed) would only put the machine back.
   * Returns true when written, `'stale'` for a `pending` to drop, false when
   * the workflow is to be told. With `readBack` (the default), a refused
   * `pending` is read back from the write's failure (ALL_OLD) and is stale
   * only when the machine records that instance alive and running; without
   * it (the instance-events role may name only the write's own attributes,
   * ROUTINE_WRITE_ATTRIBUTES, and gets nothing back) every refused `pending`
   * is dropped: the one that starts a stopped instance again is then not
   * told, the `running` after it is.
   */
  async recordRoutineInstanceState(
    model: string,
    machineId: string,
    instanceId: string,
    state: InstanceState,
    addresses?: { privateAddress?: string; publicAddress?: string },
    options: { readBack?: boolean } = {},
  ): Promise<boolean | 'stale'> {
    const readBack = options.readBack ?? true;
    try {
      await this.doc.send(
        new UpdateCommand(
          routineInstanceWrite(this.tableName, { model, machineId, instanceId, state }, addresses, {
            readBack,
          }),
        ),
      );
      return true;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      if (state !== 'pending') return false;
      if (!readBack) return 'stale';
      const old = err.Item;
      if (
        old?.instanceId?.S === instanceId &&
        old.life?.S === 'alive' &&
        old.status?.S === 'running' &&
        old.instanceStatus?.S === 'running'
      )
        return 'stale';
      return false;
    }
  }

  /**
   * The routine `running` of many instances at once (the launch's catch-up:
   * activities/running-catch-up.ts), each the very write
   * `recordRoutineInstanceState(…, 'running', addresses)` makes, with its
   * condition (routineRunningStatement): sent as BatchExecuteStatement calls
   * of up to 25 (state/statement-batch.ts), each statement with its own
   * outcome. Answers each write's outcome, in order: `written`; `refused`
   * by its condition (the machine is not alive and running with that
   * instance starting or running: destroyed, down, stopped, reprovisioned,
   * gone), as the single write's `false`; or `failed` with the error. A
   * statement refused for another reason (throttled, a conflict) is written
   * alone, as before, the SDK's bounded retries with it; a call that fails
   * as a whole (after the SDK's retries) fails each of its writes. With
   * batching off, each is written alone.
   *
   * Bounded, since every machine of a model is one partition and a window
   * holds up to 1,000 launches: at most ROUTINE_BATCHED_AT_ONCE statements
   * (4 calls of 25) are in flight at once, and the writes made alone go
   * ROUTINE_ALONE_AT_ONCE at a time, after the batched ones have answered.
   * When any statement was refused for throughput (THROTTLE_CODES, which
   * the SDK does not retry inside a call that succeeded), they wait a
   * jittered 250-500 ms first (throttledPause).
   */
  async recordRoutineRunningAll(writes: readonly RoutineRunning[]): Promise<RoutineOutcome[]> {
    const now = new Date();
    return await this.allTogether(
      writes,
      this.routineRunning,
      (w) => routineRunningStatement(this.tableName, w, now),
      (w) =>
        this.recordRoutineInstanceState(w.model, w.machineId, w.instanceId, 'running', w.addresses),
    );
  }

  /**
   * The addresses of many machines' instances at once (a model's sweep:
   * activities/sweep-addresses.ts), each the very write `recordAddresses`
   * makes, with its condition (addressesStatement): sent together as
   * recordRoutineRunningAll's writes are, with the same outcomes (`refused`:
   * the machine no longer records that instance, or is gone) and the same
   * fallback (a statement refused for another reason is written alone).
   * One BatchExecuteStatement per 25 machines instead of an UpdateItem each:
   * a sweep after a 1,000-machine launch wrote 200 (issue 26).
   */
  async recordAddressesAll(
    model: string,
    writes: readonly AddressWrite[],
  ): Promise<RoutineOutcome[]> {
    return await this.allTogether(
      writes,
      this.addressWrites,
      (w) => addressesStatement(this.tableName, model, w),
      (w) => this.recordAddresses(model, w.machineId, w.instanceId, w),
    );
  }

  /**
   * Conditional single-item writes sent through `batcher` (BatchExecuteStatement
   * calls of up to 25), each answered on its own: written, refused by its
   * condition, or failed. At most ROUTINE_BATCHED_AT_ONCE statements are in
   * flight at once (every machine of a model is one partition). A statement
   * refused for another reason (throttled, a conflict) is written `alone`,
   * ROUTINE_ALONE_AT_ONCE at a time, after the batched ones have answered, and
   * after a jittered 250-500 ms when any was refused for throughput
   * (THROTTLE_CODES, which the SDK does not retry inside a call that
   * succeeded; throttledPause). Without a batcher (batching off), each is
   * written alone.
   */
  private async allTogether<W>(
    writes: readonly W[],
    batcher: StatementBatcher | undefined,
    statementOf: (w: W) => WriteStatement,
    alone: (w: W) => Promise<boolean | 'stale'>,
  ): Promise<RoutineOutcome[]> {
    const outcomes: RoutineOutcome[] = new Array<RoutineOutcome>(writes.length);
    const indices = [...writes.keys()];
    let again = indices;
    let throttled = false;
    if (batcher) {
      again = [];
      await inLanes(indices, ROUTINE_BATCHED_AT_ONCE, async (i) => {
        let outcome: StatementOutcome;
        try {
          outcome = await batcher.submit(statementOf(writes[i]!));
        } catch (error) {
          outcomes[i] = { outcome: 'failed', error };
          return;
        }
        if (outcome.ok) outcomes[i] = WRITTEN;
        else if (outcome.code === CONDITION_FAILED) outcomes[i] = REFUSED;
        else {
          // refused for another reason (the batcher told it once per call): alone, as before
          throttled ||= THROTTLE_CODES.has(outcome.code);
          again.push(i);
        }
      });
      again.sort((a, b) => a - b);
    }
    if (throttled) await throttledPause(this.backoff);
    await inLanes(again, ROUTINE_ALONE_AT_ONCE, async (i) => {
      outcomes[i] = await alone(writes[i]!)
        .then((applied): RoutineOutcome => (applied === true ? WRITTEN : REFUSED))
        .catch((error: unknown): RoutineOutcome => ({ outcome: 'failed', error }));
    });
    return outcomes;
  }

  /** One call of a sweep's address writes (the call site the capacity meter names). */
  private async recordAddressesTogether(statements: readonly WriteStatement[]) {
    return await sendStatements(this.doc, statements);
  }

  /** One call of routine `running` writes (the call site the capacity meter names). */
  private async recordRoutineRunningTogether(statements: readonly WriteStatement[]) {
    return await sendStatements(this.doc, statements);
  }

  /**
   * Records a Dead machine's news of its instance (deadInstanceWrite): true
   * when written, false when the machine is not Dead, records another
   * instance or is gone (its workflow is told instead).
   */
  async recordDeadInstanceState(
    model: string,
    machineId: string,
    instanceId: string,
    state: InstanceState,
  ): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand(
          deadInstanceWrite(this.tableName, { model, machineId, instanceId, state }),
        ),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /**
   * Records EC2's state of the machine's instance (liveness), only while the
   * machine still records that instance. A lost instance (API.md) puts an
   * alive `running` machine `down` with a message naming it; a state that is
   * live again brings a `down` machine back to `running`. Returns the
   * machine as the write left it, with its containers and instance (for the
   * containers to follow their host, and the workflow to go on, without
   * reading it again), or false when the write did not apply (another
   * instance, or the machine is gone).
   */
  async recordInstanceState(
    model: string,
    machineId: string,
    instanceId: string,
    state: InstanceState,
  ): Promise<false | RecordedInstanceState> {
    const key = { pk: modelPk(model), sk: machineSk(machineId) };
    const now = new Date().toISOString();
    const message = instanceStateMessage(instanceId, state);
    const status = isLost(state) ? 'down' : 'running';
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression:
            'SET #instanceStatus = :state, #status = :status, #message = :message, ' +
            '#statusAt = :now, #updatedAt = :now',
          ReturnValues: 'ALL_NEW',
          ConditionExpression:
            '#instanceId = :instanceId AND #life = :alive AND #status IN (:running, :down)',
          ExpressionAttributeNames: {
            '#instanceStatus': 'instanceStatus',
            '#instanceId': 'instanceId',
            '#status': 'status',
            '#message': 'message',
            '#life': 'life',
            '#statusAt': 'instanceStatusAt',
            '#updatedAt': 'updatedAt',
          },
          ExpressionAttributeValues: {
            ':state': state,
            ':status': status,
            ':message': message,
            ':instanceId': instanceId,
            ':alive': 'alive',
            ':running': 'running',
            ':down': 'down',
            ':now': now,
          },
        }),
      );
      return recordedState(out.Attributes);
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
    // dying or Dead (teardown owns the status): the state alone, still only for that instance
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #instanceStatus = :state, #statusAt = :now, #updatedAt = :now',
          ReturnValues: 'ALL_NEW',
          ConditionExpression: '#instanceId = :instanceId',
          ExpressionAttributeNames: {
            '#instanceStatus': 'instanceStatus',
            '#instanceId': 'instanceId',
            '#statusAt': 'instanceStatusAt',
            '#updatedAt': 'updatedAt',
          },
          ExpressionAttributeValues: { ':state': state, ':instanceId': instanceId, ':now': now },
        }),
      );
      return recordedState(out.Attributes);
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /**
   * Reprovision (Juju's reprovision-machine), done by the machine's workflow
   * when told: forgets the machine's lost instance — only if it is alive and
   * still records `instanceId` — and takes it out of its old zone's claim and
   * counts, so the workflow launches a new one through the normal zone
   * choice. Repeatable: a retry after the forgetting was written and the
   * release was not finds the machine alive with no instance and finishes
   * the release (only its own workflow, which is here and not launching,
   * claims a zone for it). True when the machine is left so, ready to be
   * provisioned again; false when it changed meanwhile (another instance,
   * Dying or Dead, removed), with nothing written.
   */
  async resetForReprovision(
    model: string,
    machineId: string,
    instanceId: string,
  ): Promise<boolean> {
    const key = { pk: modelPk(model), sk: machineSk(machineId) };
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression:
            'SET #status = :pending, #message = :empty, #updatedAt = :now ' +
            'REMOVE #instanceId, #imageId, #zone, #instanceType, #hardware, #instanceStatus, ' +
            '#price, #placementGroup, #partition, #recordedAt, #statusAt, #private, #public',
          ConditionExpression: '#instanceId = :instanceId AND #life = :alive',
          ExpressionAttributeNames: {
            '#status': 'status',
            '#message': 'message',
            '#updatedAt': 'updatedAt',
            '#instanceId': 'instanceId',
            '#imageId': 'imageId',
            '#zone': 'zone',
            '#instanceType': 'instanceType',
            '#hardware': 'hardware',
            '#instanceStatus': 'instanceStatus',
            '#price': 'pricePerHour',
            '#placementGroup': 'placementGroup',
            '#partition': 'partition',
            '#recordedAt': 'instanceRecordedAt',
            '#statusAt': 'instanceStatusAt',
            '#private': 'privateAddress',
            '#public': 'publicAddress',
            '#life': 'life',
          },
          ExpressionAttributeValues: {
            ':pending': 'pending',
            ':empty': '',
            ':now': new Date().toISOString(),
            ':instanceId': instanceId,
            ':alive': 'alive',
          },
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // forgotten already by an earlier try of this step, or changed meanwhile
      const now = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: key,
          ConsistentRead: true,
          ProjectionExpression: '#life, #instanceId',
          ExpressionAttributeNames: { '#life': 'life', '#instanceId': 'instanceId' },
        }),
      );
      if (now.Item?.life !== 'alive' || now.Item.instanceId !== undefined) return false;
    }
    // out of its old zone's counts: the new instance is counted where it lands
    try {
      await this.zones.release(model, machineId);
    } catch (err) {
      if (err instanceof EntityNotFoundError) return false;
      throw err;
    }
    return true;
  }
}

/** What recordInstanceState's write left: the machine's item (`toMachine` reads it), its containers and instance. */
export interface RecordedInstanceState extends HostContainers {
  item: Record<string, unknown>;
}

function recordedState(item: Record<string, unknown> | undefined): RecordedInstanceState {
  if (!item) throw new Error('the instance state write returned no machine');
  return { ...hostContainers(item), item };
}

/** An updated machine item's containers and instance (no containers when the attribute is absent). */
function hostContainers(item: Record<string, unknown> | undefined): HostContainers {
  const containers = item?.containers;
  const instanceId = item?.instanceId;
  return {
    containers: Array.isArray(containers) ? containers.map(String) : [],
    ...(typeof instanceId === 'string' ? { instanceId } : {}),
  };
}

/**
 * An instance's addresses in an UpdateItem: each one given is set, each one
 * missing is removed (names `#private` and `#public`, which the caller maps).
 */
function addressUpdate(
  addresses: { privateAddress?: string; publicAddress?: string },
  set: string[],
  remove: string[],
  values: Record<string, unknown>,
): void {
  for (const [field, name] of [
    ['privateAddress', '#private'],
    ['publicAddress', '#public'],
  ] as const) {
    const value = addresses[field];
    if (value === undefined) remove.push(name);
    else {
      set.push(`${name} = :${field}`);
      values[`:${field}`] = value;
    }
  }
}

/**
 * Every attribute the routine write names without addresses (its key, what
 * it sets, what its condition reads): the instance-events role may name no
 * other (infra/constructs/instance-events.ts, `dynamodb:Attributes`).
 */
export const ROUTINE_WRITE_ATTRIBUTES = [
  'pk',
  'sk',
  'instanceId',
  'life',
  'status',
  'instanceStatus',
  'instanceStatusAt',
  'updatedAt',
] as const;

/**
 * A Dead machine's news of its instance going (`shutting-down`, `terminated`,
 * …) as an UpdateItem's input (ProvisioningStore.recordDeadInstanceState): the
 * state written only while the machine is Dead and records that instance. Its
 * teardown asks EC2 itself, so the news needs no workflow task (issue 30: at
 * a 1,000-machine destroy, one signal per instance was a third of the
 * teardown's workflow tasks). Names only ROUTINE_WRITE_ATTRIBUTES (the
 * instance-events Lambda's role), reads nothing back.
 */
export function deadInstanceWrite(
  tableName: string,
  news: { model: string; machineId: string; instanceId: string; state: InstanceState },
  now = new Date(),
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: { pk: modelPk(news.model), sk: machineSk(news.machineId) },
    UpdateExpression: 'SET #instanceStatus = :state, #statusAt = :now, #updatedAt = :now',
    ConditionExpression: '#instanceId = :instanceId AND #life = :dead',
    ExpressionAttributeNames: {
      '#instanceStatus': 'instanceStatus',
      '#instanceId': 'instanceId',
      '#life': 'life',
      '#statusAt': 'instanceStatusAt',
      '#updatedAt': 'updatedAt',
    },
    ExpressionAttributeValues: {
      ':state': news.state,
      ':instanceId': news.instanceId,
      ':dead': 'dead',
      ':now': now.toISOString(),
    },
  };
}

/**
 * The routine write (ProvisioningStore.recordRoutineInstanceState) as an
 * UpdateItem's input.
 *
 * Its `running` is also written as PartiQL (routineRunningStatement, the
 * catch-up's batched form): a change to this condition, its SET list or its
 * addresses (addressUpdate) must be made there too, in the same commit.
 * test/integration/write-batching.test.ts compares the two forms on
 * DynamoDB Local, one case per clause of the condition; add a case for a
 * new clause.
 */
export function routineInstanceWrite(
  tableName: string,
  news: { model: string; machineId: string; instanceId: string; state: InstanceState },
  addresses?: { privateAddress?: string; publicAddress?: string },
  options: { readBack?: boolean; now?: Date } = {},
): UpdateCommandInput {
  const { state } = news;
  if (!isRoutine(state)) throw new Error(`instance state "${state}" is not routine news`);
  const set = ['#instanceStatus = :state', '#statusAt = :now', '#updatedAt = :now'];
  const remove: string[] = [];
  const names: Record<string, string> = {
    '#instanceStatus': 'instanceStatus',
    '#instanceId': 'instanceId',
    '#status': 'status',
    '#life': 'life',
    '#statusAt': 'instanceStatusAt',
    '#updatedAt': 'updatedAt',
  };
  const values: Record<string, unknown> = {
    ':state': state,
    ':instanceId': news.instanceId,
    ':alive': 'alive',
    ':running': 'running',
    ':starting': 'pending',
    ...(state === 'running' ? { ':runs': 'running' } : {}),
    ':now': (options.now ?? new Date()).toISOString(),
  };
  if (addresses) {
    names['#private'] = 'privateAddress';
    names['#public'] = 'publicAddress';
    addressUpdate(addresses, set, remove, values);
  }
  return {
    TableName: tableName,
    Key: { pk: modelPk(news.model), sk: machineSk(news.machineId) },
    UpdateExpression:
      `SET ${set.join(', ')}` + (remove.length ? ` REMOVE ${remove.join(', ')}` : ''),
    ConditionExpression:
      '#instanceId = :instanceId AND #life = :alive AND #status = :running AND ' +
      (state === 'running'
        ? '(attribute_not_exists(#instanceStatus) OR #instanceStatus IN (:starting, :runs))'
        : '(attribute_not_exists(#instanceStatus) OR #instanceStatus = :starting)'),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    // a refused `pending`: the item tells a stale one from the workflow's to decide
    ...(state === 'pending' && (options.readBack ?? true)
      ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const }
      : {}),
  };
}

/** One routine `running` write of recordRoutineRunningAll: the machine, its instance, what EC2 listed of its addresses. */
export interface RoutineRunning {
  model: string;
  machineId: string;
  instanceId: string;
  /** As recordRoutineInstanceState's: each one given set, each one absent removed; none given, none touched. */
  addresses?: { privateAddress?: string; publicAddress?: string };
}

/** A routine write's outcome: written, refused by its condition (the single write's `false`), or failed. */
export type RoutineOutcome =
  { outcome: 'written' } | { outcome: 'refused' } | { outcome: 'failed'; error: unknown };

const WRITTEN: RoutineOutcome = { outcome: 'written' };
const REFUSED: RoutineOutcome = { outcome: 'refused' };

/** Writes made alone at once by recordRoutineRunningAll and recordAddressesAll (the fallback, or batching off). */
export const ROUTINE_ALONE_AT_ONCE = 8;

/** Statements recordRoutineRunningAll and recordAddressesAll have in flight at once: 4 calls of 25. */
export const ROUTINE_BATCHED_AT_ONCE = 4 * STATEMENT_BATCH_LIMIT;

/**
 * Codes of a statement DynamoDB refused for throughput inside a
 * BatchExecuteStatement that succeeded (the SDK retries none of them).
 */
const THROTTLE_CODES: ReadonlySet<string> = new Set([
  'ThrottlingError',
  'ThrottlingException',
  'ProvisionedThroughputExceeded',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
]);

/** One machine's instance addresses as a sweep writes them (ec2/addresses.ts `AddressChange`). */
export interface AddressWrite {
  machineId: string;
  instanceId: string;
  privateAddress?: string;
  publicAddress?: string;
}

/**
 * recordAddresses' UpdateItem as a PartiQL statement: each address given set,
 * each absent removed, only while the machine records that instance (a
 * machine that is gone fails the condition too, as the UpdateItem's does).
 * The two forms must change together (addressUpdate);
 * test/integration/write-batching.test.ts compares them on DynamoDB Local.
 */
export function addressesStatement(
  tableName: string,
  model: string,
  write: AddressWrite,
): WriteStatement {
  const set: Array<[string, unknown]> = [];
  const remove: string[] = [];
  addressClauses(write, set, remove);
  const pk = modelPk(model);
  const sk = machineSk(write.machineId);
  return {
    item: `${pk}\n${sk}`,
    statement:
      `UPDATE ${quoted(tableName)} ` +
      setAndRemove(set, remove) +
      `WHERE ${quoted('pk')} = ? AND ${quoted('sk')} = ? AND ${quoted('instanceId')} = ?`,
    parameters: [...set.map(([, value]) => value), pk, sk, write.instanceId],
  };
}

/** Each address given is set, each absent one removed (as addressUpdate writes them). */
function addressClauses(
  addresses: { privateAddress?: string; publicAddress?: string },
  set: Array<[string, unknown]>,
  remove: string[],
): void {
  for (const field of ['privateAddress', 'publicAddress'] as const) {
    const value = addresses[field];
    if (value === undefined) remove.push(field);
    else set.push([field, value]);
  }
}

/** A PartiQL UPDATE's SET and REMOVE clauses, a `?` parameter for each set value in order. */
function setAndRemove(set: ReadonlyArray<[string, unknown]>, remove: readonly string[]): string {
  return (
    set.map(([name]) => `SET ${quoted(name)} = ? `).join('') +
    remove.map((name) => `REMOVE ${quoted(name)} `).join('')
  );
}

/**
 * routineInstanceWrite's `running` as a PartiQL statement: the same SET and
 * REMOVE (the state, its time, `updatedAt`; each address given set, each
 * absent removed, none touched without `addresses`) and the same condition
 * (the machine records that instance, is alive and `running`, and its
 * instance is in no state yet, `pending` or `running`). A machine that is
 * gone fails the condition too, as the UpdateItem's does.
 *
 * The two forms must change together: a change to routineInstanceWrite's
 * condition, its SET list or its addresses (addressUpdate) must be made
 * here too, in the same commit, and the other way round.
 * test/integration/write-batching.test.ts compares them on DynamoDB Local,
 * one case per clause of the condition; add a case for a new clause.
 */
export function routineRunningStatement(
  tableName: string,
  write: RoutineRunning,
  now = new Date(),
): WriteStatement {
  const at = now.toISOString();
  const set: Array<[string, unknown]> = [
    ['instanceStatus', 'running'],
    ['instanceStatusAt', at],
    ['updatedAt', at],
  ];
  const remove: string[] = [];
  if (write.addresses) addressClauses(write.addresses, set, remove);
  const pk = modelPk(write.model);
  const sk = machineSk(write.machineId);
  const status = quoted('instanceStatus');
  return {
    item: `${pk}\n${sk}`,
    statement:
      `UPDATE ${quoted(tableName)} ` +
      setAndRemove(set, remove) +
      `WHERE ${quoted('pk')} = ? AND ${quoted('sk')} = ? AND ${quoted('instanceId')} = ? ` +
      `AND ${quoted('life')} = ? AND ${quoted('status')} = ? ` +
      `AND (${status} IS MISSING OR ${status} = ? OR ${status} = ?)`,
    parameters: [
      ...set.map(([, value]) => value),
      pk,
      sk,
      write.instanceId,
      'alive',
      'running',
      'pending',
      'running',
    ],
  };
}

/**
 * What recording a launched instance writes on its machine, one list for
 * both ways of sending it: the attributes set (in this order) and removed.
 */
function runningWrites(
  run: RunningRecord,
  now: string,
): { set: Record<string, unknown>; remove: string[] } {
  const set: Record<string, unknown> = {
    status: 'running',
    message: '',
    instanceId: run.instanceId,
    imageId: run.imageId,
    zone: run.zone,
    instanceType: run.instanceType,
    hardware: run.hardware,
    // EC2 says `pending` right after a launch; liveness moves it on
    instanceStatus: 'pending',
    instanceRecordedAt: now,
    instanceStatusAt: now,
    updatedAt: now,
  };
  // a new instance: the addresses of one before it are not its own
  const remove = ['zoneClaim', 'privateAddress', 'publicAddress'];
  const optional: Array<[string, unknown]> = [
    ['pricePerHour', run.pricePerHour],
    ['placementGroup', run.placementGroup],
    ['partition', run.partition],
  ];
  for (const [name, value] of optional) {
    if (value !== undefined) set[name] = value;
    else remove.push(name);
  }
  return { set, remove };
}
