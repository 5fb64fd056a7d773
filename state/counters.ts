import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { EntityConflictError, retryTransactionConflicts } from './errors';
import { appKey, machineKey, modelKey, type Key } from './items';
import { getLiveModel } from './models';
import { getApplication, getMachine } from './reads';
import type { TableAccess } from './table';

/**
 * The id counters (state/README.md "Counters and concurrency"): machine ids
 * on the model item, unit numbers on the application item, container
 * numbers on the host machine. Each reservation is one atomic increment
 * conditional on the parent being alive, so it also proves the parent
 * exists; ids are never reused. Reached through Repository.
 */

/**
 * Reserves `count` new machine ids from the model's counter. Callers
 * reserve them after every check that can refuse the request, so a refusal
 * leaves no gap (a lost race still may).
 */
export async function allocateMachineIds(
  t: TableAccess,
  model: string,
  count: number,
): Promise<string[]> {
  if (count === 0) return [];
  const next = await increment(t, modelKey(model), 'nextMachine', count, async () => {
    await getLiveModel(t, model);
  });
  return Array.from({ length: count }, (_, i) => String(next - count + i));
}

/** Reserves `count` unit numbers from the application's counter (it must exist and be alive). */
export async function allocateUnitNumbers(
  t: TableAccess,
  model: string,
  app: string,
  count: number,
): Promise<number[]> {
  if (count === 0) return [];
  const next = await increment(t, appKey(model, app), 'nextUnit', count, async () => {
    await getApplication(t, model, app);
    throw new EntityConflictError(`application "${app}" is being destroyed`);
  });
  return Array.from({ length: count }, (_, i) => next - count + i);
}

/** The number the application's next unit gets (a read: plans name units with it). */
export async function nextUnitNumber(t: TableAccess, model: string, app: string): Promise<number> {
  const out = await t.doc.send(
    new GetCommand({
      TableName: t.tableName,
      Key: appKey(model, app),
      ConsistentRead: true,
      ProjectionExpression: 'nextUnit',
    }),
  );
  const next: unknown = out.Item?.nextUnit;
  return typeof next === 'number' ? next : 0;
}

/** Per-container counters live on the host machine item: `nextContainer`. */
export async function allocateContainerIds(
  t: TableAccess,
  model: string,
  host: string,
  count: number,
): Promise<string[]> {
  if (count === 0) return [];
  const next = await increment(t, machineKey(model, host), 'nextContainer', count, async () => {
    await getMachine(t, model, host);
    throw new EntityConflictError(`machine ${host} is being destroyed`);
  });
  return Array.from({ length: count }, (_, i) => `${host}/lxd/${next - count + i}`);
}

/**
 * Adds `count` to the counter and answers its new value; when the parent is
 * gone or not alive, `explain` throws the error that says which.
 */
async function increment(
  t: TableAccess,
  key: Key,
  counter: string,
  count: number,
  explain: () => Promise<void>,
): Promise<number> {
  try {
    const out = await retryTransactionConflicts(() =>
      t.doc.send(
        new UpdateCommand({
          TableName: t.tableName,
          Key: key,
          UpdateExpression: 'SET #n = if_not_exists(#n, :zero) + :n',
          ConditionExpression: 'attribute_exists(pk) AND life = :alive',
          ExpressionAttributeNames: { '#n': counter },
          ExpressionAttributeValues: { ':zero': 0, ':n': count, ':alive': 'alive' },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    );
    return Number(out.Attributes?.[counter]);
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) {
      await explain();
      throw new EntityConflictError('the record is being destroyed');
    }
    throw err;
  }
}
