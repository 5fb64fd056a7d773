import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
/** At least this many schema-valid requests must be parsed from the report, or the parse failed. */
const MIN_POSITIVE_REQUESTS = EXAMPLES;
/** …and over at least this share of the document's operations (a few may draw nothing valid). */
const MIN_POSITIVE_SHARE = 0.5;
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

/**
 * Requests Schemathesis generated as valid for the document (its positive
 * mode) that the server refused on their data: any 4xx but 401, 403, 404,
 * 409 and 429, which say nothing about the data (Schemathesis's own rule
 * for its "schema validation mismatch" warning). Read from its NDJSON
 * report, grouped by operation, status, code and message (digits and quoted
 * values blurred so one rule is one row).
 */
interface Rejection {
  operation: string;
  status: number;
  code: string;
  message: string;
  count: number;
  example: string;
}

const NOT_ABOUT_DATA = new Set([401, 403, 404, 409, 429]);

function decoded(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content && typeof content === 'object' && '$base64' in content) {
    return Buffer.from(String(content.$base64), 'base64').toString();
  }
  return '';
}

interface ReportCase {
  value?: {
    method?: string;
    path?: string;
    body?: unknown;
    query?: unknown;
    headers?: Record<string, unknown>;
    meta?: { generation?: { mode?: string } };
  };
}
interface ReportInteraction {
  request?: { method?: string; uri?: string; body?: unknown };
  response?: { status_code?: number; content?: unknown };
}

/**
 * The schema-valid (positive) requests the report records, per operation,
 * and the refusals among them. The count guards the parse: a report whose
 * shape changed (a Schemathesis upgrade, a renamed field) yields no positive
 * request, and "no refusal" would then pass on nothing.
 */
function positiveRejections(ndjson: string): {
  rejections: Map<string, Rejection>;
  positives: Map<string, number>;
} {
  const out = new Map<string, Rejection>();
  const positives = new Map<string, number>();
  for (const line of ndjson.split('\n')) {
    if (!line.startsWith('{"ScenarioFinished"')) continue;
    const event = JSON.parse(line) as {
      ScenarioFinished: {
        recorder: {
          label: string;
          cases?: Record<string, ReportCase>;
          interactions?: Record<string, ReportInteraction>;
        };
      };
    };
    // a scenario that sent nothing (the examples phase without examples) has no cases
    const { label, cases = {}, interactions = {} } = event.ScenarioFinished.recorder;
    for (const [id, interaction] of Object.entries(interactions)) {
      const c = cases[id]?.value;
      if (c?.meta?.generation?.mode !== 'positive') continue;
      // a method the operation does not declare reaches another operation, or none
      if (c.method && label.split(' ')[0] !== c.method.toUpperCase()) continue;
      positives.set(label, (positives.get(label) ?? 0) + 1);
      const status = interaction.response?.status_code;
      if (status === undefined || status < 400 || status >= 500 || NOT_ABOUT_DATA.has(status))
        continue;
      let code = '';
      let message = decoded(interaction.response?.content);
      try {
        const body = JSON.parse(message) as { error?: { code?: string; message?: string } };
        code = body.error?.code ?? '';
        message = body.error?.message ?? message;
      } catch {
        // not JSON: kept as it came
      }
      const blurred = message.replace(/"[^"]*"/g, '"…"').replace(/\d+/g, 'N');
      const key = `${label}\u0000${status}\u0000${code}\u0000${blurred}`;
      const row = out.get(key);
      if (row) row.count += 1;
      else
        out.set(key, {
          operation: label,
          status,
          code,
          message: blurred,
          count: 1,
          example: JSON.stringify({
            message,
            body: c.body,
            query: c.query,
            idempotencyKey: c.headers?.['Idempotency-Key'],
          }).slice(0, 400),
        });
    }
  }
  return { rejections: out, positives };
}

/**
 * The refusals the document cannot state, and why. Everything else a
 * schema-valid request meets must be accepted (or be a 404/409, which are
 * about the state, not the data).
 */
interface ExpectedRejection {
  operation: RegExp;
  status: number;
  code: string;
  message: RegExp;
  why: string;
}

/** The operations that take constraints, placements or both, checked against the model's region. */
const CHECKED_AGAINST_REGION =
  /^(POST \/v1\/models|PUT \/v1\/models\/\{model\}(\/applications\/\{app\})?\/constraints|POST \/v1\/models\/\{model\}\/(applications|applications\/\{app\}\/units|machines|machines\/\{id\}\/retry))$/;

const EXPECTED_REJECTIONS: ExpectedRejection[] = [
  {
    operation: /^(POST|PUT|PATCH|DELETE) /,
    status: 422,
    code: 'idempotency-key-reused',
    message: /./,
    why: 'state, not shape: Schemathesis repeats its generated Idempotency-Keys across different requests',
  },
  {
    operation: CHECKED_AGAINST_REGION,
    status: 400,
    code: 'invalid-constraints',
    message: /^(availability zone "…" not valid|invalid constraint value: instance-type=.*)$/,
    why: 'the zones and instance types of the model’s region, read from EC2 at the request: one document serves every region',
  },
  {
    operation: CHECKED_AGAINST_REGION,
    status: 400,
    code: 'invalid-placement',
    message:
      /^(availability zone "…" not valid|zone "…" is not an availability zone of region .*)$/,
    why: 'a `zone=` placement must be a zone of the model’s region (EC2’s list, at the request)',
  },
  {
    operation: /^POST \/v1\/models$/,
    status: 400,
    code: 'bad-request',
    message: /^region "…" not found$/,
    why: 'the regions EC2 offers the account, read at the request',
  },
  {
    // the operations checked against the region are the ones that take constraints
    operation: CHECKED_AGAINST_REGION,
    status: 400,
    code: 'invalid-constraints',
    message: /^bad "…" constraint: already set$/,
    why: 'each constraint key at most once (`cpu-cores` is `cores`): a rule across the items, in the description; the pattern takes keys in any order, as clients write them, and a regular expression could forbid a repeat only with look-aheads generators cannot honour',
  },
  {
    // the audit listings and the paged models list
    operation: /^GET \/v1\/(models|(models\/\{model\}\/)?audit)$/,
    status: 400,
    code: 'bad-request',
    message: /^invalid cursor$/,
    why: 'a cursor is an opaque token only the server makes (a key of the partition read); its shape is in the document, its content cannot be',
  },
  {
    operation: /^POST \/v1\/users$/,
    status: 400,
    code: 'bad-request',
    message: /^password refused by the user pool: /,
    why: 'the user pool’s password policy is the pool’s configuration, not the API’s',
  },
  {
    operation: /^POST \/v1\/models\/\{model\}\/relations$/,
    status: 400,
    code: 'bad-request',
    message: /^cannot relate application "…" to itself$/,
    why: 'a rule across the two items (`app:x` with `app:y`); `uniqueItems` states it only for identical strings',
  },
  {
    operation: /^POST \/v1\/models\/\{model\}\/applications$/,
    status: 400,
    code: 'bad-request',
    message:
      /^subordinate application (must be deployed without units|cannot have placement directives)$/,
    why: 'a rule across fields (`subordinate` with `numUnits` or `to`), in the description',
  },
  {
    operation: /^POST \/v1\/models\/\{model\}\/machines$/,
    status: 400,
    code: 'invalid-placement',
    message: /^cannot use -n when specifying a placement directive$/,
    why: 'a rule across fields (`count` with `placement`), in the description',
  },
  {
    operation: /^POST \/v1\/models\/\{model\}\/(applications|applications\/\{app\}\/units)$/,
    status: 400,
    code: 'base-mismatch',
    message: /./,
    why: 'state: the base of the machine a unit is placed on',
  },
];

function explains(e: ExpectedRejection, r: Rejection): boolean {
  return (
    e.operation.test(r.operation) &&
    e.status === r.status &&
    e.code === r.code &&
    e.message.test(r.message)
  );
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
    const documentText = await res.text();
    writeFileSync(document, documentText);
    const operations = Object.values(
      (JSON.parse(documentText) as { paths: Record<string, Record<string, unknown>> }).paths,
    ).reduce(
      (n, item) =>
        n +
        Object.keys(item).filter((m) =>
          ['get', 'put', 'post', 'delete', 'patch'].includes(m.toLowerCase()),
        ).length,
      0,
    );
    expect(operations).toBeGreaterThan(20);
    const minPositiveOperations = Math.ceil(operations * MIN_POSITIVE_SHARE);
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
      'junit,ndjson',
      '--report-dir',
      join(dir, 'report'),
      '--report-ndjson-path',
      join(dir, 'report', 'events.ndjson'),
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

    // what the document calls valid and the server refused, per operation and reason
    const { rejections: rejected, positives } = positiveRejections(
      readFileSync(join(dir, 'report', 'events.ndjson'), 'utf8'),
    );
    const positiveCount = [...positives.values()].reduce((n, c) => n + c, 0);
    figure(
      `schema-valid requests parsed from the report: ${positiveCount} over ${positives.size} operations`,
    );
    // the report was read: schema-valid requests were found, for most operations
    expect(positiveCount).toBeGreaterThanOrEqual(MIN_POSITIVE_REQUESTS);
    expect(positives.size).toBeGreaterThanOrEqual(minPositiveOperations);
    const table = [...rejected.values()].sort((a, b) => a.operation.localeCompare(b.operation));
    figure(
      `schema-valid requests rejected: ${table.reduce((n, r) => n + r.count, 0)} over ${
        new Set(table.map((r) => r.operation)).size
      } operations${table.length === 0 ? '' : ':'}`,
    );
    for (const r of table) {
      const why = EXPECTED_REJECTIONS.find((e) => explains(e, r));
      figure(
        `  ${r.operation}: ${r.count} × ${r.status} ${r.code} ${JSON.stringify(r.message)}${
          why ? ` (expected: ${why.why})` : ''
        }`,
      );
    }
    const unexplained = table
      .filter((r) => !EXPECTED_REJECTIONS.some((e) => explains(e, r)))
      .map((r) => `${r.operation}: ${r.status} ${r.code} ${r.message} (e.g. ${r.example})`);

    expect({
      code: run.code,
      tail: run.code === 0 ? '' : output.slice(-4000),
      unexplained,
    }).toEqual({
      code: 0,
      tail: '',
      unexplained: [],
    });
  });
});
