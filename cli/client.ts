import { randomUUID } from 'node:crypto';
import type { Endpoint } from './config';
import { ApiError, CliError } from './errors';

const REQUEST_TIMEOUT_MS = 30_000;
const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Path segments are URL-encoded whole, so `0/lxd/1` travels as `0%2Flxd%2F1` (API.md "Names"). */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

function networkCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Why a request never got an answer, in one line a person can act on. Never names the token. */
export function unreachable(apiUrl: string, err: unknown): CliError {
  const code = networkCode(err);
  if (code === 'ECONNREFUSED')
    return new CliError(
      `cannot connect to the provisioner API at ${apiUrl}: connection refused (is the local stack up? start it with "npm start")`,
    );
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new CliError(`cannot connect to the provisioner API at ${apiUrl}: host not found`);
  if ((err as Error).name === 'TimeoutError')
    return new CliError(
      `the provisioner API at ${apiUrl} did not answer within ${REQUEST_TIMEOUT_MS / 1000}s`,
    );
  const cause = (err as { cause?: unknown }).cause;
  const detail = code ?? (cause instanceof Error ? cause.message : (err as Error).message);
  return new CliError(`cannot connect to the provisioner API at ${apiUrl}: ${detail}`);
}

export interface Client {
  readonly apiUrl: string;
  request<T>(method: string, path: string, body?: unknown): Promise<T>;
  get<T>(path: string): Promise<T>;
}

/**
 * The API over fetch. Every mutating request carries a fresh random
 * `Idempotency-Key` (API.md "Retried requests"), so a server that honours it
 * can tell a repeated request from a new one.
 */
export function createClient(endpoint: Pick<Endpoint, 'apiUrl' | 'token'>): Client {
  const apiUrl = endpoint.apiUrl.replace(/\/+$/, '');
  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${endpoint.token}`,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (MUTATING.has(method)) headers['idempotency-key'] = randomUUID();
    let res: Response;
    try {
      res = await fetch(`${apiUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw unreachable(apiUrl, err);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const error = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)
        ?.error;
      if (error && typeof error.message === 'string')
        throw new ApiError(
          res.status,
          typeof error.code === 'string' ? error.code : 'unknown',
          error.message,
        );
      throw new ApiError(res.status, 'unknown', `${method} ${path}: HTTP ${res.status}`);
    }
    return parsed as T;
  }
  return { apiUrl, request, get: <T>(path: string) => request<T>('GET', path) };
}
