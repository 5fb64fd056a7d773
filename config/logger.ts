import { Logger } from '@aws-lambda-powertools/logger';
import type { LogItemExtraInput, LogItemMessage } from '@aws-lambda-powertools/logger/types';
import { AsyncLocalStorage } from 'node:async_hooks';
import { API_SERVICE } from './metrics';

/**
 * The running request's own logger (a child of the module's), if any. Module
 * state, not a field: Logger's constructor may log (sampling) before a
 * subclass's fields exist.
 */
const scope = new AsyncLocalStorage<Logger>();

/**
 * The Powertools Logger, with keys per request: `runScoped` runs a request
 * with a child logger of its own (AsyncLocalStorage), and every call on this
 * logger made inside it (from the handler, service code, anything awaited)
 * goes to that child. In Lambda a process runs one request at a time, so
 * this changes nothing there; the local API server runs many at once in one
 * process, where shared keys would put one request's id on another's lines.
 * Outside a request the logger is itself.
 */
export class RequestScopedLogger extends Logger {
  /** Runs `work` with a logger of its own: its keys are seen by its lines only, and go with it. */
  runScoped<T>(work: () => T): T {
    return scope.run(this.createChild(), work);
  }

  override appendKeys(attributes: Parameters<Logger['appendKeys']>[0]): void {
    const scoped = scope.getStore();
    if (scoped) scoped.appendKeys(attributes);
    else super.appendKeys(attributes);
  }

  override resetKeys(): void {
    const scoped = scope.getStore();
    if (scoped) scoped.resetKeys();
    else super.resetKeys();
  }

  override addContext(context: Parameters<Logger['addContext']>[0]): void {
    const scoped = scope.getStore();
    if (scoped) scoped.addContext(context);
    else super.addContext(context);
  }

  override trace(input: LogItemMessage, ...extraInput: LogItemExtraInput): void {
    const scoped = scope.getStore();
    if (scoped) scoped.trace(input, ...extraInput);
    else super.trace(input, ...extraInput);
  }

  override debug(input: LogItemMessage, ...extraInput: LogItemExtraInput): void {
    const scoped = scope.getStore();
    if (scoped) scoped.debug(input, ...extraInput);
    else super.debug(input, ...extraInput);
  }

  override info(input: LogItemMessage, ...extraInput: LogItemExtraInput): void {
    const scoped = scope.getStore();
    if (scoped) scoped.info(input, ...extraInput);
    else super.info(input, ...extraInput);
  }

  override warn(input: LogItemMessage, ...extraInput: LogItemExtraInput): void {
    const scoped = scope.getStore();
    if (scoped) scoped.warn(input, ...extraInput);
    else super.warn(input, ...extraInput);
  }

  override error(input: LogItemMessage, ...extraInput: LogItemExtraInput): void {
    const scoped = scope.getStore();
    if (scoped) scoped.error(input, ...extraInput);
    else super.error(input, ...extraInput);
  }

  override critical(input: LogItemMessage, ...extraInput: LogItemExtraInput): void {
    const scoped = scope.getStore();
    if (scoped) scoped.critical(input, ...extraInput);
    else super.critical(input, ...extraInput);
  }
}

/** The API's structured logger (fixed keys: model, machineId, instanceId, zone, attempt). */
export const logger = new RequestScopedLogger({ serviceName: API_SERVICE });
