import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '../../../cli/client';
import type { Context } from '../../../cli/context';
import { run } from '../../../cli/main';

export interface Recorded {
  method: string;
  path: string;
  body?: unknown;
}

export interface Harness {
  requests: Recorded[];
  stdout: string;
  stderr: string;
  code: number;
}

/**
 * Runs the CLI in-process against a fake client: `answer` gives each request's
 * result (or throws), and every request is recorded.
 */
export async function runCli(
  argv: string[],
  answer: (req: Recorded) => unknown = () => ({}),
  extra: Partial<Context> & { env?: Record<string, string> } = {},
): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'cli-unit-'));
  const h: Harness = { requests: [], stdout: '', stderr: '', code: -1 };
  const client: Client = {
    apiUrl: 'http://api.test',
    request: <T>(method: string, path: string, body?: unknown) => {
      const req = { method, path, ...(body === undefined ? {} : { body }) };
      h.requests.push(req);
      return Promise.resolve(answer(req) as T);
    },
    get: <T>(path: string) => client.request<T>('GET', path),
  };
  const ctx: Context = {
    cwd: dir,
    stdout: { write: (t: string) => (h.stdout += t) },
    stderr: { write: (t: string) => (h.stderr += t) },
    stdinIsTTY: false,
    now: () => new Date('2026-11-22T10:20:30Z'),
    connect: () => client,
    ...extra,
    env: {
      PROVISIONER_CONFIG_DIR: join(dir, 'config'),
      PROVISIONER_API_URL: 'http://api.test',
      PROVISIONER_API_TOKEN: 'secret-token',
      PROVISIONER_MODEL: 'demo',
      ...extra.env,
    },
  };
  h.code = await run(argv, ctx);
  return h;
}
