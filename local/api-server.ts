import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { BODY_TOO_LARGE, LIMITS } from '../functions/limits';
import { matchGatewayRoute, matchRoute, routeKey, type RouteGroup } from '../functions/routes';
import { runAsComponent } from './aws-call-recorder';
import { EC2_EVENTS_PATH } from './ec2-events';

export type LambdaHandler = (
  event: APIGatewayProxyEventV2,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** API Gateway HTTP API's payload limit is 10 MB; the handlers refuse more than this (functions/limits.ts). */
const MAX_BODY_BYTES = LIMITS.bodyBytes;

/**
 * How the API picks the function that answers a request: the route (its
 * key and path parameters, as API Gateway's routing gives them) and the
 * function. The sources path routes with functions/routes.ts to the
 * imported handlers; the shipped path (local/shipped-api.ts) with the
 * synthesized template's routes to the bundles.
 */
export interface ApiDispatch {
  route(
    method: string,
    rawPath: string,
  ): {
    routeKey: string;
    pathParameters?: Record<string, string>;
    target: string;
    /** The path the event carries, if not the request's (API Gateway's HTTP API decodes it). */
    rawPath?: string;
  };
  /** Resolves with what the integration answers (an error already turned into API Gateway's answer). */
  invoke(target: string, event: APIGatewayProxyEventV2): Promise<unknown>;
  /**
   * The largest body the front end passes on (default: the handlers' own
   * 512 KiB, answered here as they would). The shipped path passes what API
   * Gateway passes, so the bundles' own check is what refuses a large body.
   */
  maxBodyBytes?: number;
  /** The answer to a body over `maxBodyBytes` (default: the handlers' 400). */
  bodyTooLarge?: unknown;
}

/** The sources path: each route group's handler, imported (local/api-server-main.ts). */
export function sourcesDispatch(handlers: Record<RouteGroup, LambdaHandler>): ApiDispatch {
  return {
    route(method, rawPath) {
      // the greedy gateway routes after the documented ones, as API Gateway orders them
      const match = matchRoute(method, rawPath) ?? matchGatewayRoute(method, rawPath);
      return {
        routeKey: match ? routeKey(match.route) : '$default',
        pathParameters: match?.pathParameters,
        target: match?.route.group ?? 'models',
      };
    },
    invoke: (target, event) => {
      const group = target as RouteGroup;
      return runAsComponent(`api:${group}`, () => handlers[group](event)).catch(
        (): APIGatewayProxyStructuredResultV2 => errorResult(500, 'internal', 'internal error'),
      );
    },
  };
}

/**
 * Media types API Gateway's HTTP API hands a Lambda as text; any other body
 * (a form post such as `curl -d`, no content type at all, binary) arrives
 * base64-encoded with `isBase64Encoded: true`.
 */
const TEXT_MEDIA_TYPES = [
  /^text\//,
  /^application\/(json|xml|javascript|x-javascript|ecmascript)$/,
  /^application\/[^;]*\+(json|xml)$/,
];

export function isTextMediaType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return type !== '' && TEXT_MEDIA_TYPES.some((re) => re.test(type));
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `requestContext.time` as API Gateway writes it: `25/Nov/2026:20:14:07 +0000`. */
export function requestTime(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${p(now.getUTCDate())}/${MONTHS[now.getUTCMonth()]}/${now.getUTCFullYear()}:` +
    `${p(now.getUTCHours())}:${p(now.getUTCMinutes())}:${p(now.getUTCSeconds())} +0000`
  );
}

/**
 * Turns a Node HTTP request into the event API Gateway's HTTP API delivers
 * (payload format 2.0): header names lower-cased and repeated headers joined
 * with commas, the `cookie` header moved to `cookies`, the `x-forwarded-*`
 * and trace headers the gateway adds, `requestContext` with the route, the
 * client's address, a request id and the time, and a text body as text or
 * any other base64-encoded. Unmatched paths go to the `$default` route,
 * which the deployed API also routes to a handler, so even a 404 is
 * authenticated and has the contract's error shape.
 */
export function toApiGatewayEvent(
  req: IncomingMessage,
  body: Buffer,
  now = new Date(),
  dispatch: Pick<ApiDispatch, 'route'> = sourcesDispatch({} as Record<RouteGroup, LambdaHandler>),
): {
  event: APIGatewayProxyEventV2;
  target: string;
} {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const method = (req.method ?? 'GET').toUpperCase();
  const route = dispatch.route(method, url.pathname);
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    const value = req.rawHeaders[i + 1]!;
    if (name === 'cookie') {
      cookies.push(
        ...value
          .split(';')
          .map((c) => c.trim())
          .filter((c) => c !== ''),
      );
      continue;
    }
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  headers['x-forwarded-for'] =
    headers['x-forwarded-for'] === undefined
      ? sourceIp
      : `${headers['x-forwarded-for']}, ${sourceIp}`;
  headers['x-forwarded-port'] = '443';
  headers['x-forwarded-proto'] = 'https';
  headers['x-amzn-trace-id'] =
    `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = query[k] === undefined ? v : `${query[k]},${v}`;
  const key = route.routeKey;
  const asText = isTextMediaType(headers['content-type']);
  const requestId = randomUUID();
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: key,
    rawPath: route.rawPath ?? url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    pathParameters:
      route.pathParameters && Object.keys(route.pathParameters).length
        ? route.pathParameters
        : undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0]!,
      http: {
        method,
        path: route.rawPath ?? url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: key,
      stage: '$default',
      time: requestTime(now),
      timeEpoch: now.getTime(),
    },
    body: body.length === 0 ? undefined : asText ? body.toString('utf8') : body.toString('base64'),
    isBase64Encoded: body.length > 0 && !asText,
  };
  return { event, target: route.target };
}

/**
 * What API Gateway makes of an integration's answer (payload 2.0): a result
 * with a `statusCode` as given (its `cookies` as `set-cookie` headers),
 * anything else as a 200 JSON body.
 */
export function toHttpResult(result: unknown): APIGatewayProxyStructuredResultV2 & {
  cookies?: string[];
} {
  if (result && typeof result === 'object' && 'statusCode' in result) {
    return result as APIGatewayProxyStructuredResultV2;
  }
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: typeof result === 'string' ? result : JSON.stringify(result ?? null),
  };
}

function send(res: ServerResponse, answer: unknown, requestId?: string): void {
  const result = toHttpResult(answer);
  res.statusCode = result.statusCode ?? 200;
  for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, String(v));
  if (result.cookies?.length) res.setHeader('set-cookie', result.cookies);
  if (requestId) res.setHeader('apigw-requestid', requestId);
  const body = result.body ?? '';
  res.end(result.isBase64Encoded ? Buffer.from(body, 'base64') : body);
}

function errorResult(
  status: number,
  code: string,
  message: string,
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: { code, message } }),
  };
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  send(res, errorResult(status, code, message));
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

/** What the local API server hosts besides the HTTP API's routes. */
export interface ApiServerExtras {
  /**
   * The instance-events Lambda (functions/instance-events.ts), which EventBridge
   * invokes in the cloud: the local stack's EC2 events (local/ec2-events.ts)
   * are POSTed to EC2_EVENTS_PATH, one event a request, and answered with the
   * handler's outcome (200), or 500 when it throws (the emitter tries again).
   */
  instanceEvents?: (event: unknown) => Promise<unknown>;
}

export function createApiServer(
  handlers: Record<RouteGroup, LambdaHandler> | ApiDispatch,
  extras: ApiServerExtras = {},
): Server {
  const dispatch: ApiDispatch =
    'invoke' in handlers && typeof handlers.invoke === 'function'
      ? handlers
      : sourcesDispatch(handlers as Record<RouteGroup, LambdaHandler>);
  const server = createServer((req, res) => {
    if (extras.instanceEvents && req.method === 'POST' && req.url === EC2_EVENTS_PATH) {
      answerInstanceEvent(req, res, extras.instanceEvents);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const maxBody = dispatch.maxBodyBytes ?? MAX_BODY_BYTES;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBody) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) {
        // 400 as the handlers answer it (API.md lists no 413); the body is not read into memory
        if (dispatch.bodyTooLarge !== undefined) send(res, dispatch.bodyTooLarge);
        else sendError(res, 400, 'bad-request', BODY_TOO_LARGE);
        return;
      }
      let converted: ReturnType<typeof toApiGatewayEvent>;
      try {
        converted = toApiGatewayEvent(req, Buffer.concat(chunks), new Date(), dispatch);
      } catch {
        sendError(res, 400, 'bad-request', 'malformed request target');
        return;
      }
      const { event, target } = converted;
      dispatch.invoke(target, event).then(
        (result) => send(res, result, event.requestContext.requestId),
        () => sendError(res, 500, 'internal', 'internal error'),
      );
    });
  });
  // Requests Node's parser refuses (an unknown method, a malformed request
  // line or header) never reach the handler; answer them in the contract's
  // shape too, not with Node's bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({
      error: { code: 'bad-request', message: 'malformed HTTP request' },
    });
    // An answer to HEAD has no body (RFC 9110 9.3.2): a client reading one
    // would take the body for the next answer ("Data after Connection: close").
    const head =
      err.rawPacket instanceof Buffer &&
      err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
    socket.end(
      'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${head ? '' : body}`,
    );
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // a request's headers may take no longer than an idle connection may wait for them
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
  return server;
}

/** An EventBridge-style invocation of the instance-events handler (ApiServerExtras). */
function answerInstanceEvent(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (event: unknown) => Promise<unknown>,
): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let event: unknown;
    try {
      event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      sendError(res, 400, 'bad-request', 'the event is not JSON');
      return;
    }
    runAsComponent('instance-events', () => handler(event)).then(
      (outcome) => send(res, { statusCode: 200, body: JSON.stringify(outcome ?? null) }),
      (err: unknown) =>
        sendError(res, 500, 'internal', err instanceof Error ? err.name : 'internal error'),
    );
  });
}
