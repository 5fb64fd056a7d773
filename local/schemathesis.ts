import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheDir, findPython, ToolchainError, withLock } from './toolchain';

const run = promisify(execFile);

/**
 * Schemathesis, the OpenAPI fuzzer the fault suite runs against the API
 * (issue 23), pinned and installed like moto: into its own venv in the
 * project's cache (`~/.cache/machine-provisioner`), under a lock, marked
 * complete by a stamp written last, so every clone and CI run on a machine
 * share one copy and a change of pin installs beside the old one. Not part
 * of `npm run toolchain`: only the suite that runs it pays for it.
 */
export const SCHEMATHESIS_VERSION = '4.32.5';

/** Installs Schemathesis if missing (idempotent, safe from two processes at once); returns its `st` command. */
export async function ensureSchemathesis(
  log: (line: string) => void = () => undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const dir = cacheDir(env);
  mkdirSync(dir, { recursive: true });
  const venv = join(dir, `venv-schemathesis-${SCHEMATHESIS_VERSION}`);
  const st = join(venv, 'bin', 'st');
  const stamp = join(venv, '.complete');
  return withLock(join(dir, 'schemathesis.lock'), async () => {
    if (existsSync(stamp) && existsSync(st)) return st;
    const python = await findPython(env);
    log(`installing Schemathesis ${SCHEMATHESIS_VERSION} into ${venv}`);
    // built in place (a venv's scripts hard-code its path); under the lock a half-built one is redone
    rmSync(venv, { recursive: true, force: true });
    try {
      await run(python, ['-m', 'venv', venv]);
      await run(
        join(venv, 'bin', 'python'),
        [
          '-m',
          'pip',
          'install',
          '--quiet',
          '--disable-pip-version-check',
          `schemathesis==${SCHEMATHESIS_VERSION}`,
        ],
        { maxBuffer: 64 * 1024 * 1024 },
      );
    } catch (err) {
      throw new ToolchainError(
        `pip could not install schemathesis into ${venv}: ${(err as Error).message}`,
      );
    }
    const { stdout } = await run(st, ['--version']);
    if (!stdout.includes(SCHEMATHESIS_VERSION)) {
      throw new ToolchainError(
        `installed Schemathesis reports "${stdout.trim()}", expected ${SCHEMATHESIS_VERSION}`,
      );
    }
    writeFileSync(stamp, `${stdout.trim()}\n`);
    return st;
  });
}
