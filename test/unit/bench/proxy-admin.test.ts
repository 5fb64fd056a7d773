import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  configureProxy,
  EC2_LATENCY,
  EC2_REQUEST_LIMITS,
  EC2_RESOURCE_LIMITS,
} from '../../../bench/proxy-admin';

interface Seen {
  method: string;
  path: string;
  body: unknown;
}

/** A stand-in for the proxy's admin API: `knows` says whether it has the newer parts. */
async function fakeProxy(knows: { latency: boolean; launchedInstances: boolean }) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      seen.push({ method: req.method ?? '', path: req.url ?? '', body });
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (req.url === '/_admin/limits') {
        if (body && 'launchedInstances' in body && !knows.launchedInstances) {
          return answer(400, {
            error: { code: 'bad-request', message: 'unknown field "launchedInstances"' },
          });
        }
        return answer(200, body);
      }
      if (req.url === '/_admin/latency' && knows.latency) return answer(200, body);
      return answer(404, {
        error: { code: 'not-found', message: `no admin resource at ${req.url}` },
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => server.close() };
}

describe('configureProxy', () => {
  it('sets every bucket and the latencies on a proxy that has them, with no notes', async () => {
    const proxy = await fakeProxy({ latency: true, launchedInstances: true });
    try {
      expect(await configureProxy(proxy.url)).toEqual([]);
      expect(proxy.seen).toEqual([
        {
          method: 'PUT',
          path: '/_admin/limits',
          body: { ...EC2_REQUEST_LIMITS, ...EC2_RESOURCE_LIMITS },
        },
        {
          method: 'PUT',
          path: '/_admin/latency',
          body: { runInstances: 1500, default: 50, pendingToRunning: 5000 },
        },
      ]);
      expect(EC2_LATENCY).toEqual({ runInstances: 1500, default: 50, pendingToRunning: 5000 });
      expect(EC2_REQUEST_LIMITS.runInstances).toEqual({ burst: 5, refillPerSecond: 2 });
      expect(EC2_RESOURCE_LIMITS.launchedInstances).toEqual({ burst: 1000, refillPerSecond: 2 });
    } finally {
      proxy.close();
    }
  });

  it('falls back to the request buckets on an older proxy and says what it could not set', async () => {
    const proxy = await fakeProxy({ latency: false, launchedInstances: false });
    try {
      const notes = await configureProxy(proxy.url);
      expect(notes).toEqual([
        expect.stringMatching(
          /^the proxy refused the launchedInstances bucket .*request buckets only$/,
        ),
        'the proxy has no /_admin/latency: no latency injected, instances are running at once',
      ]);
      expect(proxy.seen.map((s) => [s.method, s.path])).toEqual([
        ['PUT', '/_admin/limits'],
        ['PUT', '/_admin/limits'],
        ['PUT', '/_admin/latency'],
      ]);
      expect(proxy.seen[1]?.body).toEqual(EC2_REQUEST_LIMITS);
    } finally {
      proxy.close();
    }
  });
});
