import { Logger } from '@aws-lambda-powertools/logger';
import { API_SERVICE } from './metrics';

/** The API's structured logger (fixed keys: model, machineId, instanceId, zone, attempt). */
export const logger = new Logger({ serviceName: API_SERVICE });
