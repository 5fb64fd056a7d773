import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { logger } from '../config/logger';
import { recordRequest } from '../config/metrics';
import { PATH_PARAMETERS } from './schemas';

type Handler = (
  event: APIGatewayProxyEventV2,
  context?: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** The keys every log line of a request carries; nothing else of the request is logged here. */
export interface RequestKeys {
  requestId: string;
  route: string;
  model?: string;
}

/** The request's id, route and (well-formed) model: never a header, a query or a body. */
export function requestKeys(event: APIGatewayProxyEventV2): RequestKeys {
  const keys: RequestKeys = {
    requestId: event.requestContext?.requestId ?? '',
    route: event.routeKey,
  };
  const raw = event.pathParameters?.model;
  if (raw !== undefined) {
    let model: string | undefined;
    try {
      model = decodeURIComponent(raw);
    } catch {
      model = undefined;
    }
    if (model !== undefined && PATH_PARAMETERS.model.schema.safeParse(model).success) {
      keys.model = model;
    }
  }
  return keys;
}

/**
 * The handler's observability, in one place around functions/http.ts's
 * pipeline: the Powertools Logger gets the Lambda context (`addContext`) and
 * the request's keys (request id, route, model; the user once the token is
 * checked, `observedUser`), so every line the request logs carries them; when
 * the answer leaves, one EMF record counts the request, its latency and
 * whether it was a 4xx or a 5xx, by route (config/metrics.ts). The keys are
 * the request's own (a child logger per request, config/logger.ts
 * `runScoped`), so concurrent requests of one process never mix them, and
 * they are cleared after it.
 */
export function observed(handler: Handler): Handler {
  // each request logs through a logger of its own: the local server runs many at once
  return (event, context) => logger.runScoped(() => observe(handler, event, context));
}

async function observe(
  handler: Handler,
  event: APIGatewayProxyEventV2,
  context: Context | undefined,
): Promise<APIGatewayProxyStructuredResultV2> {
  const started = performance.now();
  if (context) logger.addContext(context);
  const keys = requestKeys(event);
  logger.appendKeys({ ...keys });
  let status = 500;
  try {
    const response = await handler(event, context);
    status = response.statusCode ?? 200;
    return response;
  } finally {
    try {
      recordRequest(event.routeKey, status, performance.now() - started, keys.requestId);
    } catch (err) {
      logger.warn('request metrics not written', { error: String(err) });
    }
    logger.resetKeys();
  }
}

/** The authenticated user's name, for the rest of the request's log lines. */
export function observedUser(user: string): void {
  logger.appendKeys({ user });
}
