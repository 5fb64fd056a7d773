import { TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { workflowMetadataQuery } from '@temporalio/workflow';
import {
  CONTROLLER_LEVELS,
  MODEL_LEVELS,
  controllerAtLeast,
  modelAtLeast,
  type ControllerAccess,
  type ModelAccess,
} from '../../core/access';
import type { RouteAccess } from '../../core/access';
import { GATEWAY_ROUTES, ROUTES, type HttpMethod } from '../../functions/routes';
import { machineWorkflowId } from '../../temporal/search-attributes';
import { apiClient, eventually, uniqueName } from './api-client';
import { addUserAndLogIn } from './identity-support';
import { ec2ClientFor, loadTestStack } from './stack';

/**
 * The route walk (issue 24): every route of functions/routes.ts, called by a
 * caller of each access level with real pool tokens, answers as its level
 * says: allowed, `403 permission denied`, or (no access to the model) the
 * very 404 of a missing model. A route added without a level fails the type
 * check of the table; one whose enforcement drifts fails here.
 */
const stack = loadTestStack();
const admin = apiClient(stack);

interface Walker {
  label: string;
  controller: ControllerAccess;
  model?: ModelAccess;
  api: ReturnType<typeof apiClient>;
  token: string;
}

/**
 * What the walk asks: every route of ROUTES, and every route of
 * GATEWAY_ROUTES as each documented route it serves (a container id the
 * gateway decoded into segments, `0/lxd/1`), with that route's access.
 */
interface WalkedRoute {
  method: HttpMethod;
  path: string;
  access: RouteAccess;
  /** A gateway route's path is no route of the OpenAPI document: asked without the client's check. */
  gateway: boolean;
}

const WALKED: Array<readonly [string, WalkedRoute]> = [
  ...ROUTES.map(
    (r) =>
      [
        `${r.method} ${r.path}`,
        { method: r.method, path: r.path, access: r.access, gateway: false },
      ] as const,
  ),
  ...GATEWAY_ROUTES.flatMap((g) =>
    g.serves.map((key) => {
      const served = ROUTES.find((r) => `${r.method} ${r.path}` === key)!;
      const path = served.path.replace('{id}', '0/lxd/1');
      return [
        `${g.method} ${g.path} as ${key}`,
        { method: g.method, path, access: served.access, gateway: true },
      ] as const;
    }),
  ),
];

/** A request without the client's OpenAPI check, for the gateway's paths. */
async function raw(
  token: string | null,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...headers,
    },
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

const PARAMS: Record<string, string> = {
  app: 'nosuchapp',
  id: '999',
  n: '0',
  name: 'nosuchuser',
  user: 'nosuchuser',
};

/** Makes any state-changing call stop right after the access check: a 400 for its key, and no effect. */
const STOP_AFTER_ACCESS = { 'idempotency-key': 'not a valid key' };

describe('every route, at every access level', () => {
  const model = uniqueName('walk');
  const walkers: Walker[] = [];

  beforeAll(async () => {
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    walkers.push({
      label: 'admin token',
      controller: 'superuser',
      model: 'admin',
      api: admin,
      token: stack.token,
    });
    for (const controller of CONTROLLER_LEVELS) {
      const session = await addUserAndLogIn(stack, uniqueName(`w-${controller}`));
      if (controller !== 'login') {
        const name = (await session.api.get('/v1/whoami')).body.user as string;
        expect((await admin.put(`/v1/access/${name}`, { access: controller })).status).toBe(200);
      }
      walkers.push({
        label: `controller ${controller}`,
        controller,
        ...(controller === 'superuser' ? { model: 'admin' as const } : {}),
        api: session.api,
        token: session.accessToken,
      });
    }
    for (const level of MODEL_LEVELS) {
      const name = uniqueName(`w-${level}`);
      const session = await addUserAndLogIn(stack, name);
      expect(
        (await admin.put(`/v1/models/${model}/access/${name}`, { access: level })).status,
      ).toBe(200);
      walkers.push({
        label: `model ${level}`,
        controller: 'login',
        model: level,
        api: session.api,
        token: session.accessToken,
      });
    }
  }, 180_000);

  it.each(WALKED)('%s', async (_key, route) => {
    const path = route.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
      name === 'model' ? model : (PARAMS[name] ?? 'x'),
    );
    const mutating = route.method !== 'GET';
    const hiddenBody = { error: { code: 'not-found', message: `model "${model}" not found` } };
    const seen: string[] = [];
    const expected: string[] = [];

    const headers = mutating ? STOP_AFTER_ACCESS : {};
    const ask = (walker: Walker | undefined) =>
      route.gateway
        ? raw(walker ? walker.token : null, route.method, path, headers)
        : (walker ? walker.api : apiClient(stack, null)).call(
            route.method,
            path,
            undefined,
            undefined,
            headers,
          );
    const anonymous = await ask(undefined);
    seen.push(
      `anonymous ${anonymous.status >= 500 ? serverError(anonymous) : anonymous.status === 401 ? 'unauthorized' : 'allowed'}`,
    );
    expected.push(`anonymous ${route.access.kind === 'none' ? 'allowed' : 'unauthorized'}`);

    for (const walker of walkers) {
      const res = await ask(walker);
      // a 5xx is never an answer to a caller's access, whatever the level: it fails the walk
      const outcome =
        res.status >= 500
          ? serverError(res)
          : res.status === 403
            ? res.body.error.message === 'permission denied'
              ? 'denied'
              : `403 ${JSON.stringify(res.body)}`
            : res.status === 404 && JSON.stringify(res.body) === JSON.stringify(hiddenBody)
              ? 'hidden'
              : res.status === 401
                ? 'unauthorized'
                : 'allowed';
      seen.push(`${walker.label} ${outcome}`);
      const access = route.access;
      const want =
        access.kind === 'none'
          ? 'allowed'
          : access.kind === 'controller'
            ? controllerAtLeast(walker.controller, access.level)
              ? 'allowed'
              : 'denied'
            : walker.model === undefined
              ? 'hidden'
              : modelAtLeast(walker.model, access.level)
                ? 'allowed'
                : 'denied';
      expected.push(`${walker.label} ${want}`);
    }
    expect(seen).toEqual(expected);
  });

  /**
   * No access is a model that does not exist (API.md): on every route of a
   * model, a caller without a grant gets, for the model that exists, the very
   * answer (status and whole body, but for the name) they get for one that
   * does not; and the superuser's answer for a model that does not exist on
   * the reads and deletes (which need no body) is that answer too, but for
   * the model's audit, which outlives the model.
   */
  const nowhere = uniqueName('walk-nowhere');
  it.each(WALKED.filter(([, r]) => r.access.kind === 'model'))(
    'no access to the model is its absence: %s',
    async (_key, route) => {
      const pathOf = (m: string) =>
        route.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
          name === 'model' ? m : (PARAMS[name] ?? 'x'),
        );
      const mutating = route.method !== 'GET';
      const ask = (walker: Walker, m: string, headers = mutating ? STOP_AFTER_ACCESS : {}) =>
        route.gateway
          ? raw(walker.token, route.method, pathOf(m), headers)
          : walker.api.call(route.method, pathOf(m), undefined, undefined, headers);
      const missing = (m: string) => ({
        status: 404,
        body: { error: { code: 'not-found', message: `model "${m}" not found` } },
      });
      const outsiders = walkers.filter((w) => w.model === undefined);
      expect(outsiders.map((w) => w.label)).toEqual(['controller login', 'controller add-model']);
      for (const outsider of outsiders) {
        expect(await ask(outsider, model)).toEqual(missing(model));
        expect(await ask(outsider, nowhere)).toEqual(missing(nowhere));
      }
      // a superuser reads the audit of a model that is gone: its entries outlive it (API.md)
      const outlives = route.method === 'GET' && route.path === '/v1/models/{model}/audit';
      if ((route.method === 'GET' || route.method === 'DELETE') && !outlives) {
        expect(await ask(walkers[0]!, nowhere, {})).toEqual(missing(nowhere));
      }
    },
  );

  /**
   * `$default`: a path the table does not have, or a path it has asked with a
   * method it lacks (404 today; 405 once the API answers method-not-allowed).
   * A token is needed first; then every caller gets the very same answer,
   * whatever their level and whether or not the model exists or is theirs.
   */
  const missing = uniqueName('walk-missing');
  it.each([
    ['GET', '/v1/nosuch'],
    ['POST', '/v1/nosuch/deeper'],
    ['GET', `/v1/models/${model}/nosuch`],
    ['DELETE', `/v1/models/${model}/nosuch/deeper`],
    ['PATCH', '/v1/whoami'],
    ['DELETE', '/v1/auth'],
    ['POST', `/v1/models/${model}/status`],
    ['PUT', `/v1/models/${model}`],
  ] as const)('unmatched: %s %s', async (method, path) => {
    const ask = (api: ReturnType<typeof apiClient>, p: string) =>
      api.call(method, p, undefined, undefined, method === 'GET' ? {} : STOP_AFTER_ACCESS);
    const anonymous = await ask(apiClient(stack, null), path);
    expect({ status: anonymous.status, code: anonymous.body?.error?.code }).toEqual({
      status: 401,
      code: 'unauthorized',
    });
    const answers = [];
    for (const walker of walkers) {
      const res = await ask(walker.api, path);
      answers.push({ walker: walker.label, status: res.status, body: res.body });
    }
    const first = answers[0]!;
    expect(first.status).toBeLessThan(500);
    expect([404, 405]).toContain(first.status);
    expect(first.body.error.code).toMatch(/^(not-found|method-not-allowed)$/);
    // nothing about the model in it: not whether it exists, nor whose it is
    expect(first.body.error.message).not.toMatch(/model ".*" not found|permission denied/);
    expect(answers).toEqual(
      walkers.map((w) => ({ walker: w.label, status: first.status, body: first.body })),
    );
    // the same route under a model that does not exist answers the same, but for the name
    if (path.includes(model)) {
      const other = await ask(admin, path.replace(model, missing));
      expect(other.status).toBe(first.status);
      expect(JSON.stringify(other.body)).toBe(
        JSON.stringify(first.body).split(model).join(missing),
      );
    }
  });
});

function serverError(res: { status: number; body: unknown }): string {
  return `5xx ${res.status} ${JSON.stringify(res.body)}`;
}

describe('who asked, in Temporal', () => {
  let connection: Connection;
  let client: Client;
  beforeAll(async () => {
    connection = await Connection.connect({ address: stack.temporalAddress });
    client = new Client({ connection, namespace: stack.temporalNamespace });
  });
  afterAll(async () => {
    await connection.close();
  });

  it('a machine’s workflow names the user who added it and the one who last retried it', async () => {
    const model = uniqueName('asked');
    const writerName = uniqueName('writer');
    const writer = await addUserAndLogIn(stack, writerName);
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    expect(
      (await admin.put(`/v1/models/${model}/access/${writerName}`, { access: 'write' })).status,
    ).toBe(200);
    // no instance type has 4,096 cores: the machine ends in error at once, so it can be retried
    const added = await writer.api.post(`/v1/models/${model}/machines`, {
      constraints: 'cores=4096',
    });
    expect(added.status).toBe(201);
    const id = added.body.machines[0].id as string;
    const handle = client.workflow.getHandle(machineWorkflowId(model, id));
    await eventually(
      () =>
        handle
          .describe()
          .then(() => true)
          .catch(() => false),
      Boolean,
      30_000,
    );
    expect(await (await handle.describe()).staticDetails()).toBe(`Requested by ${writerName}`);
    await eventually(
      () => admin.get(`/v1/models/${model}/machines/${id}`),
      (r) => r.body?.status === 'error',
      90_000,
    );
    const details = () => handle.query(workflowMetadataQuery).then((m) => m.currentDetails ?? '');
    expect(await details()).toContain(`**requested by** ${writerName}`);
    expect((await admin.post(`/v1/models/${model}/machines/${id}/retry`, {})).status).toBe(202);
    await eventually(details, (d) => d.includes('**requested by** admin'), 30_000);
    expect((await admin.delete(`/v1/models/${model}`)).status).toBe(202);
  });

  it('a reprovision names the user who asked for it in the current details', async () => {
    const model = uniqueName('reasked');
    const creatorName = uniqueName('creator');
    const fixerName = uniqueName('fixer');
    const creator = await addUserAndLogIn(stack, creatorName);
    const fixer = await addUserAndLogIn(stack, fixerName);
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    for (const name of [creatorName, fixerName]) {
      expect(
        (await admin.put(`/v1/models/${model}/access/${name}`, { access: 'write' })).status,
      ).toBe(200);
    }
    const added = await creator.api.post(`/v1/models/${model}/machines`, {});
    expect(added.status).toBe(201);
    const id = added.body.machines[0].id as string;
    const running = await eventually(
      () => admin.get(`/v1/models/${model}/machines/${id}`),
      // the launch records the instance; EC2's own state comes later, with a sweep (not needed here)
      (r) => r.body?.status === 'running' && typeof r.body?.instanceId === 'string',
      180_000,
    );
    const instanceId = running.body.instanceId as string;
    const handle = client.workflow.getHandle(machineWorkflowId(model, id));
    const details = () => handle.query(workflowMetadataQuery).then((m) => m.currentDetails ?? '');
    expect(await details()).toContain(`**requested by** ${creatorName}`);
    expect(await (await handle.describe()).staticDetails()).toBe(`Requested by ${creatorName}`);

    // the instance goes behind the provisioner's back; the fixer asks for a new one
    const ec2 = ec2ClientFor(stack);
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    ec2.destroy();
    // reprovision asks EC2 itself whether the instance is gone (no sweep needed): until EC2
    // lists it terminated it is a 409, then 202
    const asked = await eventually(
      () => fixer.api.post(`/v1/models/${model}/machines/${id}/reprovision`, {}),
      (r) => r.status !== 409,
      120_000,
      1_000,
    );
    expect(asked.status).toBe(202);
    await eventually(details, (d) => d.includes(`**requested by** ${fixerName}`), 30_000);
    expect(await details()).not.toContain(`**requested by** ${creatorName}`);
    expect((await admin.delete(`/v1/models/${model}`)).status).toBe(202);
  }, 300_000);

  it('machines started by the bulk starter (more than 20 in one request) name who asked too', async () => {
    const model = uniqueName('bulk-asked');
    const writerName = uniqueName('bulk-writer');
    const writer = await addUserAndLogIn(stack, writerName);
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    expect(
      (await admin.put(`/v1/models/${model}/access/${writerName}`, { access: 'write' })).status,
    ).toBe(200);
    // DIRECT_START_LIMIT (service/workflows.ts) is 20: 21 go through startMachinesWorkflow
    const added = await writer.api.post(`/v1/models/${model}/machines`, {
      count: 21,
      constraints: 'cores=4096',
    });
    expect(added.status).toBe(201);
    const ids = (added.body.machines as Array<{ id: string }>).map((m) => m.id);
    expect(ids).toHaveLength(21);
    const staticDetails = (id: string) =>
      client.workflow
        .getHandle(machineWorkflowId(model, id))
        .describe()
        .then((d) => d.staticDetails())
        .catch(() => 'no workflow yet');
    const all = await eventually(
      () => Promise.all(ids.map(staticDetails)),
      (seen) => seen.every((d) => d !== 'no workflow yet'),
      120_000,
      1_000,
    );
    expect(all).toEqual(ids.map(() => `Requested by ${writerName}`));
    expect((await admin.delete(`/v1/models/${model}`)).status).toBe(202);
  }, 180_000);
});
