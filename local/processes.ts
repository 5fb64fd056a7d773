import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { dirname } from 'node:path';

/** A child process in its own process group, so stopping it stops whatever it started too. */
export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  logFile: string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string | null>;
  stop(timeoutMs?: number): Promise<void>;
  /** Sends `signal` to the whole group at once (a crash, for fault tests) and waits until it is gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

export function spawnManaged(
  name: string,
  command: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; logFile: string },
): ManagedProcess {
  mkdirSync(dirname(opts.logFile), { recursive: true });
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  let done = false;
  const exited = new Promise<number | string | null>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      resolve(code ?? signal);
    });
    child.once('error', (err) => {
      log.write(`failed to start ${command}: ${err.message}\n`);
      done = true;
      resolve(null);
    });
  });
  void exited.then(() => log.end());

  const signalGroup = (signal: NodeJS.Signals) => {
    if (done || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };

  return {
    name,
    child,
    logFile: opts.logFile,
    exited,
    async kill(signal) {
      signalGroup(signal);
      await exited;
    },
    async stop(timeoutMs = 10_000) {
      if (done) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
      // whatever the leader left behind in its group goes too
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // nothing left
        }
      }
    },
  };
}

/** The last lines of a log, for error messages that say why a service did not come up. */
export function logTail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Ports this process handed out: the kernel may offer a just-closed port again before its user binds it. */
const handedOut = new Set<number>();

export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, host, () => {
        const address = server.address();
        const p = typeof address === 'object' && address ? address.port : 0;
        server.close(() => resolve(p));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
}

/** Fails with a message naming the port and the variable that moves it. */
export async function assertPortFree(
  port: number,
  what: string,
  envVar?: string,
  host = '127.0.0.1',
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      const hint = envVar ? `; set ${envVar} to use another port` : '';
      reject(
        err.code === 'EADDRINUSE'
          ? new PortInUseError(`port ${port} (${what}) is already in use on ${host}${hint}`)
          : err,
      );
    });
    server.listen(port, host, () => server.close(() => resolve()));
  });
}

export async function tcpReachable(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.connect(port, host);
  });
}

/**
 * Polls `check` until it returns true; fails early if the process exits, and
 * with the log's tail on timeout, so a broken service says why.
 */
export async function waitUntilHealthy(
  proc: ManagedProcess | undefined,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | string | null | undefined;
  void proc?.exited.then((code) => {
    exited = code;
  });
  for (;;) {
    if (exited !== undefined) {
      throw new Error(
        `${what} exited (${String(exited)}) before it was ready; its log ${proc?.logFile} ends:\n${logTail(proc?.logFile ?? '')}`,
      );
    }
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${what} was not ready after ${timeoutMs / 1000}s; its log ${proc?.logFile} ends:\n${logTail(proc?.logFile ?? '')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
