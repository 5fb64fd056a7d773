import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freePort,
  spawnManaged,
  waitUntilHealthy,
  type ManagedProcess,
} from '../../local/processes';
import { tsEntry } from '../../local/stack';
import { startDynamoFaultProxy, type DynamoFaultProxy } from '../support/dynamodb-fault-proxy';
import { apiClient, uniqueName } from './api-client';
import { addUserAndLogIn } from './identity-support';
import { loadTestStack, type StackInfo } from './stack';
import { stackEnv } from '../support/stack-process';

/**
 * What happens when the audit write fails (README, "Audit"): a second API
 * server on the same table, Temporal and pool, whose DynamoDB goes through a
 * proxy that refuses the audit log's writes. The request's effect stands and
 * its answer is the operation's own; the failure is logged with the entry
 * and counted (the `AuditWriteFailures` metric).
 */
const stack = loadTestStack();
let dynamo: DynamoFaultProxy;
let server: ManagedProcess;
let faulty: StackInfo;
let logFile: string;

beforeAll(async () => {
  dynamo = await startDynamoFaultProxy(stack.dynamodbEndpoint);
  const port = await freePort();
  logFile = join(mkdtempSync(join(tmpdir(), 'audit-failure-')), 'api.log');
  const [cmd, args] = tsEntry('local/api-server-main.ts');
  server = spawnManaged('api-audit-failure', cmd, args, {
    cwd: join(__dirname, '..', '..'),
    logFile,
    env: {
      ...stackEnv(stack, { dynamodb: dynamo.url }),
      PROVISIONER_API_TOKEN: stack.token,
      PROVISIONER_API_PORT: String(port),
      PROVISIONER_USER_POOL_ID: stack.userPoolId,
      PROVISIONER_USER_POOL_CLIENT_ID: stack.userPoolClientId,
      PROVISIONER_COGNITO_ENDPOINT: stack.cognitoEndpoint,
    },
  });
  faulty = { ...stack, apiUrl: `http://127.0.0.1:${port}` };
  await waitUntilHealthy(
    server,
    'second API server',
    async () => (await fetch(`${faulty.apiUrl}/v1/auth`)).status === 200,
    60_000,
  );
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await dynamo?.close();
});

describe('an audit write that fails', () => {
  it('loses nothing: the change stands, the answer is the operation’s, the failure is logged and counted', async () => {
    const user = uniqueName('auditless');
    const session = await addUserAndLogIn(stack, user);
    expect((await apiClient(stack).put(`/v1/access/${user}`, { access: 'add-model' })).status).toBe(
      200,
    );
    dynamo.set({
      action: 'PutItem',
      bodyIncludes: ['"AUDIT#'],
      errorType: 'ValidationException',
      message: 'audit writes refused by the test',
    });
    const model = uniqueName('unaudited');
    const created = await apiClient(faulty, session.accessToken).post('/v1/models', {
      name: model,
    });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe(model);
    // a refusal (403) is answered as it was, too
    expect(await apiClient(faulty, session.accessToken).get('/v1/users')).toEqual({
      status: 403,
      body: { error: { code: 'forbidden', message: 'permission denied' } },
    });
    expect(dynamo.refused()).toBeGreaterThanOrEqual(2);
    dynamo.clear();

    // the model is there, and its creator is its admin; no entry was written for it
    expect((await session.api.get(`/v1/models/${model}`)).status).toBe(200);
    expect((await session.api.get(`/v1/models/${model}/access`)).body.users).toEqual([
      { user, access: 'admin' },
    ]);
    expect((await session.api.get(`/v1/models/${model}/audit`)).body.entries).toEqual([]);

    const failures = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes('audit entry not written'))
      .map((line) => JSON.parse(line) as Record<string, any>);
    expect(failures).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 'ERROR',
          AuditWriteFailures: 1,
          audit: expect.objectContaining({
            user,
            method: 'POST',
            path: '/v1/models',
            model,
            status: 201,
          }),
        }),
        expect.objectContaining({
          audit: expect.objectContaining({ user, method: 'GET', path: '/v1/users', status: 403 }),
        }),
      ]),
    );
    expect(failures[0]?._aws?.CloudWatchMetrics?.[0]?.Metrics).toEqual([
      { Name: 'AuditWriteFailures', Unit: 'Count' },
    ]);
  });

  it('a hanging audit write is given up after a bounded wait: the answer goes out, the failure is logged', async () => {
    const user = uniqueName('slowaudit');
    const session = await addUserAndLogIn(stack, user);
    expect((await apiClient(stack).put(`/v1/access/${user}`, { access: 'add-model' })).status).toBe(
      200,
    );
    const before = dynamo.refused();
    // DynamoDB answers the audit write only after API Gateway would have given up (29 s)
    dynamo.set({
      action: 'PutItem',
      bodyIncludes: ['"AUDIT#', `"${user}"`],
      errorType: '',
      message: '',
      delayMs: 120_000,
    });
    const model = uniqueName('slowaudited');
    const started = Date.now();
    const created = await apiClient(faulty, session.accessToken).post('/v1/models', {
      name: model,
    });
    const tookMs = Date.now() - started;
    dynamo.clear();
    expect(created.status).toBe(201);
    expect(dynamo.refused()).toBe(before + 1);
    // the audit write's own limit is 2 s; the rest is a busy machine's slack
    expect(tookMs).toBeLessThan(20_000);
    console.log(`[timing] a create whose audit write hangs answered in ${tookMs} ms`);
    expect((await session.api.get(`/v1/models/${model}`)).status).toBe(200);
    const failure = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes('audit entry not written') && line.includes(model))
      .map((line) => JSON.parse(line) as Record<string, any>);
    expect(failure).toHaveLength(1);
    expect(failure[0]).toMatchObject({
      AuditWriteFailures: 1,
      audit: { user, method: 'POST', path: '/v1/models', model, status: 201 },
    });
    expect(failure[0]?.error).toMatch(/Abort|Timeout/);
  }, 120_000);
});
