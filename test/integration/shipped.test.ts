import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/processes';
import { SHIPPED_API_PLAN_ENV, type ShippedApiPlan } from '../../local/shipped-api';
import { PROJECT_ROOT } from '../../local/stack';
import { loadTestStack } from './stack';

/**
 * The shipped artifacts are what runs (npm run test:shipped): the API's
 * answers come from the bundles `cdk synth` wrote, invoked with the events
 * API Gateway's HTTP API sends, and a broken bundle shows. Runs only with
 * PROVISIONER_ARTIFACTS=shipped; on the sources stack it is skipped (it
 * checks nothing of the sources).
 */
const stack = loadTestStack();
const shipped = stack.artifacts === 'shipped';

interface Recorded {
  functionName: string;
  init?: string;
  handler?: string;
  envNames?: string[];
  event?: {
    keys: string[];
    version: string;
    routeKey: string;
    rawPath: string;
    rawQueryString: string;
    headerNames: string[];
    cookieCount?: number;
    pathParameterNames: string[];
    isBase64Encoded: boolean;
    bodyBytes?: number;
    requestContext: {
      keys: string[];
      requestId: string;
      routeKey: string;
      stage: string;
      timeEpochType: string;
      http: { method: string; path: string; protocol: string; sourceIp: string };
    };
  };
}

function recorded(file: string): Recorded[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Recorded);
}

const API_FUNCTIONS = [
  'Api-ModelsHandler',
  'Api-ApplicationsHandler',
  'Api-UnitsHandler',
  'Api-MachinesHandler',
  'Api-StatusHandler',
  'Api-IdentityHandler',
];
/** The function EventBridge's EC2 state-change rule invokes (locally, the stack's emitter). */
const INSTANCE_EVENTS_FUNCTION = 'InstanceEvents-Handler';

(shipped ? describe : describe.skip)('shipped artifacts (PROVISIONER_ARTIFACTS=shipped)', () => {
  const auth = { Authorization: `Bearer ${stack.token}` };

  it('runs each API function from its cdk.out bundle, configured only by the template', async () => {
    expect(existsSync(join(stack.cdkOut!, 'manifest.json'))).toBe(true);
    // the stack's health check warms one function; the others may still be starting (load)
    const initsNow = () => recorded(stack.lambdaEventsFile!).filter((r) => r.init !== undefined);
    const deadline = Date.now() + 180_000;
    const allApiStarted = () =>
      API_FUNCTIONS.every((f) => initsNow().some((r) => r.functionName === f));
    while (!allApiStarted() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
    }
    const inits = initsNow();
    const names = inits.map((r) => r.functionName);
    // every API function; besides them only the instance-events function, whose bundle the
    // stack's EC2 state-change events reach (it starts with the first event, maybe not yet)
    expect(names.filter((n) => API_FUNCTIONS.includes(n)).sort()).toEqual(
      [...API_FUNCTIONS].sort(),
    );
    expect(names.filter((n) => !API_FUNCTIONS.includes(n))).toEqual(
      names.includes(INSTANCE_EVENTS_FUNCTION) ? [INSTANCE_EVENTS_FUNCTION] : [],
    );
    for (const init of inits) {
      expect({ fn: init.functionName, init: init.init, handler: init.handler }).toEqual({
        fn: init.functionName,
        init: 'ok',
        handler: 'index.handler',
      });
      expect(init.envNames).toEqual(expect.arrayContaining(['PROVISIONER_TABLE']));
      expect(init.envNames).not.toContain('PROVISIONER_API_TOKEN');
      expect(init.envNames).not.toContain('TEMPORAL_API_KEY_SECRET_ARN');
      if (init.functionName === INSTANCE_EVENTS_FUNCTION) {
        // it reads the table and signals workflows; it is given no API token at all
        expect(init.envNames).not.toContain('PROVISIONER_API_TOKEN_SECRET_ARN');
      } else {
        // the admin token comes from the secret the template names, as in the cloud
        expect(init.envNames).toEqual(expect.arrayContaining(['PROVISIONER_API_TOKEN_SECRET_ARN']));
      }
    }
    // the worker the Dockerfile's command built: transpiled file by file, its tree kept
    for (const file of ['worker/main.js', 'worker/main.js.map', 'workflows/index.js']) {
      expect(existsSync(join(stack.workerApp!, file))).toBe(true);
    }
  }, 240_000);

  it('hands a bundle a form post with cookies as payload 2.0: base64 body, cookies, route, request context', async () => {
    const name = `shipped-${randomBytes(3).toString('hex')}`;
    const probe = `x-probe-${randomBytes(4).toString('hex')}`;
    const res = await fetch(`${stack.apiUrl}/v1/models?source=a&source=b`, {
      method: 'POST',
      headers: {
        ...auth,
        // what `curl -d` sends: the HTTP API base64-encodes such a body
        'content-type': 'application/x-www-form-urlencoded',
        cookie: 'first=1; second=2',
        [probe]: 'yes',
      },
      body: JSON.stringify({ name }),
    });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { name: string }).name).toBe(name);
    const requestId = res.headers.get('apigw-requestid');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    const seen = recorded(stack.lambdaEventsFile!).filter((r) =>
      r.event?.headerNames.includes(probe),
    );
    expect(seen).toHaveLength(1);
    const [{ functionName, event }] = seen as [Required<Recorded>];
    expect(functionName).toBe('Api-ModelsHandler');
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /v1/models',
      rawPath: '/v1/models',
      rawQueryString: 'source=a&source=b',
      cookieCount: 2,
      isBase64Encoded: true,
      bodyBytes: Buffer.from(JSON.stringify({ name })).toString('base64').length,
      requestContext: {
        requestId,
        routeKey: 'POST /v1/models',
        stage: '$default',
        timeEpochType: 'number',
        http: { method: 'POST', path: '/v1/models', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1' },
      },
    });
    expect(event.keys).toEqual(
      expect.arrayContaining(['cookies', 'queryStringParameters', 'body', 'requestContext']),
    );
    expect(event.headerNames).toEqual(
      expect.arrayContaining(['x-forwarded-for', 'x-forwarded-proto', 'x-amzn-trace-id']),
    );
    expect(event.headerNames).not.toContain('cookie');
    expect(event.requestContext.keys).toEqual(
      expect.arrayContaining(['accountId', 'apiId', 'domainName', 'http', 'time', 'timeEpoch']),
    );

    const removed = await fetch(`${stack.apiUrl}/v1/models/${name}`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(removed.status).toBeLessThan(300);
  });

  it('routes an encoded container id as the HTTP API is reported to: decoded, through the greedy route', async () => {
    const name = `shipenc-${randomBytes(3).toString('hex')}`;
    const call = (
      method: string,
      path: string,
      body?: unknown,
      extra: Record<string, string> = {},
    ) =>
      fetch(`${stack.apiUrl}${path}`, {
        method,
        headers: { ...auth, 'content-type': 'application/json', ...extra },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await call('POST', '/v1/models', { name })).status).toBe(201);
    expect(
      (await call('POST', `/v1/models/${name}/machines`, { placement: 'ssh:host-s' })).status,
    ).toBe(201);
    expect((await call('POST', `/v1/models/${name}/machines`, { placement: 'lxd:0' })).status).toBe(
      201,
    );
    const probe = `x-probe-${randomBytes(4).toString('hex')}`;
    const res = await call(
      'POST',
      `/v1/models/${name}/machines/0%2Flxd%2F0/reprovision`,
      undefined,
      {
        [probe]: 'yes',
      },
    );
    expect([res.status, await res.json()]).toEqual([
      409,
      {
        error: {
          code: 'conflict',
          message: 'machine 0/lxd/0 is not provisioned by the provisioner',
        },
      },
    ]);
    const seen = recorded(stack.lambdaEventsFile!).filter((r) =>
      r.event?.headerNames.includes(probe),
    );
    expect(seen).toHaveLength(1);
    const [{ functionName, event }] = seen as [Required<Recorded>];
    expect(functionName).toBe('Api-MachinesHandler');
    expect(event).toMatchObject({
      routeKey: 'POST /v1/models/{model}/machines/{id+}',
      rawPath: `/v1/models/${name}/machines/0/lxd/0/reprovision`,
      requestContext: { routeKey: 'POST /v1/models/{model}/machines/{id+}' },
    });
    expect([...event.pathParameterNames].sort()).toEqual(['id', 'model']);
    expect((await call('DELETE', `/v1/models/${name}`)).status).toBeLessThan(300);
  });

  describe('a bundle whose handler export was renamed', () => {
    let dir = '';
    let server: ChildProcess | undefined;
    afterEach(async () => {
      if (server?.pid !== undefined && server.exitCode === null) {
        const gone = new Promise((resolve) => server!.once('exit', resolve));
        process.kill(-server.pid, 'SIGKILL');
        await gone;
      }
      server = undefined;
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** A private shipped API: the models function's routes (and `$default`), to its bundle copied to `assetDir`. */
    async function serve(assetDir: string): Promise<{ url: string; events: string }> {
      const plan = JSON.parse(readFileSync(stack.shippedApiPlan!, 'utf8')) as ShippedApiPlan;
      const [id, models] = Object.entries(plan.functions).find(
        ([, f]) => f.name === 'Api/ModelsHandler',
      )!;
      const events = join(dir, `events-${randomBytes(2).toString('hex')}.jsonl`);
      const own: ShippedApiPlan = {
        routes: plan.routes.filter((r) => r.functionLogicalId === id),
        functions: {
          [id]: {
            ...models,
            assetDir,
            environment: {
              ...models.environment,
              LAMBDA_TASK_ROOT: assetDir,
              PROVISIONER_LAMBDA_EVENTS_FILE: events,
            },
          },
        },
      };
      const planFile = join(dir, `plan-${randomBytes(2).toString('hex')}.json`);
      writeFileSync(planFile, JSON.stringify(own));
      const port = await freePort();
      server = spawn(
        process.execPath,
        ['--import', 'tsx', join(PROJECT_ROOT, 'local/api-server-shipped.ts')],
        {
          cwd: PROJECT_ROOT,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            PROVISIONER_API_PORT: String(port),
            [SHIPPED_API_PLAN_ENV]: planFile,
          },
          stdio: 'ignore',
          detached: true,
        },
      );
      const url = `http://127.0.0.1:${port}`;
      // a loaded machine takes a while to load a bundle: wait until its init is recorded
      for (let i = 0; i < 240 && !recorded(events).some((r) => r.init); i++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      return { url, events };
    }

    it('answers API Gateway’s 500 with the runtime’s HandlerNotFound, where an intact copy answers', async () => {
      dir = mkdtempSync(join(tmpdir(), 'provisioner-broken-bundle-'));
      const plan = JSON.parse(readFileSync(stack.shippedApiPlan!, 'utf8')) as ShippedApiPlan;
      const models = Object.values(plan.functions).find((f) => f.name === 'Api/ModelsHandler')!;

      // control: the same bundle, copied as it is
      const intact = join(dir, 'intact');
      cpSync(models.assetDir, intact, { recursive: true });
      const good = await serve(intact);
      const ok = await fetch(`${good.url}/v1/models`, { headers: auth });
      expect(ok.status).toBe(200);
      expect(recorded(good.events).find((r) => r.init)?.init).toBe('ok');
      process.kill(-server!.pid!, 'SIGKILL');

      // the export CDK's `Handler: index.handler` names, renamed in the bundle
      const broken = join(dir, 'broken');
      cpSync(models.assetDir, broken, { recursive: true });
      const code = readFileSync(join(broken, 'index.js'), 'utf8');
      expect(code.split('handler:()=>').length - 1).toBe(1);
      writeFileSync(join(broken, 'index.js'), code.replace('handler:()=>', 'handlr:()=>'));
      const bad = await serve(broken);
      const res = await fetch(`${bad.url}/v1/models`, { headers: auth });
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ message: 'Internal Server Error' });
      expect(recorded(bad.events).find((r) => r.init)).toMatchObject({
        init: 'Runtime.HandlerNotFound',
        handler: 'index.handler',
      });
    }, 300_000);
  });
});
