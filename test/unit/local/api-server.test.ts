import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { connect, type AddressInfo } from 'node:net';
import {
  KEEP_ALIVE_TIMEOUT_MS,
  createApiServer,
  type LambdaHandler,
} from '../../../local/api-server';
import { ROUTE_GROUPS, type RouteGroup } from '../../../functions/routes';
import { REQUEST_TOO_LARGE } from '../../../local/shipped-api';
import { EC2_EVENTS_PATH } from '../../../local/ec2-events';

describe('local API server', () => {
  const seen: Array<{ group: RouteGroup; event: APIGatewayProxyEventV2 }> = [];
  const handlerFor =
    (group: RouteGroup): LambdaHandler =>
    (event) => {
      seen.push({ group, event });
      return Promise.resolve({
        statusCode: 200,
        headers: { 'content-type': 'application/json' },
        body: '{"ok":true}',
      });
    };
  const handlers = Object.fromEntries(ROUTE_GROUPS.map((g) => [g, handlerFor(g)])) as Record<
    RouteGroup,
    LambdaHandler
  >;
  const server = createApiServer(handlers);
  let base = '';

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  it('turns a request into an API Gateway v2 event for its route group', async () => {
    const res = await fetch(`${base}/v1/models/demo/machines/0%2Flxd%2F1?force=true`, {
      method: 'DELETE',
      headers: { Authorization: 'Bearer x' },
    });
    expect(res.status).toBe(200);
    expect(seen).toHaveLength(1);
    const { group, event } = seen[0]!;
    expect(group).toBe('machines');
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'DELETE /v1/models/{model}/machines/{id}',
      rawPath: '/v1/models/demo/machines/0%2Flxd%2F1',
      rawQueryString: 'force=true',
      queryStringParameters: { force: 'true' },
      pathParameters: { model: 'demo', id: '0/lxd/1' },
      isBase64Encoded: false,
      headers: expect.objectContaining({ authorization: 'Bearer x' }),
      requestContext: expect.objectContaining({
        http: expect.objectContaining({ method: 'DELETE' }),
        stage: '$default',
      }),
    });
    expect(event.body).toBeUndefined();
  });

  it('passes the body as text', async () => {
    await fetch(`${base}/v1/models`, { method: 'POST', body: '{"name":"a"}' });
    expect(seen[0]?.event.body).toBe('{"name":"a"}');
    expect(seen[0]?.group).toBe('models');
  });

  it('builds payload 2.0 as the HTTP API does: cookies apart, repeats joined, a form body base64-encoded', async () => {
    const body = '{"name":"a"}';
    const res = await fetch(`${base}/v1/models?tag=a&tag=b`, {
      method: 'POST',
      headers: [
        ['Content-Type', 'application/x-www-form-urlencoded'],
        ['Cookie', 'first=1; second=2'],
      ],
      body,
    });
    expect(res.status).toBe(200);
    const { event } = seen[0]!;
    expect(res.headers.get('apigw-requestid')).toBe(event.requestContext.requestId);
    expect(event).toMatchObject({
      routeKey: 'POST /v1/models',
      rawQueryString: 'tag=a&tag=b',
      queryStringParameters: { tag: 'a,b' },
      cookies: ['first=1', 'second=2'],
      isBase64Encoded: true,
      body: Buffer.from(body).toString('base64'),
    });
    expect(event.headers.cookie).toBeUndefined();
    expect(event.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(event.headers['x-forwarded-proto']).toBe('https');
    expect(event.headers['x-amzn-trace-id']).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24}$/);
    expect(event.requestContext.time).toMatch(
      /^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/,
    );
    expect(event.requestContext.http.sourceIp).toBe('127.0.0.1');
  });

  it('joins a repeated header with commas, as the HTTP API does', async () => {
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(
          'GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Extra: one\r\nX-Extra: two\r\nConnection: close\r\n\r\n',
        ),
      );
      socket.on('data', () => undefined);
      socket.on('end', () => resolve());
      socket.on('error', reject);
    });
    expect(seen[0]?.event.headers['x-extra']).toBe('one,two');
  });

  it('passes JSON and text bodies as text, and a body without a content type base64-encoded', async () => {
    await fetch(`${base}/v1/models`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: '{"name":"j"}',
    });
    expect(seen[0]?.event).toMatchObject({ body: '{"name":"j"}', isBase64Encoded: false });
    const { request } = await import('node:http');
    await new Promise<void>((resolve, reject) => {
      const req = request(`${base}/v1/models`, { method: 'POST' }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end('{"name":"n"}');
    });
    expect(seen[1]?.event).toMatchObject({
      body: Buffer.from('{"name":"n"}').toString('base64'),
      isBase64Encoded: true,
    });
  });

  it('sends unmatched paths to the $default route', async () => {
    await fetch(`${base}/nothing/here`);
    expect(seen[0]?.event.routeKey).toBe('$default');
    expect(seen[0]?.event.pathParameters).toBeUndefined();
  });

  it('answers a request target it cannot parse with 400 and stays up', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(base, { method: 'GET', path: 'http://a:99999/' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(400);
    expect(seen).toHaveLength(0);
    expect((await fetch(`${base}/v1/models`)).status).toBe(200);
  });

  it.each([
    ['an unknown method', 'BREW /v1/models HTTP/1.1\r\nhost: x\r\n\r\n'],
    ['a malformed header', 'GET /v1/models HTTP/1.1\r\nhost x\r\n\r\n'],
  ])('answers %s, which Node refuses before routing, in the error shape', async (_what, raw) => {
    const port = (server.address() as AddressInfo).port;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(raw));
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString('utf8')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'bad-request', message: 'malformed HTTP request' },
    });
    expect(seen).toHaveLength(0);
  });

  it('answers a HEAD Node refuses before routing with 400 and no body, so the client stays in step', async () => {
    // a request target with a byte Node's client sends but its server refuses (found by the fuzzer)
    const { request, Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answer = await new Promise<{ status: number; body: string; headers: object }>(
        (resolve, reject) => {
          const req = request(
            base,
            { method: 'HEAD', path: '/v1/models/caf\u00e9', agent },
            (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString('utf8')));
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, body, headers: res.headers }),
              );
            },
          );
          req.on('error', reject);
          req.end();
        },
      );
      expect(answer).toEqual({
        status: 400,
        body: '',
        headers: {
          'content-type': 'application/json',
          'content-length': '67',
          connection: 'close',
        },
      });
      // and the next request on the same agent is answered as usual
      expect((await fetch(`${base}/v1/models`)).status).toBe(200);
    } finally {
      agent.destroy();
    }
    expect(seen.map((s) => s.event.routeKey)).toEqual(['GET /v1/models']);
  });

  it('refuses a body over 512 KiB with 400 naming the limit', async () => {
    const res = await fetch(`${base}/v1/models`, {
      method: 'POST',
      body: 'x'.repeat(512 * 1024 + 1),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: 'bad-request', message: 'request body must be at most 524288 bytes' },
    });
    expect(seen).toHaveLength(0);
  });
  it('keeps an idle keep-alive connection open past Node’s 5 s default', async () => {
    // a client that looks at its pooled socket late (blocked event loop) must not find it closed
    const res = await fetch(`${base}/v1/models`);
    await res.text();
    expect(res.headers.get('keep-alive')).toBe(`timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`);
    expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThanOrEqual(60_000);

    const port = (server.address() as AddressInfo).port;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.on('close', () => (closed = true));
    const request = 'GET /v1/models HTTP/1.1\r\nHost: local\r\nConnection: keep-alive\r\n\r\n';
    const responses = () => received.split('HTTP/1.1 200').length - 1;
    const until = async (ok: () => boolean) => {
      for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
    };
    socket.write(request);
    await until(() => responses() === 1);
    await new Promise((r) => setTimeout(r, 6_000));
    expect(closed).toBe(false);
    socket.write(request);
    await until(() => responses() === 2);
    expect(responses()).toBe(2);
    socket.destroy();
  }, 20_000);
});

describe('local API server with a dispatch that sets its own body limit (the shipped path)', () => {
  const bodies: number[] = [];
  const server = createApiServer({
    route: () => ({ routeKey: '$default', target: 'Fn' }),
    invoke: (_target, event) => {
      bodies.push((event.body ?? '').length);
      return Promise.resolve({ statusCode: 200, body: 'ok' });
    },
    maxBodyBytes: 1024 * 1024,
    bodyTooLarge: REQUEST_TOO_LARGE,
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('passes a body over the handlers’ 512 KiB to the function, so its own check answers', async () => {
    const res = await fetch(`${base}/v1/models`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(600 * 1024),
    });
    expect(res.status).toBe(200);
    expect(bodies).toEqual([600 * 1024]);
  });

  it('answers a body over its limit as API Gateway does (413), without invoking the function', async () => {
    bodies.length = 0;
    const res = await fetch(`${base}/v1/models`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ message: 'Request Entity Too Large' });
    expect(bodies).toEqual([]);
  });
});

describe('local API server hosting the instance-events handler', () => {
  const events: unknown[] = [];
  const ok: LambdaHandler = () =>
    Promise.resolve({ statusCode: 404, body: '{"error":{"code":"not-found"}}' });
  const handlers = Object.fromEntries(ROUTE_GROUPS.map((g) => [g, ok])) as Record<
    RouteGroup,
    LambdaHandler
  >;
  const withEvents = createApiServer(handlers, {
    instanceEvents: (event) => {
      events.push(event);
      if ((event as { fail?: boolean }).fail) return Promise.reject(new TypeError('boom'));
      return Promise.resolve({ recorded: 'machine:demo:3' });
    },
  });
  const without = createApiServer(handlers);
  const bases: string[] = [];

  beforeAll(async () => {
    for (const server of [withEvents, without]) {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      bases.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    }
  });
  afterAll(async () => {
    for (const server of [withEvents, without]) {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  const post = (base: string, body: string) =>
    fetch(`${base}${EC2_EVENTS_PATH}`, { method: 'POST', body });

  it('hands the event as it is to the handler and answers its outcome', async () => {
    const event = { 'detail-type': 'EC2 Instance State-change Notification', detail: {} };
    const res = await post(bases[0]!, JSON.stringify(event));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ recorded: 'machine:demo:3' });
    expect(events).toEqual([event]);
  });

  it('answers 500 naming the error type when the handler throws, and 400 to a body that is not JSON', async () => {
    const failed = await post(bases[0]!, '{"fail":true}');
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ error: { code: 'internal', message: 'TypeError' } });
    const bad = await post(bases[0]!, 'not json');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { code: 'bad-request', message: 'the event is not JSON' },
    });
  });

  it('is an ordinary (unrouted) path when the server hosts no handler', async () => {
    const res = await post(bases[1]!, '{}');
    expect(res.status).toBe(404);
  });
});
