import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  EntityConflictError,
  EntityNotFoundError,
  retryTransactionConflicts,
  TransactionTooLargeError,
} from './errors';
import { ProvisioningStore } from './provisioning';
import { ZoneCountStore, type Regroup } from './zone-counts';
import { INSTANCE_INDEX } from './schema';
import {
  APP_SK_PREFIX,
  MACHINE_SK_PREFIX,
  MODELS_INDEX_PK,
  MODEL_SK,
  RELATION_SK_PREFIX,
  UNIT_SK_PREFIX,
  appSk,
  applicationMachinesIndexPk,
  machineSk,
  modelPk,
  relationSk,
  unitSk,
} from './keys';
import {
  commitTransaction,
  documentClient,
  queryAll,
  Transaction,
  TRANSACTION_LIMIT,
} from './table';
import type {
  ApplicationRecord,
  MachineRecord,
  ModelRecord,
  RelationRecord,
  UnitRecord,
} from './types';

// the transaction helpers moved to table.ts (shared with the provisioning store); importers keep this path
export { Transaction, TRANSACTION_LIMIT } from './table';

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };

const MODEL_FIELDS = [
  'name',
  'uid',
  'region',
  'constraints',
  'harvestMode',
  'availabilitySets',
  'reprovisionLost',
  'life',
  'createdAt',
] as const;
const APP_FIELDS = [
  'model',
  'name',
  'charm',
  'base',
  'constraints',
  'subordinate',
  'life',
  'createdAt',
  'version',
] as const;
const UNIT_FIELDS = [
  'model',
  'name',
  'application',
  'machine',
  'constraints',
  'life',
  'principal',
  'subordinates',
  'createdAt',
  'version',
] as const;
const MACHINE_FIELDS = [
  'model',
  'id',
  'base',
  'constraints',
  'placement',
  'applications',
  'principals',
  'containers',
  'manual',
  'life',
  'status',
  'message',
  'errorCount',
  'instanceId',
  'imageId',
  'zone',
  'instanceType',
  'hardware',
  'instanceStatus',
  'instanceRecordedAt',
  'instanceStatusAt',
  'privateAddress',
  'publicAddress',
  'placementGroup',
  'partition',
  'pricePerHour',
  'createdAt',
  'updatedAt',
  'version',
] as const;

function pick<T>(item: Item, fields: readonly string[]): T {
  const out: Item = {};
  for (const f of fields) if (item[f] !== undefined) out[f] = item[f];
  return out as T;
}

export function toModel(item: Item): ModelRecord {
  const m = pick<ModelRecord>(item, MODEL_FIELDS);
  return {
    ...m,
    availabilitySets: m.availabilitySets ?? false,
    reprovisionLost: m.reprovisionLost ?? false,
  };
}
export function toApplication(item: Item): ApplicationRecord {
  return pick<ApplicationRecord>(item, APP_FIELDS);
}
export function toUnit(item: Item): UnitRecord {
  const u = pick<UnitRecord>(item, UNIT_FIELDS);
  return { ...u, subordinates: u.subordinates ?? [] };
}
export function toMachine(item: Item): MachineRecord {
  const m = pick<MachineRecord>(item, MACHINE_FIELDS);
  return {
    ...m,
    applications: m.applications ?? [],
    principals: m.principals ?? [],
    containers: m.containers ?? [],
  };
}
export function toRelation(item: Item): RelationRecord {
  return {
    model: String(item.model),
    endpoints: item.endpoints as [string, string],
    createdAt: String(item.createdAt),
  };
}

export const modelKey = (model: string): Key => ({ pk: modelPk(model), sk: MODEL_SK });
export const machineKey = (model: string, id: string): Key => ({
  pk: modelPk(model),
  sk: machineSk(id),
});
export const appKey = (model: string, app: string): Key => ({ pk: modelPk(model), sk: appSk(app) });
export const unitKey = (model: string, unit: string): Key => ({
  pk: modelPk(model),
  sk: unitSk(unit),
});

/**
 * A new machine's item. Its container counter starts past the containers it
 * is created with (a new host made for `lxd` holds `N/lxd/0`), so every path
 * that creates a host keeps the counter right in this one place.
 */
export function machineItem(m: MachineRecord): Item {
  return {
    ...m,
    ...machineKey(m.model, m.id),
    type: 'machine',
    nextContainer: m.containers.length,
    version: m.version ?? 0,
  };
}

export function unitItem(u: UnitRecord): Item {
  return {
    ...u,
    ...unitKey(u.model, u.name),
    type: 'unit',
    // principal units index their machine under their application: the machines of a distribution group
    ...(u.principal === undefined
      ? { gsi1pk: applicationMachinesIndexPk(u.model, u.application), gsi1sk: u.machine }
      : {}),
  };
}

export function appItem(a: ApplicationRecord): Item {
  return { ...a, ...appKey(a.model, a.name), type: 'application', nextUnit: 0 };
}

export function relationItem(r: RelationRecord): Item {
  return {
    ...r,
    pk: modelPk(r.model),
    sk: relationSk(r.endpoints[0], r.endpoints[1]),
    type: 'relation',
  };
}

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

/** Everything of one model, read with one (paginated) Query. */
export interface ModelContents {
  model: ModelRecord;
  applications: ApplicationRecord[];
  units: UnitRecord[];
  machines: MachineRecord[];
  relations: RelationRecord[];
}

export class Repository {
  readonly doc: DynamoDBDocumentClient;
  /** Read capacity consumed by this repository's Queries, as DynamoDB reports it. */
  consumedReadCapacity = 0;

  constructor(
    private readonly client: DynamoDBClient,
    readonly tableName: string,
  ) {
    this.doc = documentClient(client);
  }

  transaction(): Transaction {
    return new Transaction(this.tableName);
  }

  async commit(tx: Transaction): Promise<void> {
    await commitTransaction(this.doc, tx);
  }

  // ---- models

  /**
   * Records a new model; `alongside` (e.g. its first grants, state/access.ts)
   * is written in the same transaction, so a model never exists without them.
   */
  async createModel(
    model: ModelRecord,
    alongside: ReadonlyArray<Record<string, unknown>> = [],
  ): Promise<void> {
    const item = {
      ...modelKey(model.name),
      type: 'model',
      gsi1pk: MODELS_INDEX_PK,
      gsi1sk: model.name,
      nextMachine: 0,
      ...model,
    };
    const taken = new EntityConflictError(`model "${model.name}" already exists`);
    if (alongside.length > 0) {
      const tx = this.transaction().put(item, 'attribute_not_exists(pk)', undefined, taken);
      for (const other of alongside) tx.put(other);
      await this.commit(tx);
      return;
    }
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) throw taken;
      throw err;
    }
  }

  async getModel(name: string): Promise<ModelRecord> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: modelKey(name), ConsistentRead: true }),
    );
    if (!out.Item) throw new EntityNotFoundError(`model "${name}" not found`);
    return toModel(out.Item);
  }

  /** The model if it exists and is alive; a dying model is as good as gone for new work. */
  async getLiveModel(name: string): Promise<ModelRecord> {
    const model = await this.getModel(name);
    if (model.life !== 'alive') throw new EntityConflictError(`model "${name}" is being destroyed`);
    return model;
  }

  async listModels(): Promise<ModelRecord[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': MODELS_INDEX_PK },
    });
    return items.map(toModel);
  }

  async setModelConstraints(name: string, constraints: string): Promise<void> {
    try {
      await retryTransactionConflicts(() =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
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
  async updateModelSettings(
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
    if (sets.length === 0) return this.getLiveModel(name);
    try {
      const out = await retryTransactionConflicts(() =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
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
        await this.getLiveModel(name); // not found, or being destroyed
        throw new EntityConflictError(`model "${name}" changed meanwhile`);
      }
      throw err;
    }
  }

  async markModelDying(name: string): Promise<void> {
    await this.doc
      .send(
        new UpdateCommand({
          TableName: this.tableName,
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

  /**
   * Removes a Dying model once no entity is left in its partition (its
   * `#`-keyed bookkeeping goes with it): the same rule the workflow applies
   * when it removes a model's last machine. Returns whether it was removed.
   */
  async removeModelIfEmpty(name: string): Promise<boolean> {
    return new ProvisioningStore(this.client, this.tableName).removeModelIfDyingAndEmpty(name);
  }

  /** The distribution groups' zone (and partition) counts, as the next zone claims would see them. */
  groupCounts(model: string, groups: readonly string[]) {
    return new ZoneCountStore(this.client, this.tableName).groupCounts(model, groups);
  }

  /**
   * What a change of the machine's applications must write with it so its
   * zone counts follow (ZoneCountStore.regroup): merge `machine` into the
   * machine's update and add `counters` to the same transaction.
   */
  regroupMachine(model: string, id: string, applications: readonly string[]): Promise<Regroup> {
    return new ZoneCountStore(this.client, this.tableName).regroup(model, id, applications);
  }

  /**
   * Reserves `count` new machine ids from the model's counter. The counter
   * lives on the model item, so the increment also proves the model exists and
   * is alive; ids are never reused. Callers reserve them after every check that can
   * refuse the request, so a refusal leaves no gap (a lost race still may).
   */
  async allocateMachineIds(model: string, count: number): Promise<string[]> {
    if (count === 0) return [];
    const next = await this.increment(modelKey(model), 'nextMachine', count, async () => {
      await this.getLiveModel(model);
    });
    return Array.from({ length: count }, (_, i) => String(next - count + i));
  }

  /** Reserves `count` unit numbers from the application's counter (it must exist and be alive). */
  async allocateUnitNumbers(model: string, app: string, count: number): Promise<number[]> {
    if (count === 0) return [];
    const next = await this.increment(appKey(model, app), 'nextUnit', count, async () => {
      await this.getApplication(model, app);
      throw new EntityConflictError(`application "${app}" is being destroyed`);
    });
    return Array.from({ length: count }, (_, i) => next - count + i);
  }

  /** The number the application's next unit gets (a read: plans name units with it). */
  async nextUnitNumber(model: string, app: string): Promise<number> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: appKey(model, app),
        ConsistentRead: true,
        ProjectionExpression: 'nextUnit',
      }),
    );
    const next: unknown = out.Item?.nextUnit;
    return typeof next === 'number' ? next : 0;
  }

  /** Per-container counters live on the host machine item: `nextContainer`. */
  async allocateContainerIds(model: string, host: string, count: number): Promise<string[]> {
    if (count === 0) return [];
    const next = await this.increment(machineKey(model, host), 'nextContainer', count, async () => {
      await this.getMachine(model, host);
      throw new EntityConflictError(`machine ${host} is being destroyed`);
    });
    return Array.from({ length: count }, (_, i) => `${host}/lxd/${next - count + i}`);
  }

  private async increment(
    key: Key,
    counter: string,
    count: number,
    explain: () => Promise<void>,
  ): Promise<number> {
    try {
      const out = await retryTransactionConflicts(() =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
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

  // ---- everything of a model

  async loadModel(name: string): Promise<ModelContents> {
    const items = await this.queryAll({
      TableName: this.tableName,
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

  // ---- applications, units, relations

  async getApplication(model: string, app: string): Promise<ApplicationRecord> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: appKey(model, app), ConsistentRead: true }),
    );
    if (!out.Item) throw new EntityNotFoundError(`application "${app}" not found`);
    return toApplication(out.Item);
  }

  async getUnit(model: string, unit: string): Promise<UnitRecord> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: unitKey(model, unit),
        ConsistentRead: true,
      }),
    );
    if (!out.Item) throw new EntityNotFoundError(`unit "${unit}" not found`);
    return toUnit(out.Item);
  }

  async listUnits(model: string, app: string): Promise<UnitRecord[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': `${UNIT_SK_PREFIX}${app}/` },
      ConsistentRead: true,
    });
    return items.map(toUnit);
  }

  async listRelations(model: string): Promise<RelationRecord[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': RELATION_SK_PREFIX },
      ConsistentRead: true,
    });
    return items.map(toRelation);
  }

  /** The machines hosting principal units of an application (gsi1; eventually consistent). */
  async machinesOfApplication(model: string, app: string): Promise<string[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
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
  async machineByInstance(
    instanceId: string,
  ): Promise<{ model: string; machineId: string } | undefined> {
    const items = await this.queryAll({
      TableName: this.tableName,
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

  // ---- machines

  /**
   * Writes new machines all or nothing per transaction (see
   * machineWriteChunks: a host and its containers always share one), only
   * while the model is alive.
   */
  async putNewMachines(machines: MachineRecord[]): Promise<void> {
    for (const chunk of machineWriteChunks(machines)) {
      const first = chunk[0]!;
      const tx = this.transaction().check(
        modelKey(first.model),
        'life = :alive',
        { ':alive': 'alive' },
        new EntityConflictError(`model "${first.model}" is being destroyed`),
      );
      for (const m of chunk) tx.put(machineItem(m), 'attribute_not_exists(pk)');
      await this.commit(tx);
    }
  }

  async getMachine(model: string, id: string): Promise<MachineRecord> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: machineKey(model, id),
        ConsistentRead: true,
      }),
    );
    if (!out.Item) throw new EntityNotFoundError(`machine ${id} not found`);
    return toMachine(out.Item);
  }

  async listMachines(model: string): Promise<MachineRecord[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': MACHINE_SK_PREFIX },
      ConsistentRead: true,
    });
    return items.map(toMachine);
  }

  /**
   * Updates a machine's provisioning fields. The write is conditional on the
   * machine still existing, so a late update never resurrects a removed machine.
   */
  async updateMachine(
    model: string,
    id: string,
    changes: Partial<
      Pick<
        MachineRecord,
        'status' | 'message' | 'instanceId' | 'imageId' | 'zone' | 'instanceType' | 'hardware'
      >
    >,
    remove: ReadonlyArray<'instanceId' | 'imageId' | 'zone' | 'instanceType' | 'hardware'> = [],
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
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
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

  async queryAll(input: QueryCommandInput): Promise<Item[]> {
    return queryAll(this.doc, input, (units) => {
      this.consumedReadCapacity += units;
    });
  }
}
