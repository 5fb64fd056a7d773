import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freePort,
  spawnManaged,
  waitUntilHealthy,
  type ManagedProcess,
} from '../../local/processes';
import { tsEntry } from '../../local/stack';
import { documentClient } from '../../state/table';
import { apiClient, uniqueName } from './api-client';
import { addUserAndLogIn } from './identity-support';
import { stackEnv } from '../support/stack-process';
import { dynamoClientFor, loadTestStack, type StackInfo } from './stack';

/**
 * The deployment's identity settings (README, "Identity, access and audit"),
 * on a second API server over the same table, Temporal and pool as the test
 * stack's: `PROVISIONER_ADMIN_TOKEN_DISABLED=true` switches the admin token
 * off (only the pool's users get in), and `PROVISIONER_AUDIT_RETENTION_DAYS`
 * sets how long DynamoDB's TTL keeps an audit entry.
 */
const stack = loadTestStack();
const admin = apiClient(stack);
const ddb = dynamoClientFor(stack);
const doc = documentClient(ddb);
const RETENTION_DAYS = 7;
let server: ManagedProcess;
let off: StackInfo;
let superuser: string;

beforeAll(async () => {
  superuser = uniqueName('root');
  const session = await addUserAndLogIn(stack, superuser);
  expect((await admin.put(`/v1/access/${superuser}`, { access: 'superuser' })).status).toBe(200);
  const port = await freePort();
  const [cmd, args] = tsEntry('local/api-server-main.ts');
  server = spawnManaged('api-admin-token-off', cmd, args, {
    cwd: join(__dirname, '..', '..'),
    logFile: join(mkdtempSync(join(tmpdir(), 'identity-settings-')), 'api.log'),
    env: {
      ...stackEnv(stack),
      // still set (the local server needs one): switched off, it must open nothing
      PROVISIONER_API_TOKEN: stack.token,
      PROVISIONER_API_PORT: String(port),
      PROVISIONER_USER_POOL_ID: stack.userPoolId,
      PROVISIONER_USER_POOL_CLIENT_ID: stack.userPoolClientId,
      PROVISIONER_COGNITO_ENDPOINT: stack.cognitoEndpoint,
      PROVISIONER_ADMIN_TOKEN_DISABLED: 'true',
      PROVISIONER_AUDIT_RETENTION_DAYS: String(RETENTION_DAYS),
    },
  });
  // the client checks answers against the OpenAPI document, which it reads with `token`
  off = { ...stack, apiUrl: `http://127.0.0.1:${port}`, token: session.accessToken };
  await waitUntilHealthy(
    server,
    'API server with the admin token off',
    async () => (await fetch(`${off.apiUrl}/v1/auth`)).status === 200,
    60_000,
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
  ddb.destroy();
});

/** The audit items of one model's partition, straight from the table (TTL attribute included). */
async function auditItems(model: string): Promise<Array<Record<string, any>>> {
  const out = await doc.send(
    new QueryCommand({
      TableName: stack.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `AUDIT#MODEL#${model}` },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

describe('the admin token switched off', () => {
  it('the admin token is refused like any wrong token, on every kind of route', async () => {
    const unauthorized = {
      status: 401,
      body: { error: { code: 'unauthorized', message: expect.any(String) } },
    };
    for (const [method, path] of [
      ['GET', '/v1/whoami'],
      ['GET', '/v1/models'],
      ['POST', '/v1/models'],
      ['GET', '/v1/users'],
      ['GET', '/v1/audit'],
    ] as const) {
      const res = await fetch(`${off.apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: JSON.stringify({ name: uniqueName('nope') }) } : {}),
      });
      expect({ path, status: res.status, body: await res.json() }).toEqual({
        path,
        ...unauthorized,
      });
    }
    // the same token on the stack's own server (admin token on) is the superuser `admin`
    expect((await admin.get('/v1/whoami')).body).toEqual({ user: 'admin', access: 'superuser' });
    // how to log in needs no token either way
    expect((await apiClient(off, null).get('/v1/auth')).body).toEqual({
      region: stack.region,
      userPoolId: stack.userPoolId,
      clientId: stack.userPoolClientId,
      endpoint: stack.cognitoEndpoint,
    });
  });

  it('a superuser of the pool does everything; `admin` is no user: not listed, not grantable', async () => {
    const root = apiClient(off);
    expect((await root.get('/v1/whoami')).body).toEqual({ user: superuser, access: 'superuser' });
    const users = (await root.get('/v1/users')).body.users as Array<{ name: string }>;
    expect(users.map((u) => u.name)).toContain(superuser);
    expect(users.map((u) => u.name)).not.toContain('admin');
    // the stack's server, admin token on, lists it
    expect((await admin.get('/v1/users')).body.users).toContainEqual({
      name: 'admin',
      access: 'superuser',
    });
    const model = uniqueName('tokenoff');
    expect((await root.post('/v1/models', { name: model })).status).toBe(201);
    expect(await root.put(`/v1/models/${model}/access/admin`, { access: 'read' })).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'user "admin" not found' } },
    });
    expect((await root.delete(`/v1/models/${model}`)).status).toBe(202);
  });
});

describe('audit retention (PROVISIONER_AUDIT_RETENTION_DAYS)', () => {
  it('an entry expires by DynamoDB TTL the configured days after its time; 90 by default', async () => {
    const model = uniqueName('ttl');
    // written by the server with 7 days
    expect((await apiClient(off).post('/v1/models', { name: model })).status).toBe(201);
    // written by the stack's server, which leaves the setting at its default
    expect(
      (await admin.put(`/v1/models/${model}/constraints`, { constraints: 'mem=2G' })).status,
    ).toBe(200);
    const items = await auditItems(model);
    const expiry = (item: Record<string, any>) => ({
      method: item.method,
      user: item.user,
      days: (item.expiresAt - Math.floor(Date.parse(item.time) / 1000)) / 86_400,
    });
    expect(items.map(expiry).sort((a, b) => a.method.localeCompare(b.method))).toEqual([
      { method: 'POST', user: superuser, days: RETENTION_DAYS },
      { method: 'PUT', user: 'admin', days: 90 },
    ]);
    expect((await admin.delete(`/v1/models/${model}`)).status).toBe(202);
  });
});
