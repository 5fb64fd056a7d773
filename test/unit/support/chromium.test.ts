import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumPath } from '../../integration/chromium';

/**
 * How the Temporal UI test finds its browser (test/integration/chromium.ts):
 * only one that runs. Each case puts scripts named like the browsers in a
 * directory that is the whole PATH, besides one holding only `sh` (/bin is
 * /usr/bin on a merged-/usr system, where a real chromium may be).
 */
describe('chromiumPath', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'chromium-path-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const script = (name: string, body: string) => {
    mkdirSync(join(dir, 'browsers'), { recursive: true });
    writeFileSync(join(dir, 'browsers', name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, 'browsers', name), 0o755);
  };
  const env = () => {
    const shell = join(dir, 'shell');
    mkdirSync(shell, { recursive: true });
    try {
      symlinkSync('/bin/sh', join(shell, 'sh'));
    } catch {
      // made by an earlier call
    }
    return { PATH: `${join(dir, 'browsers')}:${shell}`, HOME: dir };
  };

  it("refuses Ubuntu's snap stub chromium-browser (a script asking for the snap)", () => {
    // the transitional package's /usr/bin/chromium-browser, as it answers without the snap
    script(
      'chromium-browser',
      [
        'echo "Command \'/usr/bin/chromium-browser\' requires the chromium snap to be installed." >&2',
        'echo "Please install it with:" >&2',
        'echo "snap install chromium" >&2',
        'exit 1',
      ].join('\n'),
    );
    expect(chromiumPath(env())).toBeUndefined();
  });

  it('refuses a stub that exits 0 without a version', () => {
    script('chromium', 'echo "install the snap: snap install chromium"');
    expect(chromiumPath(env())).toBeUndefined();
  });

  it('finds nothing where no browser is on PATH', () => {
    expect(chromiumPath(env())).toBeUndefined();
  });

  it("takes Debian's chromium, which answers with its version", () => {
    script('chromium', 'echo "Chromium 156.0.8078.108 built on Debian GNU/Linux 12 (bookworm)"');
    expect(chromiumPath(env())).toBe(join(dir, 'browsers', 'chromium'));
  });

  it('passes over a stub chromium for a working chromium-browser', () => {
    script('chromium', 'echo "requires the chromium snap" >&2; exit 1');
    script('chromium-browser', 'echo "Chromium 120.0.6099.224 snap"');
    expect(chromiumPath(env())).toBe(join(dir, 'browsers', 'chromium-browser'));
  });
});
