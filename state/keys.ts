/**
 * Key layout of the single table (documented in state/README.md). Everything
 * of one model lives in one partition, so a model's status is one Query.
 */
export const modelPk = (model: string): string => `MODEL#${model}`;
export const MODEL_SK = '#MODEL';
export const MODELS_INDEX_PK = 'MODELS';
export const machineSk = (id: string): string => `MACHINE#${id}`;
export const MACHINE_SK_PREFIX = 'MACHINE#';
export const counterSk = (name: string): string => `#COUNTER#${name}`;
export const machineStatusIndexPk = (model: string, status: string): string =>
  `MODEL#${model}#STATUS#${status}`;
