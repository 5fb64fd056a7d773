import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/**
 * Headless Chromium (Debian's `chromium`) driven over the DevTools protocol
 * on a pipe (`--remote-debugging-pipe`: fd 3 in, fd 4 out, messages ended by
 * NUL), so a test reads a single-page app's text once it has rendered. The
 * Temporal UI's workflow page keeps a history long-poll open, so
 * `--dump-dom` with a virtual-time budget never returns there: this waits
 * for the text instead.
 */

/** What a test says when it leaves its browser part out for want of a working browser. */
export const NO_CHROMIUM =
  'no working chromium (`chromium` or `chromium-browser` answering --version with a ' +
  "Chromium version; Ubuntu's is a stub asking for the snap)";

/**
 * The browser's path, or undefined when none is installed that runs: a
 * `chromium` or `chromium-browser` on PATH whose `--version` answers with a
 * Chromium (or Chrome) version. Ubuntu's `chromium-browser` package is only a
 * script that says to install the snap: found on PATH, yet no browser.
 */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const name of ['chromium', 'chromium-browser']) {
    const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8', env });
    const path = found.status === 0 ? found.stdout.trim() : '';
    if (!path) continue;
    // bounded: a stub may wait for input; a real browser answers at once even on a busy machine
    const version = spawnSync(path, ['--version'], {
      encoding: 'utf8',
      env,
      timeout: 30_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (version.status === 0 && /\b(Chromium|Chrome) \d+\.\d+/.test(version.stdout)) return path;
  }
  return undefined;
}

/**
 * The page's text, and that of its frames, each after a line naming the
 * frame (`[frame <id>]`): the UI 2.54 renders a workflow's details (Markdown)
 * in a same-origin frame (`<iframe id="user-metadata-current-details"
 * src="/render?content=…">`), read from its document once loaded; a frame
 * with a `srcdoc` is read from that.
 */
const VISIBLE_TEXT = `(() => {
  const frames = [...document.querySelectorAll('iframe')].map((f) => {
    let text = '';
    try {
      const body = f.contentDocument && f.contentDocument.body;
      text = body ? body.innerText : '';
    } catch (e) {
      text = '';
    }
    if (!text && f.srcdoc) {
      text = new DOMParser().parseFromString(f.srcdoc, 'text/html').body.textContent || '';
    }
    return '[frame ' + (f.id || '') + ']\\n' + text.trim();
  });
  return [document.body ? document.body.innerText : '', ...frames].join('\\n');
})()`;

interface Reply {
  id?: number;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/**
 * Opens `url` in a fresh headless browser (its own profile) and answers the
 * page's visible text (`document.body.innerText`) once `ready` holds for it;
 * rejects with the last text seen after `timeoutMs`. The browser is ended
 * either way.
 */
export async function renderedText(
  url: string,
  ready: (text: string) => boolean,
  opts: {
    timeoutMs?: number;
    /** clicked (once it is there) before the text is read: a section to expand */ click?: string;
  } = {},
): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 90_000;
  const binary = chromiumPath();
  if (!binary) throw new Error(`${NO_CHROMIUM} (Debian: apt-get install chromium)`);
  const profile = mkdtempSync(join(tmpdir(), 'provisioner-chromium-'));
  const child = spawn(
    binary,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-dev-shm-usage',
      `--user-data-dir=${profile}`,
      '--remote-debugging-pipe',
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'], detached: true },
  );
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  let nextId = 0;
  const waiting = new Map<number, (reply: Reply) => void>();
  let buffered = '';
  fromBrowser.setEncoding('utf8');
  fromBrowser.on('data', (chunk: string) => {
    buffered += chunk;
    let end: number;
    while ((end = buffered.indexOf('\0')) >= 0) {
      const message = JSON.parse(buffered.slice(0, end)) as Reply;
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) waiting.get(message.id)?.(message);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const send = (
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> => {
    const id = ++nextId;
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method}: no answer in 30 s`)), 30_000);
      waiting.set(id, (reply) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (reply.error) reject(new Error(`${method}: ${reply.error.message}`));
        else resolve(reply.result ?? {});
      });
    });
    toBrowser.write(
      `${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`,
    );
    return answer;
  };
  try {
    const { targetInfos } = (await send('Target.getTargets')) as {
      targetInfos: Array<{ targetId: string; type: string }>;
    };
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) throw new Error('chromium opened no page');
    const { sessionId } = (await send('Target.attachToTarget', {
      targetId: page.targetId,
      flatten: true,
    })) as { sessionId: string };
    await send('Page.navigate', { url }, sessionId);
    const deadline = Date.now() + timeoutMs;
    let text = '';
    let clicked = opts.click === undefined;
    for (;;) {
      if (!clicked) {
        const { result } = (await send(
          'Runtime.evaluate',
          {
            expression: `(() => {
              const el = [...document.querySelectorAll('button, summary, [role=button], [role=tab]')]
                .find((e) => e.innerText && e.innerText.trim() === ${JSON.stringify(opts.click)});
              if (!el) return false;
              el.click();
              return true;
            })()`,
            returnByValue: true,
          },
          sessionId,
        )) as { result: { value?: boolean } };
        clicked = result.value === true;
      }
      const { result } = (await send(
        'Runtime.evaluate',
        { expression: VISIBLE_TEXT, returnByValue: true },
        sessionId,
      )) as { result: { value?: string } };
      text = result.value ?? '';
      if (ready(text)) return text;
      if (Date.now() > deadline) {
        throw new Error(
          `${url} did not show what was awaited in ${timeoutMs} ms; it showed:\n${text}`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
    rmSync(profile, { recursive: true, force: true });
  }
}
