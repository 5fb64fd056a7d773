import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Single-quoted for sh: nothing in it is expanded. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * A terminal a person types into: one command run in a private tmux server
 * (its own socket under `dir`, never the user's), keys sent with send-keys,
 * the screen read with capture-pane. The command's exit code is printed on
 * the screen after it, as `[exit N]`, and the pane stays until `close`.
 */
export class Terminal {
  private readonly socket: string;
  private readonly session: string;

  constructor(dir: string, name: string) {
    this.socket = join(dir, `tmux-${name}`);
    this.session = name;
  }

  private tmux(...args: string[]) {
    return exec('tmux', ['-S', this.socket, ...args], { timeout: 30_000 });
  }

  /** Starts `argv` in `cwd` with exactly `env` (plus TERM), in a 200×50 terminal (or `columns` wide). */
  async start(
    argv: string[],
    env: Record<string, string>,
    cwd: string,
    columns = 200,
  ): Promise<void> {
    const vars = Object.entries({ ...env, TERM: 'xterm' }).map(([k, v]) => `${k}=${shellQuote(v)}`);
    const command = `cd ${shellQuote(cwd)} && env -i ${vars.join(' ')} ${argv
      .map(shellQuote)
      .join(' ')}; echo "[exit $?]"; sleep 600`;
    await this.tmux(
      'new-session',
      '-d',
      '-s',
      this.session,
      '-x',
      String(columns),
      '-y',
      '50',
      'sh',
      '-c',
      command,
    );
  }

  /** Types `text` literally, then Enter. */
  async type(text: string): Promise<void> {
    await this.tmux('send-keys', '-t', this.session, '-l', text);
    await this.tmux('send-keys', '-t', this.session, 'Enter');
  }

  /** Everything on the screen and in its scrollback, wrapped lines joined, trailing blanks dropped. */
  async screen(): Promise<string> {
    const { stdout } = await this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', this.session);
    return stdout.replace(/\s+$/, '');
  }

  /** Polls the screen until it matches (generous bound: the machine is shared). */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = await this.screen();
      if (pattern.test(screen)) return screen;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${String(pattern)}; the screen:\n${screen}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Waits for the command to end; its exit code and the screen without the `[exit N]` line. */
  async finished(timeoutMs = 60_000): Promise<{ code: number; screen: string }> {
    const screen = await this.waitFor(/\[exit \d+\]$/, timeoutMs);
    const code = Number(/\[exit (\d+)\]$/.exec(screen)![1]);
    return { code, screen: screen.replace(/\n?\[exit \d+\]$/, '') };
  }

  async close(): Promise<void> {
    await this.tmux('kill-server').catch(() => undefined);
  }
}

/** The CLI as a person runs it (the package's bin). */
export const CLI_BIN = resolve(__dirname, '../../cli/bin.js');

/**
 * The terminals one test file opens, each running the CLI with its own tmux
 * server under `home` (named `prefix` and a number); `closeAll` in afterAll.
 */
export class CliTerminals {
  private readonly opened: Terminal[] = [];

  constructor(
    private readonly home: string,
    private readonly prefix: string,
  ) {}

  /** Starts `cli args` at a terminal of its own, with exactly `env`, in `cwd`. */
  async open(
    args: string[],
    env: Record<string, string>,
    cwd: string,
    columns?: number,
  ): Promise<Terminal> {
    const t = new Terminal(this.home, `${this.prefix}${this.opened.length}`);
    this.opened.push(t);
    await t.start([process.execPath, CLI_BIN, ...args], env, cwd, columns);
    return t;
  }

  async closeAll(): Promise<void> {
    for (const t of this.opened) await t.close();
  }
}

/**
 * A private home for a CLI test file (under the OS's temp directory), with a
 * `work` directory to run in and the environment a user of the test stack
 * has: its API, the admin token and `model` as the current model.
 */
export function cliHome(
  prefix: string,
  stack: { apiUrl: string; token: string },
  model: string,
): { home: string; workdir: string; env: () => Record<string, string> } {
  const home = mkdtempSync(join(tmpdir(), prefix));
  const workdir = join(home, 'work');
  mkdirSync(workdir);
  const env = (): Record<string, string> => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    PROVISIONER_CONFIG_DIR: join(home, 'config'),
    PROVISIONER_API_URL: stack.apiUrl,
    PROVISIONER_API_TOKEN: stack.token,
    PROVISIONER_MODEL: model,
  });
  return { home, workdir, env };
}
