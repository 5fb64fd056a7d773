import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { z } from 'zod';
import { bearerToken, tokensMatch, tokenSourceFromEnv, type TokenSource } from '../config/auth';
import { logger } from '../config/logger';
import { NAME_PATTERN } from '../service/names';
import {
  ApiError,
  BadRequestError,
  NotFoundError,
  NotImplementedError,
  UnauthorizedError,
} from './errors';

export interface ApiRequest {
  routeKey: string;
  pathParameters: Record<string, string>;
  query: Record<string, string>;
  /** Parsed JSON body; undefined when the request had none. */
  body: unknown;
}

export interface ApiResponse {
  status: number;
  body?: unknown;
}

export type Operation = (request: ApiRequest) => Promise<ApiResponse>;

/** Domain errors (core/) carry a `code`; these are the ones that mean "your input was wrong". */
const DOMAIN_ERROR_STATUS: Record<string, number> = {
  'invalid-constraints': 400,
  'invalid-placement': 400,
  'base-mismatch': 400,
  'bad-request': 400,
  'not-found': 404,
  conflict: 409,
};

function errorResponse(
  status: number,
  code: string,
  message: string,
): APIGatewayProxyStructuredResultV2 {
  return json(status, { error: { code, message } });
}

function json(status: number, body: unknown): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? '' : JSON.stringify(body),
  };
}

export function toErrorResponse(err: unknown): APIGatewayProxyStructuredResultV2 {
  if (err instanceof ApiError) return errorResponse(err.status, err.code, err.message);
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && DOMAIN_ERROR_STATUS[code] !== undefined) {
      return errorResponse(DOMAIN_ERROR_STATUS[code], code, err.message);
    }
  }
  logger.error('unhandled error', { error: err as Error });
  return errorResponse(500, 'internal', 'internal error');
}

function parseJsonBody(event: APIGatewayProxyEventV2): unknown {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  const text = event.isBase64Encoded
    ? Buffer.from(event.body, 'base64').toString('utf8')
    : event.body;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new BadRequestError('malformed JSON in request body');
  }
}

/**
 * Builds a Lambda handler for one route group: bearer auth first, then JSON
 * parsing, then the operation for the event's route key; every error leaves
 * in the contract's `{ error: { code, message } }` shape.
 */
export function createHandler(
  operations: Record<string, Operation>,
  tokenSource: TokenSource = tokenSourceFromEnv(),
): (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2> {
  return async (event) => {
    try {
      const presented = bearerToken(event.headers?.authorization ?? event.headers?.Authorization);
      if (presented === undefined || !tokensMatch(presented, await tokenSource())) {
        throw new UnauthorizedError();
      }
      const operation = operations[event.routeKey];
      if (!operation) {
        throw event.routeKey === '$default'
          ? new NotFoundError(
              `no route for ${event.requestContext?.http?.method ?? ''} ${event.rawPath}`,
            )
          : new NotImplementedError(`${event.routeKey} is not implemented yet`);
      }
      const result = await operation({
        routeKey: event.routeKey,
        pathParameters: decodeParams(event.pathParameters ?? {}),
        query: compact(event.queryStringParameters ?? {}),
        body: parseJsonBody(event),
      });
      return json(result.status, result.body);
    } catch (err) {
      return toErrorResponse(err);
    }
  };
}

function compact(record: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record)) if (v !== undefined) out[k] = v;
  return out;
}

/** API Gateway may hand path parameters still encoded (`1%2Flxd%2F0`); ids never contain `%`. */
function decodeParams(params: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    try {
      out[k] = v.includes('%') ? decodeURIComponent(v) : v;
    } catch {
      throw new BadRequestError(`path parameter ${k}: malformed percent-encoding`);
    }
  }
  return out;
}

/** Validates a JSON body with a strict zod schema; the message names the field that was wrong. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new BadRequestError('invalid request body');
  if (issue.code === 'unrecognized_keys') {
    throw new BadRequestError(
      `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`,
    );
  }
  const where = issue.path.length ? `field "${issue.path.join('.')}"` : 'request body';
  throw new BadRequestError(`${where}: ${issue.message}`);
}

/** What each path parameter must look like; a malformed one is a bad request, never a 500. */
const PARAM_RULES: Record<string, { pattern: RegExp; what: string }> = {
  model: { pattern: NAME_PATTERN, what: 'model name' },
  app: { pattern: NAME_PATTERN, what: 'application name' },
  id: { pattern: /^(?:0|[1-9][0-9]{0,8})(?:\/lxd\/(?:0|[1-9][0-9]{0,8}))?$/, what: 'machine id' },
  n: { pattern: /^(?:0|[1-9][0-9]{0,8})$/, what: 'unit number' },
};

export function param(request: ApiRequest, name: string): string {
  const value = request.pathParameters[name];
  if (value === undefined) throw new BadRequestError(`missing path parameter ${name}`);
  const rule = PARAM_RULES[name];
  if (rule && !rule.pattern.test(value))
    throw new BadRequestError(`invalid ${rule.what} "${value.slice(0, 100)}"`);
  return value;
}
