import { parseArgs as tokenize } from 'node:util';
import { parseStarvation, type Starvation } from './starve';

/** Command line of `npm run bench`. */
export interface BenchArgs {
  sizes: number[];
  /** Bound on the wait for one size's machines, after the request. */
  timeoutMs: number;
  /** Bound on the single `count: N` request before falling back to several. */
  requestTimeoutMs: number;
  /** Skip the bare-SDK floor (its figures then show as —). */
  floor: boolean;
  /** The launch phase (floor and provisioner); off with `--removal-only`. */
  launch: boolean;
  /** The removal phase (N units deployed, then destroy-model); off with `--no-removal`. */
  removal: boolean;
  /**
   * The launch phase's destroy-model once every machine runs (issue 30's
   * figures); off with `--no-destroy`, for runs that measure the launch alone
   * (its CPU figures are taken before it: a CPU A/B run is shorter without it).
   */
  destroy: boolean;
  /** Worker processes on each size's stack, all polling the one task queue. */
  workers: number;
  /** Profile the workers' CPU (`node --cpu-prof`) and print where the launch phase's time went. */
  cpuProfile: boolean;
  /** Keep the DynamoDB totals by call site too, and print them (a few µs per call, so on request). */
  ddbCallers: boolean;
  /**
   * Node options added to each worker process's command line, before its
   * entry point, e.g. `--max-semi-space-size=64` to measure a young
   * generation size; repeatable.
   */
  workerNodeOptions: string[];
  /** `--starve-worker STOP/RUN`: the workers pulsed stopped and running in the launch phase (bench/starve.ts). */
  starveWorker?: Starvation;
}

export const USAGE = `npm run bench -- [--sizes 100,300,1000] [--timeout-min 15] [--request-timeout-s 60] [--no-floor] [--no-removal | --removal-only] [--no-destroy] [--workers 1] [--cpu-prof] [--ddb-callers] [--worker-node-option=--flag=value ...] [--starve-worker 0.3/0.05]`;

export class BenchArgsError extends Error {
  override readonly name = 'BenchArgsError';
}

function positiveNumber(flag: string, text: string | undefined): number {
  const v = Number(text);
  if (text === undefined || !Number.isFinite(v) || v <= 0) {
    throw new BenchArgsError(`${flag} needs a positive number, got ${String(text)}`);
  }
  return v;
}

/** The flags; each is applied in the order given (a later one may undo an earlier). */
const OPTIONS = {
  sizes: { type: 'string' },
  'timeout-min': { type: 'string' },
  'request-timeout-s': { type: 'string' },
  'no-floor': { type: 'boolean' },
  'no-removal': { type: 'boolean' },
  'no-destroy': { type: 'boolean' },
  'removal-only': { type: 'boolean' },
  workers: { type: 'string' },
  'cpu-prof': { type: 'boolean' },
  'ddb-callers': { type: 'boolean' },
  'worker-node-option': { type: 'string' },
  'starve-worker': { type: 'string' },
} as const;

/**
 * `node:util`'s parseArgs reads the flags (`--x v` and `--x=v` alike); it
 * runs non-strict so the checks and messages stay the bench's own, and in
 * tokens so the flags apply in order.
 */
export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = {
    sizes: [100, 300, 1000],
    timeoutMs: 15 * 60_000,
    requestTimeoutMs: 60_000,
    floor: true,
    launch: true,
    removal: true,
    destroy: true,
    workers: 1,
    cpuProfile: false,
    ddbCallers: false,
    workerNodeOptions: [],
  };
  const { tokens } = tokenize({
    args: [...argv],
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    const name = token.kind === 'option' ? token.name : undefined;
    const value = token.kind === 'option' ? token.value : undefined;
    switch (name) {
      case 'sizes': {
        const text = value ?? '';
        const sizes = text.split(',').map((s) => Number(s.trim()));
        if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 1000)) {
          throw new BenchArgsError(`--sizes takes whole numbers from 1 to 1000, got "${text}"`);
        }
        args.sizes = sizes;
        break;
      }
      case 'timeout-min':
        args.timeoutMs = positiveNumber('--timeout-min', value) * 60_000;
        break;
      case 'request-timeout-s':
        args.requestTimeoutMs = positiveNumber('--request-timeout-s', value) * 1000;
        break;
      case 'no-floor':
        args.floor = false;
        break;
      case 'no-removal':
        args.removal = false;
        break;
      case 'no-destroy':
        args.destroy = false;
        break;
      case 'workers': {
        const k = Number(value);
        if (!Number.isInteger(k) || k < 1 || k > 8) {
          throw new BenchArgsError(
            `--workers takes a whole number from 1 to 8, got ${String(value)}`,
          );
        }
        args.workers = k;
        break;
      }
      case 'cpu-prof':
        args.cpuProfile = true;
        break;
      case 'ddb-callers':
        args.ddbCallers = true;
        break;
      case 'worker-node-option': {
        // only Node's own flags: a value not starting with "--" would become the worker's entry point
        if (value === undefined || !/^--[a-z]/.test(value)) {
          throw new BenchArgsError(
            `--worker-node-option takes one Node option starting with "--" (write --worker-node-option=--flag=value), got ${String(value)}`,
          );
        }
        args.workerNodeOptions.push(value);
        break;
      }
      case 'starve-worker': {
        const starvation = parseStarvation(value);
        if (typeof starvation === 'string') throw new BenchArgsError(starvation);
        args.starveWorker = starvation;
        break;
      }
      case 'removal-only':
        args.launch = false;
        args.floor = false;
        args.removal = true;
        break;
      default:
        // a flag not listed, a short one, a positional, or `--`: named as it was typed
        throw new BenchArgsError(`unknown argument "${argv[token.index] ?? ''}"; usage: ${USAGE}`);
    }
  }
  if (!args.destroy && args.removal) {
    // the removal phase would run on a stack still holding the launch's machines (cached,
    // swept on every pass): its figures would be measured on a different system
    throw new BenchArgsError(
      "--no-destroy needs --no-removal: it leaves the launch's machines running, under the removal phase's figures",
    );
  }
  return args;
}
