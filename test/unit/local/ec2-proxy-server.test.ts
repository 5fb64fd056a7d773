import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Ec2Proxy } from '../../../local/ec2-proxy';
import { Ec2ProxyListenError, startEc2Proxy } from '../../../local/ec2-proxy';

/** A stand-in upstream that records what reached it (the real moto is exercised in test/integration). */
interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function recordingUpstream(): Promise<{
  url: string;
  seen: Recorded[];
  close: () => Promise<void>;
}> {
  const seen: Recorded[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(207, {
        'content-type': 'text/plain',
        'x-upstream': 'yes',
        connection: 'close',
      });
      res.end('from upstream');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A request through node:http, which (unlike fetch) lets a test send hop-by-hop headers. */
function rawRequest(
  url: string,
  method: string,
  headers: http.OutgoingHttpHeaders,
  body: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('startEc2Proxy', () => {
  let proxy: Ec2Proxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it('listens on a free port and answers health', async () => {
    proxy = await startEc2Proxy({ upstream: 'http://127.0.0.1:9', port: 0 });
    expect(proxy.url).toBe(`http://127.0.0.1:${proxy.port}`);
    const res = await fetch(`${proxy.url}/_admin/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ ok: true });
  });

  it('forwards method, path, body and end-to-end headers, and answers what the upstream said', async () => {
    const upstream = await recordingUpstream();
    try {
      proxy = await startEc2Proxy({ upstream: upstream.url, port: 0 });
      const body = 'Action=DescribeRegions&Version=2016-11-15&RegionName.1=eu-west-1';
      const res = await rawRequest(
        `${proxy.url}/some/path?x=1`,
        'POST',
        {
          'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
          authorization: 'AWS4-HMAC-SHA256 Credential=k/20260101/us-east-1/ec2/aws4_request',
          'x-custom': 'kept',
          'keep-alive': 'timeout=5',
          connection: 'keep-alive, x-drop-me',
          'x-drop-me': 'gone',
        },
        body,
      );
      expect(res.status).toBe(207);
      expect(res.headers['x-upstream']).toBe('yes');
      expect(res.body).toBe('from upstream');
      const [seen] = upstream.seen;
      expect(seen).toMatchObject({ method: 'POST', url: '/some/path?x=1', body });
      expect(seen?.headers).toMatchObject({
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
        authorization: 'AWS4-HMAC-SHA256 Credential=k/20260101/us-east-1/ec2/aws4_request',
        'x-custom': 'kept',
        'content-length': String(body.length),
      });
      expect(seen?.headers['keep-alive']).toBeUndefined();
      expect(seen?.headers['x-drop-me']).toBeUndefined();
    } finally {
      await upstream.close();
    }
  });

  it('never forwards /_admin/ paths', async () => {
    const upstream = await recordingUpstream();
    try {
      proxy = await startEc2Proxy({ upstream: upstream.url, port: 0 });
      const res = await fetch(`${proxy.url}/_admin/unknown?Action=RunInstances`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({
        error: { code: 'not-found', message: 'no admin resource at /_admin/unknown' },
      });
      expect(upstream.seen).toEqual([]);
    } finally {
      await upstream.close();
    }
  });

  it('answers an EC2 error document with 502 when moto is unreachable', async () => {
    proxy = await startEc2Proxy({ upstream: 'http://127.0.0.1:9', port: 0 });
    const res = await fetch(`${proxy.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=DescribeRegions&Version=2016-11-15',
    });
    expect(res.status).toBe(502);
    expect(await res.text()).toMatch(
      /<Response><Errors><Error><Code>ServiceUnavailable<\/Code><Message>EC2 proxy: moto at http:\/\/127\.0\.0\.1:9: [^<]+<\/Message>/,
    );
  });

  it('names the port when it is taken', async () => {
    proxy = await startEc2Proxy({ upstream: 'http://127.0.0.1:9', port: 0 });
    const taken = proxy.port;
    const attempt = startEc2Proxy({ upstream: 'http://127.0.0.1:9', port: taken });
    await expect(attempt).rejects.toBeInstanceOf(Ec2ProxyListenError);
    await expect(attempt).rejects.toMatchObject({
      code: 'EADDRINUSE',
      port: taken,
      message: `EC2 proxy: port ${taken} on 127.0.0.1 is already in use`,
    });
  });

  it('refuses an upstream that is not http://', async () => {
    await expect(startEc2Proxy({ upstream: 'https://example.com', port: 0 })).rejects.toThrow(
      /must be an http:\/\/ URL/,
    );
  });
});
