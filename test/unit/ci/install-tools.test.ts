import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../../local/stack';

/**
 * .ci/install-tools on a machine it may not own: PATH is a directory of stubs
 * (`id` says the uid the case wants; `apt-get` refuses unless run as root or
 * through `sudo`, and "installs" a package by writing its stub; `sudo` exists
 * only where the case says) plus the few real tools the script uses.
 */
describe('.ci/install-tools', () => {
  let dir: string;
  let bin: string;
  let log: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'install-tools-'));
    bin = join(dir, 'bin');
    log = join(dir, 'apt.log');
    mkdirSync(bin);
    writeFileSync(log, '');
    for (const tool of ['bash', 'chmod', 'env', 'grep', 'sh', 'sleep', 'timeout']) {
      const real = spawnSync('sh', ['-c', `command -v ${tool}`], {
        encoding: 'utf8',
      }).stdout.trim();
      symlinkSync(real, join(bin, tool));
    }
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const stub = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  const CHROMIUM = 'echo "Chromium 156.0.8078.108 built on Debian GNU/Linux 12 (bookworm)"';
  const SNAP_STUB =
    'echo "Command \'/usr/bin/chromium-browser\' requires the chromium snap to be installed." >&2; exit 1';

  /** A machine: its uid, whether password-less sudo works, which packages apt-get can install (as what). */
  function machine(opts: { uid: number; sudo: boolean; packages: Record<string, string> }) {
    stub('id', `[ "$1" = -u ] && echo ${opts.uid}`);
    if (opts.sudo) stub('sudo', '[ "$1" = -n ] && shift; SUDO_USED=1 "$@"');
    const cases = Object.entries(opts.packages)
      .map(
        ([pkg, body]) =>
          `    ${pkg}) printf '%s\\n' '${body.replaceAll("'", "'\\''")}' > "${bin}/${pkg}"; chmod +x "${bin}/${pkg}";;`,
      )
      .join('\n');
    stub(
      'apt-get',
      [
        `echo "$(id -u) sudo=\${SUDO_USED:-0} $*" >> "${log}"`,
        'if [ "$(id -u)" != 0 ] && [ -z "$SUDO_USED" ]; then',
        '  echo "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)" >&2',
        '  exit 100',
        'fi',
        '[ "$1" = update ] && exit 0',
        'for last; do :; done',
        'case "$last" in',
        cases,
        '    *) echo "E: Unable to locate package $last" >&2; exit 100;;',
        'esac',
      ].join('\n'),
    );
  }

  function run(env: Record<string, string> = {}) {
    const out = spawnSync(join(PROJECT_ROOT, '.ci', 'install-tools'), [], {
      encoding: 'utf8',
      env: { PATH: bin, HOME: dir, ...env },
      timeout: 60_000,
    });
    return {
      status: out.status,
      stdout: out.stdout,
      stderr: out.stderr,
      apt: readFileSync(log, 'utf8').trim().split('\n').filter(Boolean),
    };
  }
  const withShebang = (body: string) => `#!/bin/sh\n${body}`;

  it('not root, no sudo, no tmux: stops CI saying tmux is required and why it was not installed, without calling apt-get', () => {
    machine({ uid: 1000, sudo: false, packages: { tmux: withShebang('exit 0') } });
    const r = run();
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      "== tmux is required (the CLI's terminal tests run in it) and could not be installed " +
        '(not root and no password-less sudo): install tmux, then run again',
    );
    expect(r.apt).toEqual([]);
    expect(existsSync(join(bin, 'tmux'))).toBe(false);
  });

  it('not root with password-less sudo: installs tmux and chromium through sudo -n', () => {
    machine({
      uid: 1000,
      sudo: true,
      packages: { tmux: withShebang('exit 0'), chromium: withShebang(CHROMIUM) },
    });
    const r = run();
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.apt).toEqual([
      '1000 sudo=1 update -qq',
      '1000 sudo=1 install -y -qq tmux',
      '1000 sudo=1 update -qq',
      '1000 sudo=1 install -y -qq chromium',
    ]);
    expect(r.stdout).not.toContain('no working chromium');
  });

  it('not root, no sudo, tmux there: goes on, saying the UI test will skip its browser pages', () => {
    machine({ uid: 1000, sudo: false, packages: {} });
    stub('tmux', 'exit 0');
    const r = run();
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      '== no working chromium (not root and no password-less sudo): the Temporal UI test skips its browser pages',
    );
    expect(r.apt).toEqual([]);
  });

  it("as root: apt-get directly; Ubuntu's snap stub chromium-browser is no browser, and CI goes on", () => {
    // Ubuntu: no `chromium` package, `chromium-browser` installs the snap's stub script
    machine({ uid: 0, sudo: false, packages: { 'chromium-browser': withShebang(SNAP_STUB) } });
    stub('tmux', 'exit 0');
    stub('chromium-browser', SNAP_STUB);
    const r = run();
    expect(r.status).toBe(0);
    expect(r.apt).toEqual([
      '0 sudo=0 update -qq',
      '0 sudo=0 install -y -qq chromium',
      '0 sudo=0 install -y -qq chromium-browser',
    ]);
    expect(r.stdout).toContain(
      '== no working chromium (apt-get could not install it): the Temporal UI test skips its browser pages',
    );
  });

  it('a working chromium and tmux: nothing installed, nothing said', () => {
    machine({ uid: 1000, sudo: false, packages: {} });
    stub('tmux', 'exit 0');
    stub('chromium', CHROMIUM);
    const r = run();
    expect([r.status, r.stdout, r.stderr, r.apt]).toEqual([0, '', '', []]);
  });

  it('a chromium whose --version never answers is given up on at the probe timeout, not waited for', () => {
    machine({ uid: 1000, sudo: false, packages: {} });
    stub('tmux', 'exit 0');
    // a wrapper that hangs (or waits for input that never comes)
    stub('chromium', 'exec sleep 600');
    const started = Date.now();
    const r = run({ CHROMIUM_PROBE_TIMEOUT: '2' });
    // without the bound the script hangs until spawnSync's 60 s kill (status null)
    expect(r.status).toBe(0);
    expect(Date.now() - started).toBeLessThan(45_000);
    expect(r.stdout).toContain(
      '== no working chromium (not root and no password-less sudo): the Temporal UI test skips its browser pages',
    );
  });

  it('.ci/run calls it before anything else is installed', () => {
    const ci = readFileSync(join(PROJECT_ROOT, '.ci', 'run'), 'utf8');
    expect(ci).toContain('\n.ci/install-tools\n');
    expect(ci.indexOf('.ci/install-tools')).toBeLessThan(ci.indexOf('npm ci'));
    expect(ci).not.toMatch(/^\s*apt-get/m);
  });
});
