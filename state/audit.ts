import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from './table';

/**
 * The audit log (API.md, "Audit"): one item per answered request, kept
 * `retentionDays` by DynamoDB's TTL.
 *
 * - `AUDIT#MODEL#<model>` (or `AUDIT#CONTROLLER` for requests about no model)
 *   / `<time>#<requestId>`: a model's entries, newest first by a reversed
 *   Query. Not in the model's partition, so they outlive the model.
 * - gsi1 `AUDIT` / `<time>#<requestId>`: every entry, newest first. One index
 *   partition takes all audit writes (DynamoDB: 1,000 writes a second per
 *   partition), far above the rate people change things at.
 */
export interface AuditEntry {
  time: string;
  user: string;
  method: string;
  path: string;
  model?: string;
  status: number;
  requestId: string;
  idempotencyKey?: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  cursor?: string;
}

export interface AuditQuery {
  /** Entries at or after this time (RFC 3339, UTC). */
  since?: string;
  limit: number;
  cursor?: string;
  /** Only this user's entries (all-models listing). */
  user?: string;
}

export const AUDIT_INDEX_PK = 'AUDIT';
/** How long an audit write may take before the request is answered without it (README, "Audit"). */
export const AUDIT_WRITE_TIMEOUT_MS = 2_000;
export const auditPk = (model: string | undefined): string =>
  model === undefined ? 'AUDIT#CONTROLLER' : `AUDIT#MODEL#${model}`;

/** A cursor that is not one this store handed out. */
export class InvalidCursorError extends Error {
  override readonly name = 'InvalidCursorError';
  readonly code = 'bad-request';
}

export class AuditStore {
  readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    readonly retentionDays: number,
  ) {
    this.doc = documentClient(client);
  }

  async record(entry: AuditEntry): Promise<void> {
    const sk = `${entry.time}#${entry.requestId}`;
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: auditPk(entry.model),
          sk,
          type: 'audit',
          gsi1pk: AUDIT_INDEX_PK,
          gsi1sk: sk,
          ...entry,
          expiresAt: Math.floor(Date.parse(entry.time) / 1000) + this.retentionDays * 86_400,
        },
      }),
      // a hanging write must not hold the answer until API Gateway gives up (29 s)
      { abortSignal: AbortSignal.timeout(AUDIT_WRITE_TIMEOUT_MS) },
    );
  }

  /** A model's entries, newest first. */
  modelEntries(model: string, query: AuditQuery): Promise<AuditPage> {
    const pk = auditPk(model);
    return this.page(query, { keyName: 'pk', sortName: 'sk', value: pk });
  }

  /** Every entry (models and controller), newest first. */
  allEntries(query: AuditQuery): Promise<AuditPage> {
    return this.page(query, {
      keyName: 'gsi1pk',
      sortName: 'gsi1sk',
      value: AUDIT_INDEX_PK,
      index: 'gsi1',
    });
  }

  private async page(
    query: AuditQuery,
    where: { keyName: string; sortName: string; value: string; index?: string },
  ): Promise<AuditPage> {
    let start = decodeCursor(query.cursor, where.keyName, where.sortName, where.value);
    // a cursor older than `since` (a page of an earlier query, `since` raised
    // since): DynamoDB refuses a start key outside the key condition. Reading
    // newest first, nothing at or after `since` lies past it: the listing ends.
    if (start && query.since && String(start[where.sortName]) < query.since) return { entries: [] };
    const entries: AuditEntry[] = [];
    let more = false;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          ...(where.index ? { IndexName: where.index } : {}),
          KeyConditionExpression: query.since ? '#k = :k AND #s >= :since' : '#k = :k',
          ...(query.user ? { FilterExpression: '#user = :user' } : {}),
          ExpressionAttributeNames: {
            '#k': where.keyName,
            ...(query.since ? { '#s': where.sortName } : {}),
            ...(query.user ? { '#user': 'user' } : {}),
          },
          ExpressionAttributeValues: {
            ':k': where.value,
            ...(query.since ? { ':since': query.since } : {}),
            ...(query.user ? { ':user': query.user } : {}),
          },
          ScanIndexForward: false,
          Limit: query.limit - entries.length,
          ExclusiveStartKey: start,
          ...(where.index ? {} : { ConsistentRead: true }),
        }),
      );
      for (const item of out.Items ?? []) entries.push(toEntry(item));
      start = out.LastEvaluatedKey;
      more = start !== undefined;
    } while (more && entries.length < query.limit);
    return { entries, ...(more && start ? { cursor: encodeCursor(start) } : {}) };
  }
}

function toEntry(item: Record<string, unknown>): AuditEntry {
  return {
    time: String(item.time),
    user: String(item.user),
    method: String(item.method),
    path: String(item.path),
    ...(typeof item.model === 'string' ? { model: item.model } : {}),
    status: Number(item.status),
    requestId: String(item.requestId),
    ...(typeof item.idempotencyKey === 'string' ? { idempotencyKey: item.idempotencyKey } : {}),
  };
}

function encodeCursor(key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** A cursor must be a key of the partition being read: it can never reach another model's entries. */
function decodeCursor(
  cursor: string | undefined,
  keyName: string,
  sortName: string,
  value: string,
): Record<string, unknown> | undefined {
  if (cursor === undefined) return undefined;
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError('invalid cursor');
  }
  // exactly the key attributes of the table or index read (a missing or extra
  // one is DynamoDB's ValidationException, a 500), each a non-empty string
  const names = [...new Set([keyName, sortName, 'pk', 'sk'])].sort();
  if (
    typeof key !== 'object' ||
    key === null ||
    Array.isArray(key) ||
    (key as Record<string, unknown>)[keyName] !== value ||
    Object.keys(key).sort().join('\n') !== names.join('\n') ||
    !Object.values(key).every((v) => typeof v === 'string' && v !== '' && v.length <= 1024)
  ) {
    throw new InvalidCursorError('invalid cursor');
  }
  return key as Record<string, unknown>;
}
