import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** DynamoDB's limit of keys in one BatchGetItem call. */
export const BATCH_GET_LIMIT = 100;

type Item = Record<string, unknown>;

/**
 * BatchGetItem, strongly consistent, BATCH_GET_LIMIT keys a call; the keys a
 * call leaves unprocessed are asked again after `pause(attempt)` (attempt 1, 2, …).
 */
export async function batchGetAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: ReadonlyArray<Record<string, unknown>>,
  options: {
    projection?: string;
    names?: Record<string, string>;
    pause: (attempt: number) => Promise<void>;
  },
): Promise<Item[]> {
  const items: Item[] = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) {
    let pending: Item[] = keys.slice(i, i + BATCH_GET_LIMIT);
    for (let attempt = 1; pending.length > 0; attempt++) {
      const out = await doc.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: pending,
              ConsistentRead: true,
              ...(options.projection !== undefined
                ? { ProjectionExpression: options.projection }
                : {}),
              ...(options.names !== undefined ? { ExpressionAttributeNames: options.names } : {}),
            },
          },
        }),
      );
      items.push(...((out.Responses?.[tableName] ?? []) as Item[]));
      pending = (out.UnprocessedKeys?.[tableName]?.Keys ?? []) as Item[];
      if (pending.length > 0) await options.pause(attempt);
    }
  }
  return items;
}
