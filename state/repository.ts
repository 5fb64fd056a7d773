import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient, QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import * as counters from './counters';
import type { Item } from './items';
import * as machines from './machines';
import * as models from './models';
import { ProvisioningStore } from './provisioning';
import * as reads from './reads';
import {
  commitTransaction,
  documentClient,
  queryAll,
  Transaction,
  type TableAccess,
} from './table';
import type {
  ApplicationRecord,
  MachineRecord,
  ModelRecord,
  RelationRecord,
  UnitRecord,
} from './types';
import { ZoneCountStore, type Regroup } from './zone-counts';

// Names that lived here before the split; importers keep this path. The item
// codecs are in items.ts, the machine chunks in machines.ts, the transaction
// helpers in table.ts.
export {
  appItem,
  appKey,
  machineItem,
  machineKey,
  modelKey,
  relationItem,
  toApplication,
  toMachine,
  toModel,
  toRelation,
  toUnit,
  unitItem,
  unitKey,
} from './items';
export { machineWriteChunks, MACHINES_PER_TRANSACTION } from './machines';
export type { ModelContents } from './reads';
export { Transaction, TRANSACTION_LIMIT } from './table';

/**
 * The API side's one handle on the table: every service call goes through
 * it. Each operation lives with its policy (models.ts: the model item;
 * counters.ts: id reservations; reads.ts: reads of a model's entities;
 * machines.ts: the machine writes it makes itself; items.ts: the items);
 * this class hands them itself as their TableAccess, so its read-capacity
 * count and a subclass's `commit` (the tests' races) see every call.
 */
export class Repository implements TableAccess {
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

  async queryAll(input: QueryCommandInput): Promise<Item[]> {
    return queryAll(this.doc, input, (units) => {
      this.consumedReadCapacity += units;
    });
  }

  // ---- models (models.ts)

  /**
   * Records a new model; `alongside` (e.g. its first grants, state/access.ts)
   * is written in the same transaction, so a model never exists without them.
   */
  createModel(model: ModelRecord, alongside: ReadonlyArray<Item> = []): Promise<void> {
    return models.createModel(this, model, alongside);
  }

  getModel(name: string): Promise<ModelRecord> {
    return models.getModel(this, name);
  }

  /** The model if it exists and is alive; a dying model is as good as gone for new work. */
  getLiveModel(name: string): Promise<ModelRecord> {
    return models.getLiveModel(this, name);
  }

  listModels(): Promise<ModelRecord[]> {
    return models.listModels(this);
  }

  setModelConstraints(name: string, constraints: string): Promise<void> {
    return models.setModelConstraints(this, name, constraints);
  }

  /** Changes a live model's settings; returns the model as written. */
  updateModelSettings(
    name: string,
    settings: Partial<Pick<ModelRecord, 'harvestMode' | 'reprovisionLost'>>,
  ): Promise<ModelRecord> {
    return models.updateModelSettings(this, name, settings);
  }

  markModelDying(name: string): Promise<void> {
    return models.markModelDying(this, name);
  }

  /**
   * Removes a Dying model once no entity is left in its partition (its
   * `#`-keyed bookkeeping goes with it): the same rule the workflow applies
   * when it removes a model's last machine. Returns whether it was removed.
   */
  async removeModelIfEmpty(name: string): Promise<boolean> {
    return new ProvisioningStore(this.client, this.tableName).removeModelIfDyingAndEmpty(name);
  }

  // ---- zone counts (zone-counts.ts)

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

  // ---- id counters (counters.ts)

  /**
   * Reserves `count` new machine ids from the model's counter (it must exist
   * and be alive); ids are never reused.
   */
  allocateMachineIds(model: string, count: number): Promise<string[]> {
    return counters.allocateMachineIds(this, model, count);
  }

  /** Reserves `count` unit numbers from the application's counter (it must exist and be alive). */
  allocateUnitNumbers(model: string, app: string, count: number): Promise<number[]> {
    return counters.allocateUnitNumbers(this, model, app, count);
  }

  /** The number the application's next unit gets (a read: plans name units with it). */
  nextUnitNumber(model: string, app: string): Promise<number> {
    return counters.nextUnitNumber(this, model, app);
  }

  /** Reserves `count` container ids from the host machine's counter. */
  allocateContainerIds(model: string, host: string, count: number): Promise<string[]> {
    return counters.allocateContainerIds(this, model, host, count);
  }

  // ---- reads (reads.ts)

  loadModel(name: string): Promise<reads.ModelContents> {
    return reads.loadModel(this, name);
  }

  getApplication(model: string, app: string): Promise<ApplicationRecord> {
    return reads.getApplication(this, model, app);
  }

  getUnit(model: string, unit: string): Promise<UnitRecord> {
    return reads.getUnit(this, model, unit);
  }

  listUnits(model: string, app: string): Promise<UnitRecord[]> {
    return reads.listUnits(this, model, app);
  }

  listRelations(model: string): Promise<RelationRecord[]> {
    return reads.listRelations(this, model);
  }

  /** The machines hosting principal units of an application (gsi1; eventually consistent). */
  machinesOfApplication(model: string, app: string): Promise<string[]> {
    return reads.machinesOfApplication(this, model, app);
  }

  /** The machine that records `instanceId` (byInstance; eventually consistent), hosts only. */
  machineByInstance(instanceId: string): Promise<{ model: string; machineId: string } | undefined> {
    return reads.machineByInstance(this, instanceId);
  }

  getMachine(model: string, id: string): Promise<MachineRecord> {
    return reads.getMachine(this, model, id);
  }

  listMachines(model: string): Promise<MachineRecord[]> {
    return reads.listMachines(this, model);
  }

  // ---- machine writes (machines.ts)

  /** Writes new machines all or nothing per transaction, a host with its containers, while the model is alive. */
  putNewMachines(machineRecords: MachineRecord[]): Promise<void> {
    return machines.putNewMachines(this, machineRecords);
  }

  /** Updates a machine's provisioning fields, only while the machine exists. */
  updateMachine(
    model: string,
    id: string,
    changes: machines.MachineChanges,
    remove: readonly machines.RemovableMachineField[] = [],
  ): Promise<MachineRecord> {
    return machines.updateMachine(this, model, id, changes, remove);
  }
}
