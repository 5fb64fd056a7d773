import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';

/** Headers that belong to one connection and are never passed on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** `headers` without hop-by-hop headers (including any the Connection header names). */
export function endToEndHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  return out;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: string;
}

export class UpstreamUnreachableError extends Error {
  override readonly name = 'UpstreamUnreachableError';
}

export async function readBody(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** moto, reached over plain HTTP with a keep-alive agent. */
export class Upstream {
  private readonly base: URL;
  private readonly agent = new http.Agent({ keepAlive: true });

  constructor(baseUrl: string) {
    this.base = new URL(baseUrl);
    if (this.base.protocol !== 'http:') {
      throw new Error(`EC2 proxy upstream must be an http:// URL, got ${baseUrl}`);
    }
  }

  /** Sends a request to moto; resolves with its answer still streaming. */
  request(
    method: string,
    path: string,
    headers: OutgoingHttpHeaders,
    body: Buffer,
  ): Promise<IncomingMessage> {
    const basePath = this.base.pathname.replace(/\/$/, '');
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          protocol: 'http:',
          hostname: this.base.hostname,
          port: this.base.port,
          method,
          path: basePath + path,
          headers: { ...headers, 'content-length': String(body.length) },
          agent: this.agent,
        },
        resolve,
      );
      req.on('error', (err) =>
        reject(new UpstreamUnreachableError(`moto at ${this.base.origin}: ${err.message}`)),
      );
      req.end(body);
    });
  }

  /** Sends a request to moto and reads its whole answer. */
  async fetch(
    method: string,
    path: string,
    headers: OutgoingHttpHeaders,
    body: Buffer,
  ): Promise<UpstreamAnswer> {
    const res = await this.request(method, path, headers, body);
    const data = await readBody(res);
    return {
      status: res.statusCode ?? 502,
      headers: endToEndHeaders(res.headers),
      body: data.toString('utf8'),
    };
  }

  close(): void {
    this.agent.destroy();
  }
}
