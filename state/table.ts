import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  TransactionCanceledException,
  UpdateTableCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  QueryCommand,
  TransactWriteCommand,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { ConcurrentChangeError, TransactionTooLargeError } from './errors';
import { TABLE_SCHEMA } from './schema';

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Creates the table (on-demand, the schema's keys and indexes) unless it exists; waits until active. */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const attributes = new Set<string>([TABLE_SCHEMA.partitionKey, TABLE_SCHEMA.sortKey]);
  for (const index of TABLE_SCHEMA.globalSecondaryIndexes) {
    attributes.add(index.partitionKey);
    attributes.add(index.sortKey);
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attributes].map((name) => ({
          AttributeName: name,
          AttributeType: TABLE_SCHEMA.attributeType,
        })),
        KeySchema: [
          { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: TABLE_SCHEMA.globalSecondaryIndexes.map((index) => ({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' },
            { AttributeName: index.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: index.projection ?? 'ALL' },
        })),
      }),
    );
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: tableName });
  await addMissingIndexes(client, tableName);
}

/**
 * A table made before an index was added to the schema gets it (one at a
 * time, as DynamoDB allows), and is waited for until the index is active.
 */
async function addMissingIndexes(client: DynamoDBClient, tableName: string): Promise<void> {
  for (const index of TABLE_SCHEMA.globalSecondaryIndexes) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const existing = Table?.GlobalSecondaryIndexes ?? [];
    if (existing.some((i) => i.IndexName === index.indexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [index.partitionKey, index.sortKey].map((name) => ({
          AttributeName: name,
          AttributeType: TABLE_SCHEMA.attributeType,
        })),
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: index.indexName,
              KeySchema: [
                { AttributeName: index.partitionKey, KeyType: 'HASH' },
                { AttributeName: index.sortKey, KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: index.projection ?? 'ALL' },
            },
          },
        ],
      }),
    );
    for (let i = 0; i < 120; i++) {
      const { Table: t } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      const made = t?.GlobalSecondaryIndexes?.find((g) => g.IndexName === index.indexName);
      if (made?.IndexStatus === 'ACTIVE') break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * The document client every store of the table writes through: attributes
 * set to `undefined` are left out of the item rather than refused.
 */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
}

/**
 * Every page of a Query. With `onConsumed`, DynamoDB reports each page's
 * read capacity and it is handed on (the repository counts its reads).
 */
export async function queryAll(
  doc: DynamoDBDocumentClient,
  input: QueryCommandInput,
  onConsumed?: (capacityUnits: number) => void,
): Promise<Item[]> {
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new QueryCommand({
        ...input,
        ExclusiveStartKey: start,
        ...(onConsumed ? { ReturnConsumedCapacity: 'TOTAL' as const } : {}),
      }),
    );
    onConsumed?.(out.ConsumedCapacity?.CapacityUnits ?? 0);
    items.push(...((out.Items ?? []) as Item[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** The most items one DynamoDB transaction may hold. */
export const TRANSACTION_LIMIT = 100;

/**
 * One all-or-nothing write. Every item may carry the error to raise when its
 * condition fails; a failed condition without one (a version check) and any
 * transaction conflict mean "someone changed it meanwhile": retry.
 */
export class Transaction {
  readonly items: TransactItem[] = [];
  readonly errors: Array<Error | undefined> = [];

  constructor(readonly tableName: string) {}

  put(item: Item, condition?: string, values?: Item, onFail?: Error): this {
    this.items.push({
      Put: {
        TableName: this.tableName,
        Item: item,
        ...(condition ? { ConditionExpression: condition } : {}),
        ...(values ? { ExpressionAttributeValues: values } : {}),
      },
    });
    this.errors.push(onFail);
    return this;
  }

  update(
    key: Key,
    expression: string,
    opts: { condition?: string; values?: Item; names?: Record<string, string>; onFail?: Error },
  ): this {
    this.items.push({
      Update: {
        TableName: this.tableName,
        Key: key,
        UpdateExpression: expression,
        ...(opts.condition ? { ConditionExpression: opts.condition } : {}),
        ...(opts.values ? { ExpressionAttributeValues: opts.values } : {}),
        ...(opts.names ? { ExpressionAttributeNames: opts.names } : {}),
      },
    });
    this.errors.push(opts.onFail);
    return this;
  }

  check(
    key: Key,
    condition: string,
    values: Item,
    onFail?: Error,
    names?: Record<string, string>,
  ): this {
    this.items.push({
      ConditionCheck: {
        TableName: this.tableName,
        Key: key,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
        ...(names ? { ExpressionAttributeNames: names } : {}),
      },
    });
    this.errors.push(onFail);
    return this;
  }

  /** A write built elsewhere (a zone counter's, state/zone-counts.ts), as DynamoDB takes it. */
  add(item: TransactItem, onFail?: Error): this {
    this.items.push(item);
    this.errors.push(onFail);
    return this;
  }

  delete(key: Key, condition?: string, values?: Item, onFail?: Error): this {
    this.items.push({
      Delete: {
        TableName: this.tableName,
        Key: key,
        ...(condition ? { ConditionExpression: condition } : {}),
        ...(values ? { ExpressionAttributeValues: values } : {}),
      },
    });
    this.errors.push(onFail);
    return this;
  }

  get size(): number {
    return this.items.length;
  }
}

/**
 * Writes the transaction. A failed condition raises its item's error, or
 * ConcurrentChangeError (as does a transaction conflict); more items than
 * one transaction holds raise TransactionTooLargeError before anything is sent.
 */
export async function commitTransaction(
  doc: DynamoDBDocumentClient,
  tx: Transaction,
): Promise<void> {
  if (tx.size === 0) return;
  if (tx.size > TRANSACTION_LIMIT)
    throw new TransactionTooLargeError(
      `this change needs ${tx.size} writes in one transaction, more than DynamoDB's ${TRANSACTION_LIMIT}`,
    );
  try {
    await doc.send(new TransactWriteCommand({ TransactItems: tx.items }));
  } catch (err) {
    if (err instanceof TransactionCanceledException) {
      const reasons = err.CancellationReasons ?? [];
      if (reasons.some((r) => r.Code === 'TransactionConflict'))
        throw new ConcurrentChangeError('transaction conflict');
      const failed = reasons.findIndex((r) => r.Code === 'ConditionalCheckFailed');
      const mapped = failed >= 0 ? tx.errors[failed] : undefined;
      throw mapped ?? new ConcurrentChangeError('a record changed meanwhile');
    }
    throw err;
  }
}

/**
 * What the repository's operations (models.ts, counters.ts, reads.ts,
 * machines.ts) need of the table: the Repository itself, handed in, so its
 * read-capacity count and a test's `commit` override see every call.
 */
export interface TableAccess {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  transaction(): Transaction;
  commit(tx: Transaction): Promise<void>;
  queryAll(input: QueryCommandInput): Promise<Item[]>;
}
