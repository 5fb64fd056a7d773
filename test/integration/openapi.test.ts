import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openApiDocument } from '../../functions/openapi-document';
import { apiClient, uniqueName } from './api-client';
import { loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);

describe('GET /v1/openapi.json', () => {
  it('serves the document built from the schemas, to an authenticated caller only', async () => {
    const res = await api.get('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    expect(res.body.openapi).toBe('3.1.0');

    const anonymous = await apiClient(stack, null).get('/v1/openapi.json');
    expect(anonymous).toEqual({
      status: 401,
      body: { error: { code: 'unauthorized', message: 'missing or invalid bearer token' } },
    });
  });
});

describe('the shared client’s response check', () => {
  let server: Server;
  let url: string;

  /**
   * The real stack behind a proxy that answers one route with a shape the
   * document does not allow, as a drifted handler would.
   */
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url?.startsWith('/v1/models/') && req.method === 'GET') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ name: 'drifted', region: 'us-east-1' }));
        return;
      }
      void fetch(`${stack.apiUrl}${req.url ?? '/'}`, {
        method: req.method,
        headers: { authorization: req.headers.authorization ?? '' },
      }).then(async (upstream) => {
        res.statusCode = upstream.status;
        res.setHeader('content-type', 'application/json');
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fails the call whose response drifts from the document, and names what drifted', async () => {
    const drifted = apiClient({ ...stack, apiUrl: url });
    await expect(drifted.get(`/v1/models/${uniqueName('drift')}`)).rejects.toThrow(
      /response does not match the OpenAPI document:\nGET \/v1\/models\/\S+ → 200: body must have required property 'constraints'/,
    );
    // the same client passes a response that keeps to it
    expect((await drifted.get('/v1/models')).status).toBe(200);
  });
});
