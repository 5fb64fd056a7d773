import {
  applicationMachinesIndexPk,
  appSk,
  machineSk,
  MODEL_SK,
  MODELS_INDEX_PK,
  modelPk,
  relationSk,
  unitSk,
} from './keys';
import type {
  ApplicationRecord,
  MachineRecord,
  ModelRecord,
  RelationRecord,
  UnitRecord,
} from './types';

/**
 * The entities' items: each record's key, the item written for it, and the
 * record read back from an item (only the record's own fields, with the
 * defaults an item written before a field existed lacks).
 */

export type Item = Record<string, unknown>;
export type Key = { pk: string; sk: string };

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
  'modelUid',
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

/** A new model's item: listed in gsi1 under MODELS; its machine counter starts at 0. */
export function modelItem(model: ModelRecord): Item {
  return {
    ...modelKey(model.name),
    type: 'model',
    gsi1pk: MODELS_INDEX_PK,
    gsi1sk: model.name,
    nextMachine: 0,
    ...model,
  };
}

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
