import {
  responseValidator,
  type OpenApiDocumentLike,
  type ResponseToCheck,
} from '../support/openapi-responses';
import type { StackInfo } from './stack';

export interface ApiResult<T = unknown> {
  status: number;
  body: T;
}

type Check = (response: ResponseToCheck) => string[];
const checks = new Map<string, Promise<Check>>();

/** The stack's own OpenAPI document, fetched once per API and test file. */
function documentCheck(stack: StackInfo): Promise<Check> {
  let check = checks.get(stack.apiUrl);
  if (!check) {
    check = (async () => {
      const res = await fetch(`${stack.apiUrl}/v1/openapi.json`, {
        headers: { authorization: `Bearer ${stack.token}` },
      });
      if (res.status !== 200)
        throw new Error(`GET /v1/openapi.json answered ${res.status}: ${await res.text()}`);
      return responseValidator((await res.json()) as OpenApiDocumentLike);
    })();
    void check.catch(() => checks.delete(stack.apiUrl));
    checks.set(stack.apiUrl, check);
  }
  return check;
}

/**
 * A tiny HTTP client for the provisioner API as a user would call it. Every
 * response is held to the API's OpenAPI document (status and body): one that
 * drifts from it fails the test that received it.
 * `token`: the stack's by default; `null` sends no Authorization header.
 */
export function apiClient(stack: StackInfo, token: string | null = stack.token) {
  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    rawBody?: string,
    extraHeaders: Record<string, string> = {},
  ): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${stack.apiUrl}${path}`, {
      method,
      headers: { ...headers, ...extraHeaders },
      body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    const text = await res.text();
    const parsed = (text ? JSON.parse(text) : undefined) as T;
    const problems = (await documentCheck(stack))({
      method,
      path,
      status: res.status,
      body: parsed,
    });
    if (problems.length) {
      throw new Error(`response does not match the OpenAPI document:\n${problems.join('\n')}`);
    }
    return { status: res.status, body: parsed };
  }
  return {
    call,
    get: <T = any>(path: string) => call<T>('GET', path),
    post: <T = any>(path: string, body?: unknown) => call<T>('POST', path, body),
    put: <T = any>(path: string, body?: unknown) => call<T>('PUT', path, body),
    delete: <T = any>(path: string) => call<T>('DELETE', path),
  };
}
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (!done(last)) {
    if (Date.now() > deadline)
      throw new Error(
        `condition not met after ${timeoutMs}ms; last value: ${JSON.stringify(last)}`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
    last = await probe();
  }
  return last;
}

let counter = 0;
/** A model name unique to this test run, so test files never share state. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid.toString(36)}-${Date.now().toString(36)}-${counter}`.slice(0, 63);
}
