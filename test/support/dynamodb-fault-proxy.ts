import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small HTTP proxy in front of DynamoDB Local that refuses chosen requests,
 * for tests that need one DynamoDB write to fail while every other call goes
 * through (a worker pointed at it sees a real DynamoDB error, answered the way
 * DynamoDB answers). Listens on 127.0.0.1 on a free port.
 */
export interface DynamoFault {
  /** The API action, e.g. `UpdateItem` (the `X-Amz-Target` header's suffix). */
  action: string;
  /** Every one of these strings appears in the request body. */
  bodyIncludes: readonly string[];
  /** DynamoDB's error type, e.g. `ValidationException`; answered with HTTP 400. */
  errorType: string;
  message: string;
  /** Instead of refusing, hold the request this long, then forward it (a hanging call). */
  delayMs?: number;
}

export interface DynamoFaultProxy {
  url: string;
  /** Refuses matching requests until cleared. */
  set(fault: DynamoFault): void;
  clear(): void;
  /** Requests refused since the proxy started. */
  refused(): number;
  close(): Promise<void>;
}

export async function startDynamoFaultProxy(upstream: string): Promise<DynamoFaultProxy> {
  let fault: DynamoFault | undefined;
  let refused = 0;
  const held = new Set<NodeJS.Timeout>();
  const target = new URL(upstream);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const action = String(req.headers['x-amz-target'] ?? '').split('.')[1];
      const text = body.toString('utf8');
      const matched =
        fault !== undefined &&
        action === fault.action &&
        fault.bodyIncludes.every((s) => text.includes(s));
      if (matched && fault?.delayMs !== undefined) {
        refused += 1;
        const timer = setTimeout(() => {
          held.delete(timer);
          forward(req, res, body);
        }, fault.delayMs);
        held.add(timer);
        return;
      }
      if (matched && fault) {
        refused += 1;
        const answer = JSON.stringify({
          __type: `com.amazonaws.dynamodb.v20120810#${fault.errorType}`,
          message: fault.message,
        });
        res.writeHead(400, {
          'content-type': 'application/x-amz-json-1.0',
          'content-length': Buffer.byteLength(answer),
        });
        res.end(answer);
        return;
      }
      forward(req, res, body);
    });
  });
  const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => {
    if (res.destroyed) return;
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', (err) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
    up.end(body);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    set: (f) => {
      fault = f;
    },
    clear: () => {
      fault = undefined;
    },
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of held) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
