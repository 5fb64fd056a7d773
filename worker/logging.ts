import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';

/**
 * The worker's logger: the Powertools Logger (one JSON line per entry, the
 * same shape as the Lambdas'), behind Temporal's Logger interface so that
 * the SDK's own lines, the workflows' `log` and the activities' `log` (with
 * their workflow, run and activity ids) all go through it once it is the
 * Runtime's logger (worker/telemetry.ts).
 */
export class WorkerLogger implements Logger {
  constructor(
    readonly powertools: PowertoolsLogger = new PowertoolsLogger({
      serviceName: 'provisioner-worker',
    }),
  ) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    const attrs = meta ?? {};
    switch (level) {
      case 'TRACE':
      case 'DEBUG':
        this.powertools.debug(message, attrs);
        break;
      case 'INFO':
        this.powertools.info(message, attrs);
        break;
      case 'WARN':
        this.powertools.warn(message, attrs);
        break;
      default:
        this.powertools.error(message, attrs);
    }
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }

  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }

  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }

  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }

  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

/** The worker process's logger. */
export const workerLogger = new WorkerLogger();
