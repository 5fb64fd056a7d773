import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from '../../../cli/client';
import { ApiError } from '../../../cli/errors';
import { freeLoopbackPort } from './ports';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('the API client', () => {
  let server: Server;
  let apiUrl: string;
  const seen: Seen[] = [];
  let reply: (s: Seen) => { status: number; body: string } = () => ({ status: 200, body: '{}' });

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const s = { method: req.method!, url: req.url!, headers: req.headers, body };
        seen.push(s);
        const r = reply(s);
        res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
  });

  it('sends the bearer token, JSON, and a fresh Idempotency-Key on each mutating request only', async () => {
    const client = createClient({ apiUrl: `${apiUrl}/`, token: 'tok-123' });
    await client.request('POST', '/v1/models', { name: 'a' });
    await client.request('POST', '/v1/models', { name: 'a' });
    await client.request('DELETE', '/v1/models/a');
    await client.get('/v1/models');
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /v1/models',
      'POST /v1/models',
      'DELETE /v1/models/a',
      'GET /v1/models',
    ]);
    expect(seen[0]!.headers.authorization).toBe('Bearer tok-123');
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(seen[0]!.body).toBe('{"name":"a"}');
    const keys = seen.slice(0, 3).map((s) => s.headers['idempotency-key']);
    for (const k of keys) expect(k).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(3);
    expect(seen[3]!.headers['idempotency-key']).toBeUndefined();
  });

  it("turns the API's error body into an ApiError with its status, code and message", async () => {
    reply = () => ({
      status: 400,
      body: JSON.stringify({
        error: { code: 'invalid-constraints', message: 'bad "mem" constraint: already set' },
      }),
    });
    const err = await createClient({ apiUrl, token: 't' })
      .request('PUT', '/v1/models/a/constraints', { constraints: 'mem=1G mem=2G' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      status: 400,
      code: 'invalid-constraints',
      message: 'bad "mem" constraint: already set',
    });
  });

  it('an answer without the error shape still says what failed', async () => {
    reply = () => ({ status: 502, body: '<html>bad gateway</html>' });
    await expect(createClient({ apiUrl, token: 't' }).get('/v1/models')).rejects.toThrow(
      'GET /v1/models: HTTP 502',
    );
  });

  it('connection refused: one line with the "npm start" hint, never the token', async () => {
    const port = await freeLoopbackPort();
    const err = (await createClient({ apiUrl: `http://127.0.0.1:${port}`, token: 'very-secret' })
      .get('/v1/models')
      .catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(
      `cannot connect to the provisioner API at http://127.0.0.1:${port}: connection refused (is the local stack up? start it with "npm start")`,
    );
    expect(err.message).not.toContain('very-secret');
  });
});
