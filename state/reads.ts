import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { EntityNotFoundError } from './errors';
import {
  appKey,
  machineKey,
  toApplication,
  toMachine,
  toModel,
  toRelation,
  toUnit,
  unitKey,
} from './items';
import {
  APP_SK_PREFIX,
  applicationMachinesIndexPk,
  MACHINE_SK_PREFIX,
  MODEL_SK,
  modelPk,
  RELATION_SK_PREFIX,
  UNIT_SK_PREFIX,
} from './keys';
import { INSTANCE_INDEX } from './schema';
import type { TableAccess } from './table';
import type {
  ApplicationRecord,
  MachineRecord,
  ModelRecord,
  RelationRecord,
  UnitRecord,
} from './types';

/**
 * Reads of a model's entities: strongly consistent GetItems and Queries of
 * its partition, and the two index lookups (a distribution group's
 * machines, the machine recording an instance), eventually consistent.
 * Reached through Repository.
 */

/** Everything of one model, read with one (paginated) Query. */
export interface ModelContents {
  model: ModelRecord;
  applications: ApplicationRecord[];
  units: UnitRecord[];
  machines: MachineRecord[];
  relations: RelationRecord[];
}

export async function loadModel(t: TableAccess, name: string): Promise<ModelContents> {
  const items = await t.queryAll({
    TableName: t.tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': modelPk(name) },
    ConsistentRead: true,
  });
  const modelItem = items.find((i) => i.sk === MODEL_SK);
  if (!modelItem) throw new EntityNotFoundError(`model "${name}" not found`);
  const contents: ModelContents = {
    model: toModel(modelItem),
    applications: [],
    units: [],
    machines: [],
    relations: [],
  };
  for (const item of items) {
    const sk = String(item.sk);
    if (sk.startsWith(APP_SK_PREFIX)) contents.applications.push(toApplication(item));
    else if (sk.startsWith(UNIT_SK_PREFIX)) contents.units.push(toUnit(item));
    else if (sk.startsWith(MACHINE_SK_PREFIX)) contents.machines.push(toMachine(item));
    else if (sk.startsWith(RELATION_SK_PREFIX)) contents.relations.push(toRelation(item));
  }
  return contents;
}

export async function getApplication(
  t: TableAccess,
  model: string,
  app: string,
): Promise<ApplicationRecord> {
  const out = await t.doc.send(
    new GetCommand({ TableName: t.tableName, Key: appKey(model, app), ConsistentRead: true }),
  );
  if (!out.Item) throw new EntityNotFoundError(`application "${app}" not found`);
  return toApplication(out.Item);
}

export async function getUnit(t: TableAccess, model: string, unit: string): Promise<UnitRecord> {
  const out = await t.doc.send(
    new GetCommand({
      TableName: t.tableName,
      Key: unitKey(model, unit),
      ConsistentRead: true,
    }),
  );
  if (!out.Item) throw new EntityNotFoundError(`unit "${unit}" not found`);
  return toUnit(out.Item);
}

export async function listUnits(t: TableAccess, model: string, app: string): Promise<UnitRecord[]> {
  const items = await t.queryAll({
    TableName: t.tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': `${UNIT_SK_PREFIX}${app}/` },
    ConsistentRead: true,
  });
  return items.map(toUnit);
}

export async function listRelations(t: TableAccess, model: string): Promise<RelationRecord[]> {
  const items = await t.queryAll({
    TableName: t.tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': RELATION_SK_PREFIX },
    ConsistentRead: true,
  });
  return items.map(toRelation);
}

/** The machines hosting principal units of an application (gsi1; eventually consistent). */
export async function machinesOfApplication(
  t: TableAccess,
  model: string,
  app: string,
): Promise<string[]> {
  const items = await t.queryAll({
    TableName: t.tableName,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': applicationMachinesIndexPk(model, app) },
  });
  return [...new Set(items.map((i) => String(i.gsi1sk)))];
}

/**
 * The machine that records `instanceId` (the byInstance index; eventually
 * consistent: a launch recorded a moment ago may not be there yet).
 * Containers record their host's instance too; only the host is answered.
 */
export async function machineByInstance(
  t: TableAccess,
  instanceId: string,
): Promise<{ model: string; machineId: string } | undefined> {
  const items = await t.queryAll({
    TableName: t.tableName,
    IndexName: INSTANCE_INDEX,
    KeyConditionExpression: 'instanceId = :id',
    ExpressionAttributeValues: { ':id': instanceId },
  });
  for (const item of items) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    if (!pk.startsWith('MODEL#') || !sk.startsWith(MACHINE_SK_PREFIX)) continue;
    const machineId = sk.slice(MACHINE_SK_PREFIX.length);
    if (machineId.includes('/')) continue; // a container: its host owns the instance
    return { model: pk.slice('MODEL#'.length), machineId };
  }
  return undefined;
}

export async function getMachine(
  t: TableAccess,
  model: string,
  id: string,
): Promise<MachineRecord> {
  const out = await t.doc.send(
    new GetCommand({
      TableName: t.tableName,
      Key: machineKey(model, id),
      ConsistentRead: true,
    }),
  );
  if (!out.Item) throw new EntityNotFoundError(`machine ${id} not found`);
  return toMachine(out.Item);
}

export async function listMachines(t: TableAccess, model: string): Promise<MachineRecord[]> {
  const items = await t.queryAll({
    TableName: t.tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': MACHINE_SK_PREFIX },
    ConsistentRead: true,
  });
  return items.map(toMachine);
}
