import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { EntityConflictError, EntityNotFoundError } from './errors';
import {
  MACHINE_SK_PREFIX,
  MODELS_INDEX_PK,
  MODEL_SK,
  machineSk,
  machineStatusIndexPk,
  modelPk,
} from './keys';
import type { MachineRecord, MachineStatus, ModelRecord } from './types';

type Item = Record<string, unknown>;

const MODEL_FIELDS = ['name', 'region', 'constraints', 'harvestMode', 'life', 'createdAt'] as const;
const MACHINE_FIELDS = [
  'model',
  'id',
  'base',
  'constraints',
  'placement',
  'life',
  'status',
  'message',
  'instanceId',
  'imageId',
  'zone',
  'instanceType',
  'hardware',
  'createdAt',
  'updatedAt',
] as const;

function pick<T>(item: Item, fields: readonly string[]): T {
  const out: Item = {};
  for (const f of fields) if (item[f] !== undefined) out[f] = item[f];
  return out as T;
}

/** The most items one DynamoDB transaction may hold. */
const TRANSACTION_LIMIT = 100;

export function machineItem(m: MachineRecord): Item {
  return {
    pk: modelPk(m.model),
    sk: machineSk(m.id),
    type: 'machine',
    gsi2pk: machineStatusIndexPk(m.model, m.status),
    gsi2sk: m.id,
    ...m,
  };
}

export class Repository {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  async createModel(model: ModelRecord): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: modelPk(model.name),
            sk: MODEL_SK,
            type: 'model',
            gsi1pk: MODELS_INDEX_PK,
            gsi1sk: model.name,
            nextMachine: 0,
            ...model,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new EntityConflictError(`model "${model.name}" already exists`);
      }
      throw err;
    }
  }

  async getModel(name: string): Promise<ModelRecord> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(name), sk: MODEL_SK },
        ConsistentRead: true,
      }),
    );
    if (!out.Item) throw new EntityNotFoundError(`model "${name}" not found`);
    return pick<ModelRecord>(out.Item, MODEL_FIELDS);
  }

  async listModels(): Promise<ModelRecord[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': MODELS_INDEX_PK },
    });
    return items.map((i) => pick<ModelRecord>(i, MODEL_FIELDS));
  }

  /**
   * Reserves `count` new machine ids from the model's counter. The counter
   * lives on the model item, so the increment also proves the model exists and
   * is alive; ids are never reused (a failed request leaves a gap, not a reuse).
   */
  async allocateMachineIds(model: string, count: number): Promise<string[]> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: MODEL_SK },
          UpdateExpression: 'SET nextMachine = if_not_exists(nextMachine, :zero) + :n',
          ConditionExpression: 'attribute_exists(pk) AND life = :alive',
          ExpressionAttributeValues: { ':zero': 0, ':n': count, ':alive': 'alive' },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      const next = Number(out.Attributes?.nextMachine);
      return Array.from({ length: count }, (_, i) => String(next - count + i));
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        await this.getModel(model); // throws not-found when absent
        throw new EntityConflictError(`model "${model}" is being destroyed`);
      }
      throw err;
    }
  }

  /** Writes new machines all or nothing (per transaction of up to 99), only while the model is alive. */
  async putNewMachines(machines: MachineRecord[]): Promise<void> {
    const first = machines[0];
    if (!first) return;
    for (let i = 0; i < machines.length; i += TRANSACTION_LIMIT - 1) {
      const chunk = machines.slice(i, i + TRANSACTION_LIMIT - 1);
      try {
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                ConditionCheck: {
                  TableName: this.tableName,
                  Key: { pk: modelPk(first.model), sk: MODEL_SK },
                  ConditionExpression: 'life = :alive',
                  ExpressionAttributeValues: { ':alive': 'alive' },
                },
              },
              ...chunk.map((m) => ({
                Put: {
                  TableName: this.tableName,
                  Item: machineItem(m),
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              })),
            ],
          }),
        );
      } catch (err) {
        if (err instanceof TransactionCanceledException) {
          throw new EntityConflictError(`model "${first.model}" is being destroyed`);
        }
        throw err;
      }
    }
  }

  async getMachine(model: string, id: string): Promise<MachineRecord> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: modelPk(model), sk: machineSk(id) },
        ConsistentRead: true,
      }),
    );
    if (!out.Item) throw new EntityNotFoundError(`machine ${id} not found`);
    return pick<MachineRecord>(out.Item, MACHINE_FIELDS);
  }

  async listMachines(model: string): Promise<MachineRecord[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': modelPk(model), ':prefix': MACHINE_SK_PREFIX },
      ConsistentRead: true,
    });
    return items.map((i) => pick<MachineRecord>(i, MACHINE_FIELDS));
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
    if (changes.status !== undefined) {
      sets.push('gsi2pk = :gsi2pk');
      values[':gsi2pk'] = machineStatusIndexPk(model, changes.status);
    }
    for (const k of remove) names[`#${k}`] = k;
    const removeClause = remove.length ? ` REMOVE ${remove.map((k) => `#${k}`).join(', ')}` : '';
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: modelPk(model), sk: machineSk(id) },
          UpdateExpression: `SET ${sets.join(', ')}${removeClause}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return pick<MachineRecord>(out.Attributes ?? {}, MACHINE_FIELDS);
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException)
        throw new EntityNotFoundError(`machine ${id} not found`);
      throw err;
    }
  }

  async machinesWithStatus(model: string, status: MachineStatus): Promise<string[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :pk',
      ExpressionAttributeValues: { ':pk': machineStatusIndexPk(model, status) },
    });
    return items.map((i) => String(i.gsi2sk));
  }

  private async queryAll(input: QueryCommandInput): Promise<Item[]> {
    const items: Item[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
      items.push(...((out.Items ?? []) as Item[]));
      start = out.LastEvaluatedKey;
    } while (start);
    return items;
  }
}
