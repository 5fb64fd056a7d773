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
  /** Worker processes on each size's stack, all polling the one task queue. */
  workers: number;
  /** Profile the workers' CPU (`node --cpu-prof`) and print where the launch phase's time went. */
  cpuProfile: boolean;
}

export const USAGE = `npm run bench -- [--sizes 100,300,1000] [--timeout-min 15] [--request-timeout-s 60] [--no-floor] [--no-removal | --removal-only] [--workers 1] [--cpu-prof]`;

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

export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = {
    sizes: [100, 300, 1000],
    timeoutMs: 15 * 60_000,
    requestTimeoutMs: 60_000,
    floor: true,
    launch: true,
    removal: true,
    workers: 1,
    cpuProfile: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] ?? '';
    const [name, inline] = flag.includes('=') ? flag.split('=', 2) : [flag, undefined];
    const value = () => inline ?? argv[++i];
    switch (name) {
      case '--sizes': {
        const text = value() ?? '';
        const sizes = text.split(',').map((s) => Number(s.trim()));
        if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 1000)) {
          throw new BenchArgsError(`--sizes takes whole numbers from 1 to 1000, got "${text}"`);
        }
        args.sizes = sizes;
        break;
      }
      case '--timeout-min':
        args.timeoutMs = positiveNumber(name, value()) * 60_000;
        break;
      case '--request-timeout-s':
        args.requestTimeoutMs = positiveNumber(name, value()) * 1000;
        break;
      case '--no-floor':
        args.floor = false;
        break;
      case '--no-removal':
        args.removal = false;
        break;
      case '--workers': {
        const text = value();
        const k = Number(text);
        if (!Number.isInteger(k) || k < 1 || k > 8) {
          throw new BenchArgsError(
            `--workers takes a whole number from 1 to 8, got ${String(text)}`,
          );
        }
        args.workers = k;
        break;
      }
      case '--cpu-prof':
        args.cpuProfile = true;
        break;
      case '--removal-only':
        args.launch = false;
        args.floor = false;
        args.removal = true;
        break;
      default:
        throw new BenchArgsError(`unknown argument "${flag}"; usage: ${USAGE}`);
    }
  }
  return args;
}
