/**
 * An HTTP fuzzer over the real local API (issue 11): requests generated with
 * fast-check for every route — bodies of every JSON type and size up to past
 * the body limit, unknown and missing fields, hostile strings, odd path
 * encodings, methods and headers — must never answer 5xx, every 4xx must be
 * in the contract's error shape, and afterwards no entity is half-written
 * (each model's counters and records agree).
 *
 * PROVISIONER_FUZZ_RUNS (default 3000) requests, PROVISIONER_FUZZ_SEED to
 * replay a run, PROVISIONER_FUZZ_CONCURRENCY (default 4) in flight at once.
 * The figures are printed.
 *
 * Machines: the fuzz models' constraints (`mem=1000T`) match no instance
 * type, so a machine the fuzzer creates goes to `error` at planning without
 * an EC2 launch; placements it generates that succeed are manual machines
 * (`ssh:`), never launched; unit counts are mostly 0 or out of range.
 *
 * What reaches a shell (issue 23): every string field is also sent shell
 * metacharacters, control characters and very long values, bases and
 * container placements among them. One more model has a running host
 * (machine 0, the run's one launch), so containers the fuzzer gets past
 * validation (`lxd:0`, each with the base it was sent) are created there by
 * SSM Run Command. Afterwards, beside the answers: every stored base is one
 * a request may give, every application created stores the charm and base it
 * was sent, and every command the EC2 proxy saw for the host is exactly the
 * quoted create or delete script of a container the model records, launched
 * from that container's own base.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { baseToString, parseRequestBase } from '../../core/base';
import { containerName } from '../../core/containers';
import type { SsmCommandRecord } from '../../local/ec2-proxy/ssm';
import { Agent, request as httpRequest } from 'node:http';
import { ROUTES } from '../../functions/routes';
import { ERROR_CODES } from '../../functions/schemas';
import { LIMITS } from '../../functions/limits';
import { modelPk } from '../../state/keys';
import { Repository } from '../../state/repository';
import { apiClient, eventually } from './api-client';
import { dynamoClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

afterAll(() => {
  agent.destroy();
  ddb.destroy();
});

const RUNS = Number(process.env.PROVISIONER_FUZZ_RUNS ?? 3000);
const SEED = Number(process.env.PROVISIONER_FUZZ_SEED ?? Date.now() % 2 ** 31);
const CONCURRENCY = Number(process.env.PROVISIONER_FUZZ_CONCURRENCY ?? 4);

const RUN = `fz${process.pid.toString(36)}`;
/** The model whose machine 0 runs: containers placed on it are created by SSM commands. */
const HOST_MODEL = `${RUN}-h`;
/**
 * The models the fuzzer may touch: two made here with manual machines, the
 * host model, two it may create (bounded, so is the work it makes).
 */
const MODELS = [...['a', 'b'].map((s) => `${RUN}-${s}`), HOST_MODEL, `${RUN}-c`, `${RUN}-d`];
const UNSATISFIABLE = 'mem=1000T';
const APPS = ['app', 'sub', 'web', 'db'];
const MANUAL_HOSTS = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];

// ---------------------------------------------------------------- values

/** What a POSIX shell gives meaning to, and control characters (issue 23). */
const SHELL_FRAGMENTS = [
  ' || touch pwned;#',
  '; touch pwned',
  '$(touch pwned)',
  '`touch pwned`',
  "' ; touch pwned ; '",
  '"; touch pwned; "',
  '\ntouch pwned',
  ' & touch pwned &',
  ' | tee pwned',
  ' > pwned',
  '${IFS}*?[a]~{a,b}\\',
  '\u0000\u0007\r\t\u001b[2J\u007f\u0085\u2028',
];
const shellFragment = fc.constantFrom(...SHELL_FRAGMENTS);
/** A plausible value with a shell fragment in it, or a fragment alone, or long runs of them. */
const shellish = (plausible: fc.Arbitrary<string>) =>
  fc.oneof(
    fc.tuple(plausible, shellFragment).map(([p, f]) => `${p}${f}`),
    fc.tuple(shellFragment, plausible).map(([f, p]) => `${f}${p}`),
    shellFragment,
    fc.tuple(shellFragment, fc.integer({ min: 10, max: 3000 })).map(([f, n]) => f.repeat(n)),
    fc
      .array(
        fc.constantFrom(
          ...Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)),
          ...'\u007f ;|&$`\'"\\<>(){}*?#~',
        ),
        { minLength: 1, maxLength: 40 },
      )
      .map((chars) => chars.join('')),
  );

const hostile = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\u202e\u0041',
    '../../etc/passwd',
    '%00',
    '%',
    '%zz',
    '\ud800',
    '😀'.repeat(10),
    '<script>',
    "' OR 1=1 --",
    '${jndi:ldap://x}',
    '\r\n\r\nX-Injected: 1',
    'a'.repeat(64),
    'x'.repeat(5000),
  ),
  fc.nat({ max: 5 }).map((k) => 'y'.repeat(LIMITS.charm - 2 + k)),
  shellish(fc.constantFrom('ubuntu@22.04', 'demo', 'app', '0', 'lxd:0', 'mem=1G')),
);
const GOOD_BASES = ['ubuntu@22.04', 'ubuntu@24.04', 'ubuntu@20.04/edge'];
/** Bases: good ones, odd ones Juju parses, and shell words in every part of one. */
const baseText = mostly(
  fc.constantFrom(...GOOD_BASES, 'ubuntu@99.99', 'ubuntu@22.04-blah', 'centos@7', 'windows@2022'),
  fc.oneof(
    hostile,
    shellish(fc.constantFrom(...GOOD_BASES)),
    shellish(fc.constant('ubuntu')).map((os) => `${os}@22.04`),
    shellish(fc.constant('22.04')).map((track) => `ubuntu@${track}`),
    fc.nat({ max: 4 }).map((k) => `ubuntu@${'2'.repeat(LIMITS.base - 8 + k)}`),
  ),
);

const anyJson = fc.jsonValue({ maxDepth: 3 });

/** Mostly a plausible value, sometimes a wrong one (so whole requests often get past validation). */
function mostly<T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>): fc.Arbitrary<T | U> {
  return fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: bad });
}

const modelName = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...MODELS) },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/) },
  { weight: 2, arbitrary: hostile },
);
const appName = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...APPS) },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/) },
  { weight: 2, arbitrary: hostile },
);
const machineId = mostly(
  fc.constantFrom('0', '1', '2', '0/lxd/0'),
  fc.oneof(
    fc.constantFrom('0', '1', '2', '0/lxd/0', '1/lxd/0', '999999999', '01', '-1', '0/lxd'),
    fc.nat().map(String),
    hostile,
  ),
);
const unitNumber = mostly(
  fc.constantFrom('0', '1', '2'),
  fc.oneof(fc.constantFrom('00', '-1'), fc.nat().map(String), hostile),
);

/** Numbers that add no launched machine: 0, out of range, not integers, not numbers. */
const harmlessCount = fc.oneof(
  fc.constantFrom(0, -1, 1001, 1.5, 1e300, -0),
  fc.integer({ min: -1000000, max: 0 }),
  fc.integer({ min: 1001 }),
  fc.double({ noNaN: true }).filter((n) => !Number.isInteger(n)),
  anyJson,
);
const constraintsText = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      UNSATISFIABLE,
      `cores=100000 ${UNSATISFIABLE}`,
      `${UNSATISFIABLE} tags=a,b`,
    ),
  },
  // hostile text that does not parse (a parse that succeeds would drop the model's mem)
  {
    weight: 1,
    arbitrary: hostile.filter((s) => !/^[a-z-]+=[^ ]*( [a-z-]+=[^ ]*)*$/.test(s.trim())),
  },
  { weight: 1, arbitrary: fc.constant('x'.repeat(LIMITS.constraints + 1)) },
);
const manualPlacement = fc.constantFrom(...MANUAL_HOSTS).map((h) => `ssh:ubuntu@${h}`);
const placement = mostly(
  manualPlacement,
  fc.oneof(
    fc.constantFrom(
      'lxd:0',
      'lxd',
      'lxd:',
      'zone=',
      'subnet=',
      'ssh:',
      'lxd:-1',
      'lxd:0/lxd/0',
      'kvm:0',
      'zone=us-east-9z',
    ),
    hostile,
  ),
);
/** `to` lists that can only fail, or place units on existing machines or in containers on them. */
const toList = fc.oneof(
  fc.array(
    fc.oneof(
      fc.constantFrom('0', '1', '2', '999', 'lxd:0', 'lxd:1'),
      hostile,
      shellish(fc.constant('lxd:0')),
    ),
    { maxLength: 4 },
  ),
  fc.constant(Array.from({ length: 1001 }, () => '0')),
  anyJson,
);

/** A body's fields: plausible ones, maybe some missing, maybe unknown ones. */
function object(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc
    .tuple(
      fc.record(fields, { requiredKeys: [] }),
      fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 2 }),
      fc.nat({ max: 4 }).map((n) => n === 0),
    )
    .map(([known, unknown, withUnknown]) => (withUnknown ? { ...unknown, ...known } : known));
}

const BODIES: Record<string, fc.Arbitrary<unknown>> = {
  'POST /v1/models': object({
    name: mostly(fc.constantFrom(...MODELS), hostile),
    region: mostly(fc.constant('us-east-1'), hostile),
    constraints: constraintsText,
    harvestMode: mostly(fc.constantFrom('none', 'unknown', 'destroyed', 'all'), hostile),
    availabilitySets: mostly(fc.boolean(), anyJson),
    reprovisionLost: mostly(fc.boolean(), anyJson),
  }).map((b) =>
    // a model the fuzzer creates keeps unsatisfiable constraints (no launches)
    typeof b === 'object' && b !== null && !('constraints' in b)
      ? { ...b, constraints: UNSATISFIABLE }
      : b,
  ),
  'PATCH /v1/models/{model}': object({
    harvestMode: mostly(fc.constantFrom('none', 'unknown', 'destroyed', 'all'), hostile),
    reprovisionLost: mostly(fc.boolean(), anyJson),
    availabilitySets: mostly(fc.boolean(), anyJson),
  }),
  'PUT /v1/models/{model}/constraints': object({ constraints: constraintsText }),
  'POST /v1/models/{model}/applications': fc.oneof(
    object({
      name: appName,
      base: baseText,
      charm: mostly(
        fc.stringMatching(/^[a-z]{1,10}$/),
        fc.oneof(hostile, fc.constant('c'.repeat(LIMITS.charm + 1))),
      ),
      constraints: constraintsText,
      numUnits: harmlessCount,
      to: toList,
      subordinate: mostly(fc.boolean(), anyJson),
    }),
    // units on manual machines only: recorded, never launched
    fc.record({
      name: appName,
      base: fc.constant('ubuntu@24.04'),
      numUnits: fc.constant(1),
      to: fc.constantFrom(['0'], ['1']),
    }),
    // a unit in a new container on machine 0, of any base (and charm) at all
    fc.record({
      name: appName,
      base: baseText,
      charm: mostly(fc.stringMatching(/^[a-z]{1,10}$/), hostile),
      numUnits: fc.constant(1),
      to: fc.constant(['lxd:0']),
    }),
  ),
  'PUT /v1/models/{model}/applications/{app}/constraints': object({ constraints: constraintsText }),
  'POST /v1/models/{model}/relations': object({
    endpoints: fc.oneof(
      fc.array(
        fc.oneof(
          appName,
          appName.map((a) => `${a}:juju-info`),
        ),
        { maxLength: 3 },
      ),
      anyJson,
    ),
  }),
  'POST /v1/models/{model}/applications/{app}/units': fc.oneof(
    object({ count: harmlessCount, to: toList }),
    fc.record({ count: fc.constant(1), to: fc.constantFrom(['0'], ['1'], ['2'], ['lxd:0']) }),
  ),
  'POST /v1/models/{model}/machines': fc.oneof(
    object({
      // add-machine defaults to one machine: only manual placements (or refusals) here
      count: harmlessCount,
      base: baseText,
      constraints: constraintsText,
      placement: placement,
    }).map((b) =>
      typeof b === 'object' && b !== null && !('placement' in b && 'count' in b)
        ? { ...b, placement: 'ssh:ubuntu@10.0.0.9' }
        : b,
    ),
    // one container on machine 0, of any base
    fc.record({ placement: fc.constant('lxd:0'), base: baseText }),
  ),
  'POST /v1/models/{model}/machines/{id}/retry': object({ constraints: constraintsText }),
};

/** Any body at all, whatever the route: JSON of every type, text, or very large. */
const anyBody: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: fc.string({ maxLength: 50 }) },
  { weight: 1, arbitrary: fc.constantFrom('{', '[', 'null', '""', '{"a":', '\u0000', 'true') },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: LIMITS.bodyBytes - 64, max: LIMITS.bodyBytes + 64 })
      .map((n) => JSON.stringify({ name: 'x'.repeat(Math.max(0, n - 12)) })),
  },
  {
    weight: 1,
    arbitrary: fc.nat({ max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)), // deep nesting
  },
);

// ---------------------------------------------------------------- paths

/** Percent-encodes the UTF-8 bytes of each character matching `which` (a lone surrogate as U+FFFD). */
function percentEncode(value: string, which: RegExp): string {
  let out = '';
  for (const c of value) {
    out += which.test(c)
      ? [...Buffer.from(c, 'utf8')]
          .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
          .join('')
      : c;
  }
  return out;
}

/** A path parameter's value written in one of several ways (some of them wrong). */
function encodePathValue(value: string, how: number): string {
  const strict = percentEncode(value, /[^A-Za-z0-9\-_.!~*'()]/);
  switch (how) {
    case 0:
      return strict;
    case 1: // only what Node refuses to send is encoded: `/`, `%` and the rest go raw
      return percentEncode(value, /[^\x21-\x7e]|[?#]/);
    case 2:
      return encodeURIComponent(strict);
    case 3:
      return `${strict}%`;
    case 4:
      return `${strict}%C3%28`; // not UTF-8
    default:
      return strict.toUpperCase();
  }
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** The route it was made for (`POST /v1/models/{model}/applications`) and the path values, raw. */
  route: string;
  model: string;
}

const HEADER_VALUE = fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, ''));

const request: fc.Arbitrary<FuzzRequest> = fc
  .record({
    // deleting a fuzz model ends most later requests at 404: rarely
    route: fc.oneof(
      {
        weight: 40,
        arbitrary: fc.constantFrom(
          ...ROUTES.filter((r) => !(r.method === 'DELETE' && r.path === '/v1/models/{model}')),
        ),
      },
      { weight: 1, arbitrary: fc.constantFrom(...ROUTES) },
    ),
    method: fc.oneof(
      { weight: 12, arbitrary: fc.constant(undefined) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
      },
      { weight: 1, arbitrary: fc.stringMatching(/^[A-Z]{1,8}$/) },
    ),
    // `user` and `name`: the identity routes' user names (model names' rule)
    params: fc.record({
      model: modelName,
      app: appName,
      id: machineId,
      n: unitNumber,
      user: modelName,
      name: modelName,
    }),
    encoding: fc.oneof(
      { weight: 6, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.nat({ max: 5 }) },
    ),
    pathJunk: fc.oneof(
      { weight: 10, arbitrary: fc.constant('') },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          '/',
          '//',
          '/..',
          '/x',
          '?',
          '?force=maybe',
          '?force=',
          '?force=true&force=false',
          '#frag',
        ),
      },
      {
        weight: 1,
        arbitrary: fc.string({ maxLength: 10 }).map((s) => `?q=${encodeURIComponent(s)}`),
      },
    ),
    body: fc.oneof(
      { weight: 3, arbitrary: fc.constant('route') },
      { weight: 2, arbitrary: anyBody },
    ),
    auth: fc.oneof(
      { weight: 20, arbitrary: fc.constant('good') },
      { weight: 1, arbitrary: fc.constantFrom('none', 'wrong', 'basic', 'empty', 'lower') },
    ),
    idempotencyKey: fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,20}$/) },
      { weight: 1, arbitrary: HEADER_VALUE },
    ),
    contentType: fc.constantFrom(
      undefined,
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      '',
    ),
    extraHeaders: fc.dictionary(fc.stringMatching(/^x-[a-z]{1,8}$/), HEADER_VALUE, { maxKeys: 2 }),
  })
  .chain((r) => {
    // the host's model stays (a route's own DELETE, or another route's path sent with
    // DELETE): its SSM commands are checked at the end, and teardown is quick enough now
    // that a destroyed model is gone by then
    if (
      (r.method ?? r.route.method) === 'DELETE' &&
      r.route.path === '/v1/models/{model}' &&
      r.params.model === HOST_MODEL
    )
      r.params.model = `${RUN}-d`;
    const key = `${r.route.method} ${r.route.path}`;
    const routeBody = BODIES[key];
    const body: fc.Arbitrary<string | undefined> =
      r.body === 'route' && routeBody ? routeBody.map((b) => JSON.stringify(b)) : anyBody;
    return body.map((text) => ({ ...r, text }));
  })
  .map((r) => {
    const path =
      r.route.path.replace(/\{(\w+)\}/g, (_m, p: keyof typeof r.params) =>
        encodePathValue(r.params[p], r.encoding),
      ) + r.pathJunk;
    const headers: Record<string, string> = { ...r.extraHeaders };
    const auth = {
      good: `Bearer ${stack.token}`,
      none: undefined,
      wrong: 'Bearer not-the-token',
      basic: `Basic ${stack.token}`,
      empty: 'Bearer ',
      lower: `bearer ${stack.token}`,
    }[r.auth];
    if (auth !== undefined) headers.authorization = auth;
    if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
    if (r.contentType !== undefined) headers['content-type'] = r.contentType;
    return {
      method: r.method ?? r.route.method,
      path,
      headers,
      ...(r.text === undefined ? {} : { body: r.text }),
      route: `${r.route.method} ${r.route.path}`,
      model: r.params.model,
    };
  });

// ---------------------------------------------------------------- sending

interface Answer {
  status: number;
  body: string;
}

function send(req: FuzzRequest): Promise<Answer | 'unsendable'> {
  return new Promise((resolve, reject) => {
    let r: ReturnType<typeof httpRequest>;
    const url = new URL(stack.apiUrl);
    try {
      r = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method: req.method,
          path: req.path,
          headers: {
            ...req.headers,
            ...(req.body === undefined ? {} : { 'content-length': Buffer.byteLength(req.body) }),
          },
          agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
    } catch {
      // Node itself refuses it (a method or header it will not put on the wire)
      resolve('unsendable');
      return;
    }
    r.on('error', reject);
    r.end(req.body);
  });
}

/** What is wrong with an answer, if anything. */
function problem(req: FuzzRequest, answer: Answer): string | undefined {
  if (answer.status >= 500) return `answered ${answer.status}: ${answer.body.slice(0, 300)}`;
  if (answer.status < 400 || req.method === 'HEAD') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return `${answer.status} body is not JSON: ${answer.body.slice(0, 200)}`;
  }
  const error = (parsed as { error?: { code?: unknown; message?: unknown } }).error;
  const shaped =
    typeof parsed === 'object' &&
    parsed !== null &&
    Object.keys(parsed).length === 1 &&
    typeof error === 'object' &&
    error !== null &&
    Object.keys(error).sort().join() === 'code,message' &&
    (ERROR_CODES as readonly unknown[]).includes(error.code) &&
    typeof error.message === 'string' &&
    error.message.length > 0;
  return shaped
    ? undefined
    : `${answer.status} body not in the error shape: ${answer.body.slice(0, 200)}`;
}

// ---------------------------------------------------------------- after: nothing half-written

const machineNumber = (id: string) => Number(id.split('/')[0]);

/** What disagrees among one model's records and counters (nothing, for a model that is gone). */
async function inconsistencies(model: string): Promise<string[]> {
  const items = await repo.doc
    .send(
      new QueryCommand({
        TableName: stack.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': modelPk(model) },
        ConsistentRead: true,
      }),
    )
    .then((out) => out.Items ?? []);
  if (items.length === 0) return [];
  const contents = await repo.loadModel(model).catch(() => undefined);
  if (!contents) return [`${model}: records without a model item (${items.length})`];
  const out: string[] = [];
  const modelItem = items.find((i) => i.type === 'model');
  const nextMachine = Number(modelItem?.nextMachine ?? 0);
  const machines = new Map(contents.machines.map((m) => [m.id, m]));
  const units = new Map(contents.units.map((u) => [u.name, u]));
  const apps = new Map(contents.applications.map((a) => [a.name, a]));
  for (const m of contents.machines) {
    if (machineNumber(m.id) >= nextMachine)
      out.push(`${model}: machine ${m.id} not below the counter ${nextMachine}`);
    for (const p of m.principals)
      if (!units.has(p)) out.push(`${model}: machine ${m.id} lists missing unit ${p}`);
    for (const c of m.containers)
      if (!machines.has(c)) out.push(`${model}: machine ${m.id} lists missing container ${c}`);
  }
  for (const u of contents.units) {
    const app = apps.get(u.application);
    if (!app) out.push(`${model}: unit ${u.name} of missing application`);
    const next = Number(
      items.find((i) => i.type === 'application' && i.name === u.application)?.nextUnit ?? 0,
    );
    if (Number(u.name.split('/')[1]) >= next)
      out.push(`${model}: unit ${u.name} not below its counter ${next}`);
    const m = machines.get(u.machine);
    if (!m) out.push(`${model}: unit ${u.name} on missing machine ${u.machine}`);
    if (u.principal === undefined) {
      if (m && !m.principals.includes(u.name))
        out.push(`${model}: machine ${u.machine} does not list unit ${u.name}`);
      for (const s of u.subordinates)
        if (!units.has(s)) out.push(`${model}: unit ${u.name} lists missing subordinate ${s}`);
    } else if (!units.get(u.principal)?.subordinates.includes(u.name)) {
      out.push(`${model}: subordinate ${u.name} not listed by its principal ${u.principal}`);
    }
  }
  for (const r of contents.relations)
    for (const e of r.endpoints)
      if (!apps.has(e)) out.push(`${model}: relation ${r.endpoints.join(' ')} of missing ${e}`);
  return out;
}

// ---------------------------------------------------------------- after: what was stored, what reached a shell

/** A deploy the API answered 201: what was sent, and the application as answered. */
interface Deployed {
  model: string;
  sent: { name?: unknown; base?: unknown; charm?: unknown };
  answered: { name: string; base: string; charm: string; createdAt: string };
}

/** Stored bases that no request could have given (every one must parse, be known, and hold no shell word). */
async function badStoredBases(model: string): Promise<string[]> {
  const contents = await repo.loadModel(model).catch(() => undefined);
  if (!contents) return [];
  const out: string[] = [];
  const check = (what: string, base: string) => {
    try {
      if (baseToString(parseRequestBase(base)) !== base)
        out.push(`${model}: ${what} stores base ${JSON.stringify(base)}, not canonical`);
    } catch (err) {
      out.push(`${model}: ${what} stores base ${JSON.stringify(base)}: ${(err as Error).message}`);
    }
  };
  for (const a of contents.applications) check(`application ${a.name}`, a.base);
  for (const m of contents.machines) check(`machine ${m.id}`, m.base);
  return out;
}

/** Applications the fuzzer created that do not hold what they were sent (unless re-created since). */
async function mangledApplications(deployed: readonly Deployed[]): Promise<string[]> {
  const out: string[] = [];
  for (const d of deployed) {
    const res = await api.get(
      `/v1/models/${encodeURIComponent(d.model)}/applications/${encodeURIComponent(d.answered.name)}`,
    );
    if (res.status !== 200 || res.body.createdAt !== d.answered.createdAt) continue;
    const want = {
      name: d.sent.name,
      base: baseToString(parseRequestBase(String(d.sent.base))),
      charm: d.sent.charm ?? res.body.charm,
    };
    const got = { name: res.body.name, base: res.body.base, charm: res.body.charm };
    if (JSON.stringify(got) !== JSON.stringify(want))
      out.push(
        `${d.model}/${d.answered.name}: sent ${JSON.stringify(want)}, stored ${JSON.stringify(got)}`,
      );
  }
  return out;
}

async function ssmCommands(): Promise<SsmCommandRecord[]> {
  const res = await fetch(`${stack.ec2Endpoint}/_admin/ssm/commands`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { commands: SsmCommandRecord[] }).commands;
}

const INIT_LINES = [
  'set -eu',
  'command -v lxc >/dev/null 2>&1 || snap install lxd',
  'flock /run/provisioner-lxd-init.lock sh -c \'[ -n "$(lxc storage list --format csv 2>/dev/null)" ] || lxd init --auto\'',
];

/**
 * Every command sent to the host: exactly the create or delete script of a
 * container of the host model (names and images of their own safe alphabet,
 * each in single quotes); a container still recorded was launched from its
 * own base's image.
 */
async function badHostCommands(
  hostInstance: string,
  uid: string,
): Promise<{ problems: string[]; sent: number }> {
  const tail = uid
    .replace(/[^a-z0-9]/gi, '')
    .slice(-6)
    .toLowerCase();
  const name = `juju-${tail}-0-lxd-\\d+`;
  const create = new RegExp(
    `^lxc info '(${name})' >/dev/null 2>&1 \\|\\| lxc launch '(ubuntu:[A-Za-z0-9._-]+)' '\\1'$`,
  );
  const remove = new RegExp(
    `^if lxc info '(${name})' >/dev/null 2>&1; then lxc delete --force '\\1'; fi$`,
  );
  const contents = await repo.loadModel(HOST_MODEL);
  const images = new Map(
    contents.machines
      .filter((m) => m.id.startsWith('0/lxd/'))
      .map((m) => [
        containerName({ model: HOST_MODEL, modelUid: uid, machineId: m.id }),
        `ubuntu:${parseRequestBase(m.base).track}`,
      ]),
  );
  const problems: string[] = [];
  const sent = (await ssmCommands()).filter((c) => c.instanceIds.includes(hostInstance));
  for (const c of sent) {
    const lines = [...c.commands];
    const last = lines.at(-1) ?? '';
    const made = create.exec(last);
    const ok =
      c.documentName === 'AWS-RunShellScript' &&
      c.instanceIds.length === 1 &&
      ((made !== null && JSON.stringify(lines) === JSON.stringify([...INIT_LINES, last])) ||
        (remove.test(last) &&
          JSON.stringify(lines) ===
            JSON.stringify(['set -eu', 'command -v lxc >/dev/null 2>&1 || exit 0', last])));
    if (!ok) problems.push(`command ${c.commandId}: ${JSON.stringify(lines)}`);
    else if (made && images.has(made[1]!) && images.get(made[1]!) !== made[2])
      problems.push(`${made[1]} launched from ${made[2]}, its base says ${images.get(made[1]!)}`);
  }
  return { problems, sent: sent.length };
}

// ---------------------------------------------------------------- the run

describe('HTTP fuzzer', () => {
  let hostInstance = '';
  let hostUid = '';

  beforeAll(async () => {
    // the host model: machine 0 runs (the run's one launch), and one container on it is created
    expect((await api.post('/v1/models', { name: HOST_MODEL })).status).toBe(201);
    hostUid = (await repo.getModel(HOST_MODEL)).uid;
    expect(
      (await api.post(`/v1/models/${HOST_MODEL}/machines`, { base: 'ubuntu@22.04' })).status,
    ).toBe(201);
    expect(
      (
        await api.post(`/v1/models/${HOST_MODEL}/machines`, {
          placement: 'lxd:0',
          base: 'ubuntu@24.04',
        })
      ).status,
    ).toBe(201);
    const container = await eventually(
      () => api.get(`/v1/models/${HOST_MODEL}/machines/${encodeURIComponent('0/lxd/0')}`),
      (res) => res.body?.status === 'running',
      180_000,
      500,
    );
    expect(container.body.status).toBe('running');
    hostInstance = (await api.get(`/v1/models/${HOST_MODEL}/machines/0`)).body.instanceId;
    expect(hostInstance).toMatch(/^i-/);

    for (const model of MODELS.slice(0, 2)) {
      expect(
        (await api.post('/v1/models', { name: model, constraints: UNSATISFIABLE })).status,
      ).toBe(201);
      for (const host of MANUAL_HOSTS.slice(0, 2)) {
        const res = await api.post(`/v1/models/${model}/machines`, {
          placement: `ssh:ubuntu@${host}`,
        });
        expect(res.status).toBe(201);
      }
      const base = 'ubuntu@24.04';
      expect(
        (await api.post(`/v1/models/${model}/applications`, { name: 'app', base, to: ['0'] }))
          .status,
      ).toBe(201);
      expect(
        (
          await api.post(`/v1/models/${model}/applications`, {
            name: 'sub',
            base,
            subordinate: true,
          })
        ).status,
      ).toBe(201);
      expect(
        (await api.post(`/v1/models/${model}/relations`, { endpoints: ['app', 'sub'] })).status,
      ).toBe(201);
    }
  });

  it(`answers ${RUNS} generated requests with no 5xx, every 4xx in the error shape, and leaves nothing half-written`, async () => {
    const requests = fc.sample(request, { numRuns: RUNS, seed: SEED });
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    const deployed: Deployed[] = [];
    let unsendable = 0;
    let next = 0;
    const started = Date.now();
    const worker = async () => {
      while (next < requests.length) {
        const req = requests[next++]!;
        const answer = await send(req);
        if (answer === 'unsendable') {
          unsendable++;
          continue;
        }
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (
          answer.status === 201 &&
          req.method === 'POST' &&
          req.route === 'POST /v1/models/{model}/applications'
        ) {
          const answered = (JSON.parse(answer.body) as { application: Deployed['answered'] })
            .application;
          deployed.push({ model: req.model, sent: JSON.parse(req.body ?? '{}'), answered });
        }
        const wrong = problem(req, answer);
        if (wrong && failures.length < 20)
          failures.push(
            `${req.method} ${req.path.slice(0, 300)} ${JSON.stringify(req.headers)} body=${JSON.stringify(req.body?.slice(0, 300))}: ${wrong}`.replaceAll(
              stack.token,
              '<token>',
            ),
          );
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const seconds = (Date.now() - started) / 1000;
    const sent = requests.length - unsendable;
    const histogram = [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ');
    console.log(
      `fuzz: seed ${SEED}, ${sent} requests sent (${unsendable} refused by Node's client) in ${seconds.toFixed(1)} s ` +
        `(${(sent / seconds).toFixed(0)}/s, ${CONCURRENCY} at once); statuses ${histogram}`,
    );

    const halfWritten = (await Promise.all(MODELS.map(inconsistencies))).flat();
    console.log(
      `fuzz: ${halfWritten.length} inconsistencies in ${MODELS.length} models afterwards`,
    );
    const badBases = (await Promise.all(MODELS.map(badStoredBases))).flat();
    const mangled = await mangledApplications(deployed);
    // the containers the fuzzer placed on the host have had their chance to be sent
    await new Promise((r) => setTimeout(r, 10_000));
    const host = await badHostCommands(hostInstance, hostUid);
    const containers = (await repo.loadModel(HOST_MODEL)).machines.filter((m) =>
      m.id.includes('/lxd/'),
    ).length;
    console.log(
      `fuzz: ${deployed.length} applications created (${mangled.length} not as sent), ` +
        `${badBases.length} stored bases no request may give, ${containers} containers on the host, ` +
        `${host.sent} commands sent to it (${host.problems.length} not a quoted container script)`,
    );

    expect(failures).toEqual([]);
    expect(halfWritten).toEqual([]);
    expect(badBases).toEqual([]);
    expect(mangled).toEqual([]);
    expect(host.problems).toEqual([]);
    expect(host.sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeGreaterThan(RUNS * 0.9);
    for (const model of MODELS) {
      const status = await api.get(`/v1/models/${model}/status`);
      expect([200, 404]).toContain(status.status);
    }
  }, 1_800_000);
});
