import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { EntityConflictError, EntityNotFoundError, retryTransactionConflicts } from './errors';
import { modelItem, modelKey, toModel } from './items';
import { MODELS_INDEX_PK } from './keys';
import type { TableAccess } from './table';
import type { ModelRecord } from './types';

/**
 * A model's own item: created (alone, or with the items that must never be
 * missing beside it), read, listed, its settings changed, marked Dying.
 * Reached through Repository.
 */

/**
 * Records a new model; `alongside` (e.g. its first grants, state/access.ts)
 * is written in the same transaction, so a model never exists without them.
 */
export async function createModel(
  t: TableAccess,
  model: ModelRecord,
  alongside: ReadonlyArray<Record<string, unknown>>,
): Promise<void> {
  const item = modelItem(model);
  const taken = new EntityConflictError(`model "${model.name}" already exists`);
  if (alongside.length > 0) {
    const tx = t.transaction().put(item, 'attribute_not_exists(pk)', undefined, taken);
    for (const other of alongside) tx.put(other);
    await t.commit(tx);
    return;
  }
  try {
    await t.doc.send(
      new PutCommand({
        TableName: t.tableName,
        Item: item,
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) throw taken;
    throw err;
  }
}

export async function getModel(t: TableAccess, name: string): Promise<ModelRecord> {
  const out = await t.doc.send(
    new GetCommand({ TableName: t.tableName, Key: modelKey(name), ConsistentRead: true }),
  );
  if (!out.Item) throw new EntityNotFoundError(`model "${name}" not found`);
  return toModel(out.Item);
}

/** The model if it exists and is alive; a dying model is as good as gone for new work. */
export async function getLiveModel(t: TableAccess, name: string): Promise<ModelRecord> {
  const model = await getModel(t, name);
  if (model.life !== 'alive') throw new EntityConflictError(`model "${name}" is being destroyed`);
  return model;
}

export async function listModels(t: TableAccess): Promise<ModelRecord[]> {
  const items = await t.queryAll({
    TableName: t.tableName,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': MODELS_INDEX_PK },
  });
  return items.map(toModel);
}

export async function setModelConstraints(
  t: TableAccess,
  name: string,
  constraints: string,
): Promise<void> {
  try {
    await retryTransactionConflicts(() =>
      t.doc.send(
        new UpdateCommand({
          TableName: t.tableName,
          Key: modelKey(name),
          UpdateExpression: 'SET #c = :c',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#c': 'constraints' },
          ExpressionAttributeValues: { ':c': constraints },
        }),
      ),
    );
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException)
      throw new EntityNotFoundError(`model "${name}" not found`);
    throw err;
  }
}

/** Changes a live model's settings; returns the model as written. */
export async function updateModelSettings(
  t: TableAccess,
  name: string,
  settings: Partial<Pick<ModelRecord, 'harvestMode' | 'reprovisionLost'>>,
): Promise<ModelRecord> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':alive': 'alive' };
  const sets: string[] = [];
  for (const [field, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  if (sets.length === 0) return getLiveModel(t, name);
  try {
    const out = await retryTransactionConflicts(() =>
      t.doc.send(
        new UpdateCommand({
          TableName: t.tableName,
          Key: modelKey(name),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'attribute_exists(pk) AND life = :alive',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return toModel(out.Attributes ?? {});
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) {
      await getLiveModel(t, name); // not found, or being destroyed
      throw new EntityConflictError(`model "${name}" changed meanwhile`);
    }
    throw err;
  }
}

export async function markModelDying(t: TableAccess, name: string): Promise<void> {
  await t.doc
    .send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: modelKey(name),
        UpdateExpression: 'SET life = :dying',
        ConditionExpression: 'attribute_exists(pk) AND life = :alive',
        ExpressionAttributeValues: { ':dying': 'dying', ':alive': 'alive' },
      }),
    )
    .catch((err: unknown) => {
      if (!(err instanceof ConditionalCheckFailedException)) throw err; // already dying: fine
    });
}
