import { Logger } from '@aws-lambda-powertools/logger';

/** The API's structured logger (fixed keys: model, machineId, instanceId, zone, attempt). */
export const logger = new Logger({ serviceName: 'provisioner-api' });
