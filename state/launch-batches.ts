import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { machineSk, modelPk } from './keys';
import {
  CONDITION_FAILED,
  DEFAULT_STATEMENT_BATCHING,
  quoted,
  sendStatements,
  StatementBatcher,
  type StatementBatching,
  type WriteStatement,
} from './statement-batch';
import { documentClient } from './table';

/** A launch batch's item key, in its model's partition. */
export const launchBatchSk = (id: string): string => `#LAUNCH#${id}`;

/**
 * How long an `abandoned` batch's record is kept (DynamoDB TTL): far past
 * any retry of its members' activities. A `sent` batch's record has no TTL:
 * it is the only link from an instance no machine records yet to the
 * machine it was launched for (activities/instance-owners.ts: teardown, the
 * sweeper's strays), so it must last while its members do; it is deleted
 * with its model (`removeModelIfDyingAndEmpty` removes the model's `#`-items).
 */
export const ABANDONED_BATCH_TTL_SECONDS = 7 * 24 * 3600;

/** Everything needed to repeat a batch's RunInstances exactly (same token, same parameters). */
export interface LaunchBatchCall {
  region: string;
  zone: string;
  imageId: string;
  instanceType: string;
  subnetId?: string;
  /** Availability-set mode: Placement.GroupName and Placement.PartitionNumber. */
  placementGroup?: string;
  partition?: number;
  rootDiskGiB: number;
  /** IamInstanceProfile.Name (containers' hosts need it for SSM). */
  instanceProfile?: string;
  /** Tags every instance of the batch carries at launch. */
  tags: Array<{ Key: string; Value: string }>;
  clientToken: string;
}

export interface LaunchBatch {
  id: string;
  state: 'sent' | 'abandoned';
  /** Machine ids in launch order: member i gets the instance with AmiLaunchIndex i. */
  members: string[];
  call?: LaunchBatchCall;
}

/**
 * A mark's outcome: made; refused because the machine is gone or Dead (no
 * `claimedBy`); or refused because another batch holds the machine for the
 * same launch attempt (`claimedBy`: that batch's id).
 */
export type MarkOutcome = { marked: true } | { marked: false; claimedBy?: string };

/** What a machine records of the batch it joined: the batch and the launch attempt it was for. */
export interface LaunchMarker {
  batchId: string;
  tokenSeed: string;
}

/**
 * The launch batches' records (DESIGN.md "Launching at scale"): a batch is as
 * idempotent as one launch. Before its RunInstances goes out, each member
 * machine records the batch it joined (`launchBatch`), then the batch item is
 * written with its members in order and the exact call; only then is the
 * call made, with the batch's ClientToken. A member whose activity is retried
 * finds its marker: if the batch item exists, the call went out (or is about
 * to) and is repeated as is, so EC2 answers the same reservation, mapped by
 * AmiLaunchIndex; if it does not, the retry writes an `abandoned` item first,
 * so a slow original can never send it afterwards.
 *
 * Across tries and workers, one launch attempt (token seed) is a member of
 * one live batch at a time (`mark`): a try that finds the machine held by
 * another batch of its attempt leaves it out of its own batch and takes
 * what that batch launched (LaunchBatcher), and a try that abandoned a batch
 * names it (`replaces`) to take the machine over. So two tries of one
 * attempt, on one worker or two, never both send a RunInstances for it.
 */
export class LaunchBatchStore {
  private readonly doc: DynamoDBDocumentClient;
  /** Marks made close together, sent together (state/statement-batch.ts); none when off. */
  private readonly marks: StatementBatcher | undefined;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    options: { batching?: StatementBatching } = {},
  ) {
    this.doc = documentClient(client);
    const batching = options.batching ?? DEFAULT_STATEMENT_BATCHING;
    this.marks = batching
      ? new StatementBatcher((statements) => this.markTogether(statements), batching.windowMs, {
          name: 'launch-batches:mark',
        })
      : undefined;
  }

  /**
   * Records on a machine the batch it is joining, for one launch attempt (its
   * token seed). A token seed is a member of one live batch at a time: the
   * mark is refused when the machine's marker already names another batch
   * for the same seed (another try of the same attempt, on this worker or
   * another, joined that batch first). A try that found and settled a batch
   * (`replaces`) may take over that very batch only, whatever seed the marker
   * names now: a stale try of an earlier attempt never marks over the next
   * attempt's batch. A refusal names the batch that holds the machine, and
   * this batch must not launch it. The same write as
   * before, with a condition: no extra write per machine.
   *
   * Marks made within a few milliseconds of each other (a batch marks all
   * its members at once) go out together, as one BatchExecuteStatement of
   * the same conditional writes; a refusal answers the item as it was, so
   * no read follows it.
   */
  async mark(
    model: string,
    machineId: string,
    marker: LaunchMarker,
    options: { replaces?: string } = {},
  ): Promise<MarkOutcome> {
    if (!this.marks) return this.markAlone(model, machineId, marker, options);
    const outcome = await this.marks.submit(
      markStatement(this.tableName, model, machineId, marker, options),
    );
    if (outcome.ok) return { marked: true };
    // the item as the refusal found it: no read
    if (outcome.code === CONDITION_FAILED) return refused(outcome.item);
    // refused for another reason (throttled, in a transaction): alone, as before (the batcher
    // logged it, the capacity meter counts it)
    return this.markAlone(model, machineId, marker, options);
  }

  /** One call of marks (the call site the capacity meter names). */
  private async markTogether(statements: readonly WriteStatement[]) {
    return await sendStatements(this.doc, statements);
  }

  /**
   * The same mark as one UpdateItem, its refusal read after it (batching
   * off, or a statement refused for another reason than its condition).
   */
  private async markAlone(
    model: string,
    machineId: string,
    marker: LaunchMarker,
    options: { replaces?: string } = {},
  ): Promise<MarkOutcome> {
    // a takeover is strict: only of the very batch this try settled (or this mark, repeated);
    // if the marker moved on (another try, of this attempt or the next), the machine is not
    // this try's to launch
    const free =
      options.replaces !== undefined
        ? ['#launchBatch.#batchId = :batch', '#launchBatch.#batchId = :replaces']
        : [
            'attribute_not_exists(#launchBatch)',
            '#launchBatch.#tokenSeed <> :seed',
            // this very mark, repeated (a lost answer retried by the SDK)
            '#launchBatch.#batchId = :batch',
          ];
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(machineId) },
          UpdateExpression: 'SET #launchBatch = :marker',
          ConditionExpression: `attribute_exists(pk) AND #life <> :dead AND (${free.join(' OR ')})`,
          ExpressionAttributeNames: {
            '#launchBatch': 'launchBatch',
            '#life': 'life',
            ...(options.replaces === undefined ? { '#tokenSeed': 'tokenSeed' } : {}),
            '#batchId': 'batchId',
          },
          ExpressionAttributeValues: {
            ':marker': marker,
            ':dead': 'dead',
            ...(options.replaces === undefined ? { ':seed': marker.tokenSeed } : {}),
            ':batch': marker.batchId,
            ...(options.replaces !== undefined ? { ':replaces': options.replaces } : {}),
          },
        }),
      );
      return { marked: true };
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // why it was refused (rare: a read only then)
      const out = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(machineId) },
          ProjectionExpression: '#life, #launchBatch',
          ExpressionAttributeNames: { '#life': 'life', '#launchBatch': 'launchBatch' },
          ConsistentRead: true,
        }),
      );
      // read after the refusal, the marker may have moved on again: whatever batch it names
      // now is the one that holds the machine
      return refused(out.Item);
    }
  }

  /** The batch a machine last joined, if any. */
  async marker(model: string, machineId: string): Promise<LaunchMarker | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: machineSk(machineId) },
        ProjectionExpression: '#launchBatch',
        ExpressionAttributeNames: { '#launchBatch': 'launchBatch' },
        ConsistentRead: true,
      }),
    );
    const m = out.Item?.launchBatch as LaunchMarker | undefined;
    return m && typeof m.batchId === 'string' ? m : undefined;
  }

  /** Whether a batch's record was written (sent or abandoned): a read only, it never abandons. */
  async written(model: string, batchId: string): Promise<boolean> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: launchBatchSk(batchId) },
        ProjectionExpression: '#state',
        ExpressionAttributeNames: { '#state': 'state' },
        ConsistentRead: true,
      }),
    );
    return out.Item !== undefined;
  }

  /**
   * Writes the batch as sent (members and call), unless a member's retry
   * abandoned it first: then false, and the call must not be made.
   */
  async commit(
    model: string,
    batch: { id: string; members: string[]; call: LaunchBatchCall },
  ): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: modelPk(model),
            sk: launchBatchSk(batch.id),
            type: 'launch-batch',
            id: batch.id,
            state: 'sent',
            members: batch.members,
            call: batch.call,
            createdAt: new Date().toISOString(),
            // no expiresAt: kept while the model is (see ABANDONED_BATCH_TTL_SECONDS)
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /**
   * The members of a batch that went out, in launch order; undefined when no
   * batch of that id was sent (abandoned or never written). A read only,
   * unlike `settle` it never abandons a batch, except that a sent record
   * written with a TTL (by versions before sent batches were kept) loses it.
   */
  async members(model: string, batchId: string): Promise<string[] | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: launchBatchSk(batchId) },
        ProjectionExpression: '#state, #members, #expiresAt',
        ExpressionAttributeNames: {
          '#state': 'state',
          '#members': 'members',
          '#expiresAt': 'expiresAt',
        },
        // written just before its RunInstances: an instance listed a moment later finds it
        ConsistentRead: true,
      }),
    );
    const item = out.Item;
    if (!item || item.state !== 'sent' || !Array.isArray(item.members)) return undefined;
    if (item.expiresAt !== undefined) await this.keep(model, batchId);
    return item.members as string[];
  }

  /** Takes the TTL off a sent batch's record (best effort: the next read tries again). */
  private async keep(model: string, batchId: string): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: launchBatchSk(batchId) },
          UpdateExpression: 'REMOVE #expiresAt',
          ConditionExpression: '#state = :sent',
          ExpressionAttributeNames: { '#expiresAt': 'expiresAt', '#state': 'state' },
          ExpressionAttributeValues: { ':sent': 'sent' },
        }),
      );
    } catch {
      // the members were read; keeping the record is for later reads
    }
  }

  /**
   * The batch as it stands for a member that lost track of it: the item if it
   * was written; otherwise it is written now as `abandoned`, so it never goes out.
   */
  async settle(model: string, batchId: string): Promise<LaunchBatch> {
    for (;;) {
      const out = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: launchBatchSk(batchId) },
          ConsistentRead: true,
        }),
      );
      if (out.Item) {
        const item = out.Item;
        return {
          id: batchId,
          state: item.state === 'sent' ? 'sent' : 'abandoned',
          members: Array.isArray(item.members) ? (item.members as string[]) : [],
          ...(item.call ? { call: item.call as LaunchBatchCall } : {}),
        };
      }
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              pk: modelPk(model),
              sk: launchBatchSk(batchId),
              type: 'launch-batch',
              id: batchId,
              state: 'abandoned',
              members: [],
              createdAt: new Date().toISOString(),
              expiresAt: Math.floor(Date.now() / 1000) + ABANDONED_BATCH_TTL_SECONDS,
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return { id: batchId, state: 'abandoned', members: [] };
      } catch (err) {
        // committed meanwhile: read it
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    }
  }
}

/** A refused mark's outcome from the machine's item as it stands (none: gone). */
function refused(item: Record<string, unknown> | undefined): MarkOutcome {
  if (!item || item.life === 'dead') return { marked: false };
  // refused for another batch of the same attempt: the one its marker names holds the machine
  const held = item.launchBatch as LaunchMarker | undefined;
  return { marked: false, claimedBy: typeof held?.batchId === 'string' ? held.batchId : '' };
}

/**
 * `mark`'s conditional write as a PartiQL statement: the same condition
 * (an UPDATE finds no item to write unless it exists, as `attribute_exists(pk)`).
 */
function markStatement(
  table: string,
  model: string,
  machineId: string,
  marker: LaunchMarker,
  options: { replaces?: string },
): WriteStatement {
  const batch = `${quoted('launchBatch')}.${quoted('batchId')}`;
  const free =
    options.replaces !== undefined
      ? {
          clauses: [`${batch} = ?`, `${batch} = ?`],
          parameters: [marker.batchId, options.replaces],
        }
      : {
          clauses: [
            `${quoted('launchBatch')} IS MISSING`,
            `${quoted('launchBatch')}.${quoted('tokenSeed')} <> ?`,
            `${batch} = ?`,
          ],
          parameters: [marker.tokenSeed, marker.batchId],
        };
  const pk = modelPk(model);
  const sk = machineSk(machineId);
  return {
    item: `${pk}\n${sk}`,
    statement:
      `UPDATE ${quoted(table)} SET ${quoted('launchBatch')} = ? ` +
      `WHERE ${quoted('pk')} = ? AND ${quoted('sk')} = ? AND ${quoted('life')} <> ? ` +
      `AND (${free.clauses.join(' OR ')})`,
    parameters: [marker, pk, sk, 'dead', ...free.parameters],
  };
}
