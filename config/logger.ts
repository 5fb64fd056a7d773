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
 * Whether this process is a Lambda execution environment (the runtime sets
 * the function's name), which runs one request at a time.
 */
export function inLambda(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.AWS_LAMBDA_FUNCTION_NAME ?? '') !== '';
}

/**
 * The Powertools Logger, with keys per request. In Lambda (`inLambda`) a
 * process runs one request at a time and `runScoped` runs it on this logger
 * itself, as Powertools means it to be used: its `cold_start` is true on the
 * process's first request only (a child logger is a new Powertools utility,
 * whose every `addContext` would say `cold_start: true`). The local API
 * server runs many requests at once in one process, where shared keys would
 * put one request's id on another's lines: there `runScoped` runs each with
 * a child logger of its own (AsyncLocalStorage), and every call on this
 * logger made inside it (from the handler, service code, anything awaited)
 * goes to that child. Outside a request the logger is itself.
 */
export class RequestScopedLogger extends Logger {
  /** Runs `work` with this request's logger: its keys are seen by its lines only (cleared by the caller). */
  runScoped<T>(work: () => T): T {
    if (inLambda()) return work();
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
