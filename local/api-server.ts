import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { BODY_TOO_LARGE, LIMITS } from '../functions/limits';
import { matchRoute, routeKey, type RouteGroup } from '../functions/routes';
import { runAsComponent } from './aws-call-recorder';

export type LambdaHandler = (
  event: APIGatewayProxyEventV2,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** API Gateway HTTP API's payload limit is 10 MB; the handlers refuse more than this (functions/limits.ts). */
const MAX_BODY_BYTES = LIMITS.bodyBytes;

/**
 * Turns a Node HTTP request into the API Gateway HTTP API (payload 2.0) event
 * the cloud would deliver. Unmatched paths go to the `$default` route, which
 * the deployed API also routes to a handler, so even a 404 is authenticated
 * and has the contract's error shape.
 */
export function toApiGatewayEvent(
  req: IncomingMessage,
  body: Buffer,
  now = new Date(),
): {
  event: APIGatewayProxyEventV2;
  group: RouteGroup;
} {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const method = (req.method ?? 'GET').toUpperCase();
  const match = matchRoute(method, url.pathname);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined)
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = query[k] === undefined ? v : `${query[k]},${v}`;
  const key = match ? routeKey(match.route) : '$default';
  const text = body.toString('utf8');
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: key,
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    pathParameters:
      match && Object.keys(match.pathParameters).length ? match.pathParameters : undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: key,
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    body: text === '' ? undefined : text,
    isBase64Encoded: false,
  };
  return { event, group: match?.route.group ?? 'models' };
}

function send(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  res.statusCode = result.statusCode ?? 200;
  for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, String(v));
  const body = result.body ?? '';
  res.end(result.isBase64Encoded ? Buffer.from(body, 'base64') : body);
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  send(res, {
    statusCode: status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: { code, message } }),
  });
}

/**
 * How long an idle keep-alive connection stays open. Node's default (5 s) is
 * shorter than a busy client may go without looking at its sockets: a client
 * whose event loop was blocked (a test runner compiling a file, a loaded
 * machine) reuses a pooled connection the server closed meanwhile, and its
 * request fails with "other side closed". API Gateway keeps idle connections
 * far longer; so does this server (undici's fetch closes its own idle sockets
 * a second before the server's advertised timeout).
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export function createApiServer(handlers: Record<RouteGroup, LambdaHandler>): Server {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) {
        // 400 as the handlers answer it (API.md lists no 413); the body is not read into memory
        sendError(res, 400, 'bad-request', BODY_TOO_LARGE);
        return;
      }
      let converted: ReturnType<typeof toApiGatewayEvent>;
      try {
        converted = toApiGatewayEvent(req, Buffer.concat(chunks));
      } catch {
        sendError(res, 400, 'bad-request', 'malformed request target');
        return;
      }
      const { event, group } = converted;
      // as API Gateway's HTTP API does: the request's id, found again in its log lines and metrics
      res.setHeader('apigw-requestid', event.requestContext.requestId);
      runAsComponent(`api:${group}`, () => handlers[group](event)).then(
        (result) => send(res, result),
        () => sendError(res, 500, 'internal', 'internal error'),
      );
    });
  });
  // Requests Node's parser refuses (an unknown method, a malformed request
  // line or header) never reach the handler; answer them in the contract's
  // shape too, not with Node's bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({
      error: { code: 'bad-request', message: 'malformed HTTP request' },
    });
    socket.end(
      'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // a request's headers may take no longer than an idle connection may wait for them
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
  return server;
}
