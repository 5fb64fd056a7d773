/**
 * Key layout of the single table (documented in state/README.md). Everything
 * of one model lives in one partition, so a model's status is one Query.
 */
export const modelPk = (model: string): string => `MODEL#${model}`;
export const MODEL_SK = '#MODEL';
export const MODELS_INDEX_PK = 'MODELS';
export const machineSk = (id: string): string => `MACHINE#${id}`;
export const MACHINE_SK_PREFIX = 'MACHINE#';
export const appSk = (app: string): string => `APP#${app}`;
export const APP_SK_PREFIX = 'APP#';
export const unitSk = (unit: string): string => `UNIT#${unit}`;
export const UNIT_SK_PREFIX = 'UNIT#';
export const relationSk = (a: string, b: string): string => `REL#${a}#${b}`;
export const RELATION_SK_PREFIX = 'REL#';
export const counterSk = (name: string): string => `#COUNTER#${name}`;
/** gsi1 on principal units: the machines hosting an application's units (its distribution group). */
export const applicationMachinesIndexPk = (model: string, app: string): string =>
  `MODEL#${model}#APP#${app}`;
