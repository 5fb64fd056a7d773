import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { EntityConflictError, EntityNotFoundError, TransactionTooLargeError } from './errors';
import { machineItem, machineKey, modelKey, toMachine } from './items';
import { TRANSACTION_LIMIT, type TableAccess } from './table';
import type { MachineRecord } from './types';

/**
 * The machine writes the repository makes itself: new machines, a host
 * never parted from its containers, and a machine's provisioning fields.
 * The items of the transactions services compose are in machine-writes.ts
 * and writes.ts. Reached through Repository.
 */

/** New machines per transaction: DynamoDB's 100 items, less the model check. */
export const MACHINES_PER_TRANSACTION = TRANSACTION_LIMIT - 1;

/**
 * Splits new machines into transactions of at most `limit`, never parting a
 * host from its containers (`3` and `3/lxd/0`): a host written without the
 * container it lists would wait for it for ever once its model goes Dying.
 * Order is kept; a host with its containers is one group (they arrive
 * together, host first, from every creation path).
 */
export function machineWriteChunks(
  machines: readonly MachineRecord[],
  limit: number = MACHINES_PER_TRANSACTION,
): MachineRecord[][] {
  const groups: MachineRecord[][] = [];
  for (const m of machines) {
    const host = m.id.split('/')[0];
    const last = groups[groups.length - 1];
    if (last && last[0]!.id.split('/')[0] === host) last.push(m);
    else groups.push([m]);
  }
  const chunks: MachineRecord[][] = [];
  let current: MachineRecord[] = [];
  for (const group of groups) {
    if (group.length > limit)
      throw new TransactionTooLargeError(
        `machine ${group[0]!.id} and its containers need ${group.length} writes in one transaction, more than ${limit}`,
      );
    if (current.length + group.length > limit) {
      chunks.push(current);
      current = [];
    }
    current.push(...group);
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Writes new machines all or nothing per transaction (see
 * machineWriteChunks: a host and its containers always share one), only
 * while the model is alive.
 */
export async function putNewMachines(t: TableAccess, machines: MachineRecord[]): Promise<void> {
  for (const chunk of machineWriteChunks(machines)) {
    const first = chunk[0]!;
    // machines that name their model's uid are written only into that model: a model
    // destroyed and re-created by name meanwhile is another model (DESIGN.md "Entities")
    const uid = first.modelUid;
    if (chunk.some((m) => m.modelUid !== uid))
      throw new Error(`new machines of model "${first.model}" name different model uids`);
    const tx = t
      .transaction()
      .check(
        modelKey(first.model),
        uid !== undefined ? 'life = :alive AND uid = :uid' : 'life = :alive',
        { ':alive': 'alive', ...(uid !== undefined ? { ':uid': uid } : {}) },
        new EntityConflictError(`model "${first.model}" is being destroyed`),
      );
    for (const m of chunk) tx.put(machineItem(m), 'attribute_not_exists(pk)');
    await t.commit(tx);
  }
}

/** The fields of a machine's provisioning a write may set. */
export type MachineChanges = Partial<
  Pick<
    MachineRecord,
    'status' | 'message' | 'instanceId' | 'imageId' | 'zone' | 'instanceType' | 'hardware'
  >
>;
/** The fields of a machine's provisioning a write may remove. */
export type RemovableMachineField = 'instanceId' | 'imageId' | 'zone' | 'instanceType' | 'hardware';

/**
 * Updates a machine's provisioning fields. The write is conditional on the
 * machine still existing, so a late update never resurrects a removed machine.
 */
export async function updateMachine(
  t: TableAccess,
  model: string,
  id: string,
  changes: MachineChanges,
  remove: readonly RemovableMachineField[],
): Promise<MachineRecord> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':now': new Date().toISOString() };
  const sets = ['updatedAt = :now'];
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined) continue;
    names[`#${k}`] = k;
    values[`:${k}`] = v;
    sets.push(`#${k} = :${k}`);
  }
  for (const k of remove) names[`#${k}`] = k;
  const removeClause = remove.length ? ` REMOVE ${remove.map((k) => `#${k}`).join(', ')}` : '';
  try {
    const out = await t.doc.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: machineKey(model, id),
        UpdateExpression: `SET ${sets.join(', ')}${removeClause}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toMachine(out.Attributes ?? {});
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException)
      throw new EntityNotFoundError(`machine ${id} not found`);
    throw err;
  }
}
