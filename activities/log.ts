import { Context, log } from '@temporalio/activity';

type Attrs = Record<string, unknown>;

function inActivity(): boolean {
  try {
    Context.current();
    return true;
  } catch {
    return false;
  }
}

function write(level: 'debug' | 'info' | 'warn' | 'error', message: string, attrs: Attrs): void {
  if (inActivity()) {
    // Temporal's activity logger: the worker's Runtime.logger gets the line with the
    // workflow's and the activity's ids (worker/logging.ts writes it as JSON)
    log[level](message, attrs);
    return;
  }
  // called outside an activity (a unit test, a worker-level helper): one JSON line
  const line = JSON.stringify({ level, message, ...attrs });
  if (level === 'debug') console.debug(line);
  else if (level === 'info') console.log(line);
  else if (level === 'warn') console.warn(line);
  else console.error(line);
}

/**
 * The activities' logger: Temporal's activity `log` when running as an
 * activity (its lines keep the workflow and activity ids), a JSON line on
 * the console otherwise. Attributes use the house keys (`model`,
 * `machineId`, `instanceId`, `zone`, `attempt`).
 */
export const activityLog = {
  /** What the worker's log level (info in every environment) leaves out: per-machine detail under load. */
  debug: (message: string, attrs: Attrs = {}): void => write('debug', message, attrs),
  info: (message: string, attrs: Attrs = {}): void => write('info', message, attrs),
  warn: (message: string, attrs: Attrs = {}): void => write('warn', message, attrs),
  error: (message: string, attrs: Attrs = {}): void => write('error', message, attrs),
};
