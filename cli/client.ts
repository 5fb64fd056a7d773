import { randomUUID } from 'node:crypto';
import { loginAgain } from './auth';
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

/** The API refused a user's freshly renewed token: the user was removed, or their tokens revoked. */
function refusedLogin(apiUrl: string, user: string | undefined): CliError {
  const who = user ?? 'this user';
  return new CliError(
    `the API at ${apiUrl} refused the login of "${who}" (removed, or signed out): ${loginAgain(who)}`,
  );
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
 *
 * With a user login (`auth`), the token is asked of it before each request
 * (it renews an expired one), and a `401` is answered once by renewing the
 * token and sending the same request again, with the same key: a `401` means
 * the API did nothing, and the key makes a repeat harmless anyway.
 */
export function createClient(
  endpoint: Pick<Endpoint, 'apiUrl' | 'token' | 'auth' | 'user'>,
): Client {
  const apiUrl = endpoint.apiUrl.replace(/\/+$/, '');
  const auth = endpoint.auth;
  let renewed = false;

  async function send(method: string, path: string, token: string, key?: string, body?: unknown) {
    const headers: Record<string, string> = { accept: 'application/json' };
    // an empty token is a request that needs none (GET /v1/auth)
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (key) headers['idempotency-key'] = key;
    try {
      return await fetch(`${apiUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw unreachable(apiUrl, err);
    }
  }

  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const key = MUTATING.has(method) ? randomUUID() : undefined;
    let res = await send(method, path, auth ? await auth.token() : endpoint.token, key, body);
    if (res.status === 401 && auth) {
      if (renewed) throw refusedLogin(apiUrl, endpoint.user?.user);
      renewed = true;
      await res.body?.cancel();
      res = await send(method, path, await auth.renew(), key, body);
      if (res.status === 401) throw refusedLogin(apiUrl, endpoint.user?.user);
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
