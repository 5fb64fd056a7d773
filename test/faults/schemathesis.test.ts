import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/processes';
import { ensureSchemathesis, SCHEMATHESIS_VERSION } from '../../local/schemathesis';
import { startStack, type RunningStack } from '../../local/stack';
import { apiClient } from '../integration/api-client';

/**
 * A third-party OpenAPI fuzzer against the API (issue 23): Schemathesis,
 * pinned and installed into the project's cache on first use
 * (local/schemathesis.ts), reads the API's own `GET /v1/openapi.json` and
 * sends what it generates from it — valid and invalid bodies, parameters and
 * boundary values for every operation — to a private local stack with the
 * token. The run must find no server error and no response the document
 * does not allow (status code, content type, body schema).
 *
 * Bounded: PROVISIONER_SCHEMATHESIS_EXAMPLES (default 25) cases per
 * operation in each phase, PROVISIONER_SCHEMATHESIS_SEED to replay a run,
 * and a hard limit of PROVISIONER_SCHEMATHESIS_MINUTES (default 12) on the
 * whole run. Its figures go to stderr as `[schemathesis] …` lines.
 *
 * The stack runs without its worker: the fuzzer may add up to 1,000
 * machines in one request, and what is tested here is what the API answers,
 * not provisioning (machines stay recorded, their workflows queued). Path
 * parameters are fixed to a model made here (`st`, with a manual machine
 * `0` and an application `app` with unit `app/0` on it), so every route of
 * a model reaches its logic instead of answering 404; bodies, query and
 * headers are Schemathesis's own. One worker thread: Python 3.11.7's
 * `ast.parse` is not thread-safe, and Hypothesis calls it while describing
 * strategies (`SystemError: AST constructor recursion depth mismatch`).
 */
const EXAMPLES = Number(process.env.PROVISIONER_SCHEMATHESIS_EXAMPLES ?? 25);
const SEED = Number(process.env.PROVISIONER_SCHEMATHESIS_SEED ?? Date.now() % 2 ** 31);
const LIMIT_MS = Number(process.env.PROVISIONER_SCHEMATHESIS_MINUTES ?? 12) * 60_000;
/** What "breaks the document" means here, and server errors (PROVISIONER_SCHEMATHESIS_CHECKS: others, to look further). */
const CHECKS = process.env.PROVISIONER_SCHEMATHESIS_CHECKS?.split(',') ?? [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
];

jest.setTimeout(LIMIT_MS + 15 * 60_000);

const MODEL = 'st';
/** Schemathesis's own config: the path parameters every operation is sent. */
const CONFIG = `[parameters]
model = "${MODEL}"
app = "app"
id = "0"
n = "0"
`;

const figure = (line: string) => process.stderr.write(`[schemathesis] ${line}\n`);

let stack: RunningStack;
let dir: string;

beforeAll(async () => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  dir = mkdtempSync(join(tmpdir(), 'provisioner-schemathesis-'));
  stack = await startStack({
    ports: {
      api: await freePort(),
      temporal: await freePort(),
      temporalUi: await freePort(),
      dynamodb: await freePort(),
      ec2: await freePort(),
      moto: await freePort(),
    },
    token: randomBytes(16).toString('hex'),
    dataDir: join(dir, 'data'),
    log: (line) => process.stderr.write(`[stack] ${line}\n`),
  });
  await stack.processes.find((p) => p.name === 'worker')?.stop();
  const api = apiClient(stack.info);
  const made = [
    await api.post('/v1/models', { name: MODEL, constraints: 'mem=1000T' }),
    await api.post(`/v1/models/${MODEL}/machines`, { placement: 'ssh:ubuntu@10.0.0.1' }),
    await api.post(`/v1/models/${MODEL}/applications`, {
      name: 'app',
      base: 'ubuntu@24.04',
      to: ['0'],
    }),
  ];
  expect(made.map((r) => r.status)).toEqual([201, 201, 201]);
}, 600_000);

afterAll(async () => {
  await stack?.stop();
}, 120_000);

interface Run {
  code: number | string | null;
  output: string;
}

function runSchemathesis(st: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      st,
      args,
      {
        // its own cache (.schemathesis/) goes beside the report, not into the checkout
        cwd: dir,
        timeout: LIMIT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 256 * 1024 * 1024,
        env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_TELEMETRY: 'false', COLUMNS: '160' },
      },
      (err, stdout, stderr) => {
        const code = err ? ((err as NodeJS.ErrnoException & { code?: unknown }).code ?? 1) : 0;
        resolve({
          code: typeof code === 'number' || typeof code === 'string' ? code : 1,
          output: `${stdout}${stderr}`,
        });
      },
    );
  });
}

describe('Schemathesis against the API', () => {
  it('finds no server error and no response outside the OpenAPI document', async () => {
    const started = Date.now();
    const st = await ensureSchemathesis(figure);
    figure(
      `Schemathesis ${SCHEMATHESIS_VERSION} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    const { apiUrl, token } = stack.info;
    const res = await fetch(`${apiUrl}/v1/openapi.json`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    const document = join(dir, 'openapi.json');
    writeFileSync(document, await res.text());
    const config = join(dir, 'schemathesis.toml');
    writeFileSync(config, CONFIG);

    const fuzzStarted = Date.now();
    const run = await runSchemathesis(st, [
      '--config-file',
      config,
      'run',
      document,
      '--url',
      apiUrl,
      '--header',
      `Authorization: Bearer ${token}`,
      '--checks',
      CHECKS.join(','),
      '--max-examples',
      String(EXAMPLES),
      '--seed',
      String(SEED),
      '--workers',
      '1',
      '--request-timeout',
      '60',
      '--report',
      'junit',
      '--report-dir',
      join(dir, 'report'),
    ]);
    const seconds = (Date.now() - fuzzStarted) / 1000;
    const output = run.output.replaceAll(token, '<token>');
    const summary = output
      .split('\n')
      .filter((l) => /passed|failed|error|Test cases|Operations|Seed|seconds/i.test(l))
      .slice(-12)
      .join('\n');
    figure(
      `seed ${SEED}, ${EXAMPLES} examples per operation, exit ${run.code} in ${seconds.toFixed(1)} s`,
    );
    figure(summary);
    if (run.code !== 0) process.stderr.write(`${output.slice(-20_000)}\n`);
    expect({ code: run.code, tail: run.code === 0 ? '' : output.slice(-4000) }).toEqual({
      code: 0,
      tail: '',
    });
  });
});
