import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import { documentClient } from './table';

/** How long a key is remembered (API.md: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a first request holds its key: longer than any request may run
 * (API Gateway gives up after 30 s). A retry that arrives later takes the key
 * over and completes what the first began.
 */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000;

export interface StoredResponse {
  status: number;
  body?: unknown;
}

/** What a request learns when it presents its key. */
export type IdempotencyClaim =
  | { kind: 'run'; memo: Record<string, unknown> }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'in-flight' }
  | { kind: 'mismatch' };

type Item = Record<string, unknown>;

function keyOf(key: string) {
  return { pk: `IDEMPOTENCY#${createHash('sha256').update(key).digest('hex')}`, sk: '#REQUEST' };
}

/**
 * Idempotency-Key records (API.md §1 "Retried requests"), one item per key in
 * the provisioner's table, expiring by DynamoDB TTL (`expiresAt`, epoch
 * seconds) and by the `expiresAt` check here (TTL deletion is lazy).
 *
 * A request claims its key with a conditional put; the record holds the
 * request's fingerprint (method, path, body), a lease, the steps it has done
 * (`memo`: e.g. the machine ids it reserved, so a retry after a cut-off
 * writes the same ids instead of new ones) and, once done, its response.
 */
export class IdempotencyStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    private readonly now: () => number = Date.now,
  ) {
    this.doc = documentClient(client);
  }

  static fingerprint(method: string, path: string, body: string): string {
    return createHash('sha256').update(`${method} ${path}\n${body}`).digest('hex');
  }

  async claim(key: string, fingerprint: string): Promise<IdempotencyClaim> {
    const now = this.now();
    const record = {
      ...keyOf(key),
      type: 'idempotency',
      fingerprint,
      state: 'in-progress',
      leaseUntil: now + IDEMPOTENCY_LEASE_MS,
      expiresAt: Math.ceil((now + IDEMPOTENCY_TTL_MS) / 1000),
      memo: {},
    };
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
          // new, or expired (TTL deletes lazily)
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :nowSeconds',
          ExpressionAttributeValues: { ':nowSeconds': Math.floor(now / 1000) },
        }),
      );
      return { kind: 'run', memo: {} };
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
    const existing = await this.get(key);
    if (!existing) return this.claim(key, fingerprint); // expired and deleted meanwhile
    if (existing.fingerprint !== fingerprint) return { kind: 'mismatch' };
    if (existing.state === 'done') {
      return { kind: 'replay', response: existing.response as StoredResponse };
    }
    if (typeof existing.leaseUntil === 'number' && existing.leaseUntil > now) {
      return { kind: 'in-flight' };
    }
    // The first request was cut off: take its lease over, keeping what it did.
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keyOf(key),
          UpdateExpression: 'SET leaseUntil = :lease',
          ConditionExpression: '#state = :progress AND leaseUntil = :old',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':lease': now + IDEMPOTENCY_LEASE_MS,
            ':progress': 'in-progress',
            ':old': existing.leaseUntil,
          },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return { kind: 'in-flight' };
      throw err;
    }
    return { kind: 'run', memo: (existing.memo as Record<string, unknown> | undefined) ?? {} };
  }

  /** Remembers one step's result for a retry of the same request. */
  async remember(key: string, step: string, value: unknown): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keyOf(key),
        UpdateExpression: 'SET memo.#step = :value',
        ExpressionAttributeNames: { '#step': step },
        ExpressionAttributeValues: { ':value': value },
      }),
    );
  }

  async complete(key: string, response: StoredResponse): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keyOf(key),
        UpdateExpression: 'SET #state = :done, #response = :response REMOVE leaseUntil, memo',
        ExpressionAttributeNames: { '#state': 'state', '#response': 'response' },
        ExpressionAttributeValues: { ':done': 'done', ':response': response },
      }),
    );
  }

  /**
   * Gives up the lease of a request that failed for reasons of ours (5xx):
   * a retry takes the key over at once and completes what this one began.
   */
  async abandon(key: string): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keyOf(key),
        UpdateExpression: 'SET leaseUntil = :expired',
        ConditionExpression: '#state = :progress',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':expired': 0, ':progress': 'in-progress' },
      }),
    );
  }

  private async get(key: string): Promise<Item | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
    );
    const item = out.Item;
    if (!item) return undefined;
    if (typeof item.expiresAt === 'number' && item.expiresAt * 1000 < this.now()) return undefined;
    return item;
  }
}
