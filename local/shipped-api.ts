import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import type { ApiDispatch } from './api-server';
import type { InvokeMessage, ResultMessage } from './lambda-host';
import type { ShippedRoute } from './shipped';

/**
 * The shipped API (PROVISIONER_ARTIFACTS=shipped): the HTTP API's routes as
 * the synthesized template declares them, each to its Lambda's bundle from
 * `cdk.out`, run by local/lambda-host.ts in a process of its own with the
 * environment the template sets.
 */

/** What local/stack.ts hands the shipped API server (`PROVISIONER_SHIPPED_API_PLAN`, a JSON file). */
export interface ShippedApiPlan {
  routes: ShippedRoute[];
  /** The instance-events function's logical id (EventBridge's target in the cloud), when hosted. */
  instanceEvents?: string;
  functions: Record<
    string,
    {
      name: string;
      assetDir: string;
      handler: string;
      timeoutSeconds: number;
      memoryMiB: number;
      environment: Record<string, string>;
    }
  >;
}

export const SHIPPED_API_PLAN_ENV = 'PROVISIONER_SHIPPED_API_PLAN';

/** API Gateway's answer when the integration fails (an error, a crash, a handler that cannot load). */
export const INTEGRATION_FAILURE = {
  statusCode: 500,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'Internal Server Error' }),
};

interface CompiledRoute {
  routeKey: string;
  method: string;
  segments: string[];
  /** Ends in a greedy parameter (`{id+}`): it takes one or more segments, and only when no full match does. */
  greedy: boolean;
  /** Literal segments: a route with more of them wins (API Gateway prefers the most specific). */
  literals: number;
  target: string;
}

/**
 * The path as API Gateway's HTTP API routes it and hands it on as `rawPath`:
 * percent-decoded once, before it is split into segments, so an encoded slash
 * (`%2F`) separates segments like `/` (live captures: an HTTP API answers
 * `/a%2Fb` through `$default` with `rawPath` `/a/b`). Undefined when the
 * escapes are malformed.
 */
export function gatewayPath(rawPath: string): string | undefined {
  try {
    return decodeURIComponent(rawPath);
  } catch {
    return undefined;
  }
}

/**
 * Routes a request with the template's route keys as API Gateway's HTTP API
 * is reported to (third-party live captures; no AWS document says it): the
 * path is decoded first (gatewayPath), so a container id sent as
 * `0%2Flxd%2F1` arrives as three segments and `rawPath` is the decoded path;
 * a full match wins over a greedy `{name+}` route, which takes the rest of
 * the path; unmatched (or malformed escapes): `$default`, with the path as
 * sent. The machine routes reach a container through the greedy routes
 * (functions/routes.ts GATEWAY_ROUTES). docs/deploy.md says how to check the
 * decoding against a deployed API with one curl.
 */
export function templateRouter(routes: ShippedRoute[]): ApiDispatch['route'] {
  const compiled: CompiledRoute[] = [];
  let fallback: string | undefined;
  for (const r of routes) {
    if (r.routeKey === '$default') {
      fallback = r.functionLogicalId;
      continue;
    }
    const [method, path] = r.routeKey.split(' ') as [string, string];
    const segments = path.split('/');
    compiled.push({
      routeKey: r.routeKey,
      method,
      segments,
      greedy: (segments[segments.length - 1] ?? '').endsWith('+}'),
      literals: segments.filter((s) => !s.startsWith('{')).length,
      target: r.functionLogicalId,
    });
  }
  // Full matches before greedy ones; among each, literal segments beat parameters (a count is
  // enough for today's routes, where no two routes of one method and length differ in which
  // segment is literal), and a longer greedy prefix beats a shorter one.
  compiled.sort(
    (a, b) =>
      Number(a.greedy) - Number(b.greedy) ||
      b.literals - a.literals ||
      b.segments.length - a.segments.length,
  );
  return (method, requestPath) => {
    const unmatched = (rawPath: string) => {
      if (!fallback) throw new Error(`no route for ${method} ${requestPath} and no $default route`);
      return { routeKey: '$default', target: fallback, rawPath };
    };
    const rawPath = gatewayPath(requestPath);
    if (rawPath === undefined) return unmatched(requestPath);
    const segments = rawPath.replace(/\/+$/, '').split('/');
    for (const route of compiled) {
      if (route.method !== method && route.method !== 'ANY') continue;
      const params = matchSegments(route, segments);
      if (params) {
        return { routeKey: route.routeKey, pathParameters: params, target: route.target, rawPath };
      }
    }
    return unmatched(rawPath);
  };
}

/** A route's parameters for the (decoded) path's segments, or undefined when it does not match. */
function matchSegments(
  route: CompiledRoute,
  segments: readonly string[],
): Record<string, string> | undefined {
  const fixed = route.greedy ? route.segments.length - 1 : route.segments.length;
  if (route.greedy ? segments.length <= fixed : segments.length !== fixed) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < fixed; i++) {
    const t = route.segments[i] ?? '';
    const s = segments[i] ?? '';
    if (!t.startsWith('{')) {
      if (t !== s) return undefined;
      continue;
    }
    if (s === '') return undefined;
    params[t.slice(1, -1)] = s;
  }
  if (route.greedy) {
    const value = segments.slice(fixed).join('/');
    if (value === '') return undefined;
    params[(route.segments[fixed] ?? '').slice(1, -2)] = value;
  }
  return params;
}

/** Compiles local/lambda-host.ts to a plain script, so the bundles run under `node` alone. */
export function compileLambdaHost(outFile: string): string {
  buildSync({
    entryPoints: [join(__dirname, 'lambda-host.ts')],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
  });
  return outFile;
}

/** The HTTP API's integration timeout: at most 30 s, whatever the function's own Timeout. */
export const INTEGRATION_TIMEOUT_SECONDS = 30;

/**
 * What API Gateway answers when the integration does not answer within the
 * HTTP API's 30 s (a function whose Timeout is longer): 503.
 */
export const INTEGRATION_TIMEOUT = {
  statusCode: 503,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'Service Unavailable' }),
};

/** Lambda's synchronous invocation limit, for the event and for the result (6 MB). */
export const LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024;

/** API Gateway HTTP API's maximum request payload (10 MB); beyond it the gateway answers 413. */
export const HTTP_API_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** What API Gateway answers a body over its payload limit itself, before any integration. */
export const REQUEST_TOO_LARGE = {
  statusCode: 413,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'Request Entity Too Large' }),
};

/**
 * How much longer than the template's Timeout an invocation may take here
 * before it is timed out (`PROVISIONER_LAMBDA_TIMEOUT_FACTOR`, default 2): the
 * local machine is shared and slower than a Lambda sandbox, so a request that
 * would be close to the limit in the cloud is not failed here by load alone.
 */
export const LAMBDA_TIMEOUT_FACTOR_ENV = 'PROVISIONER_LAMBDA_TIMEOUT_FACTOR';

export type InvokeOutcome =
  ResultMessage | { kind: 'timeout'; id: number; after: 'function' | 'integration' };

/**
 * One function's process; invocations go over IPC, answers come back by id.
 * Like the Lambda service, it starts the process again for the next
 * invocation when it has exited (a crash, an unhandled rejection) or has been
 * killed because an invocation ran past the function's Timeout; the
 * invocations that were in flight then fail (`Runtime.ExitError`,
 * `Sandbox.Timedout`). Unlike Lambda, one process takes concurrent
 * invocations, so a timeout or a crash fails all of them.
 */
export class LambdaProcess {
  private child: ChildProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (message: InvokeOutcome) => void>();
  private stopped = false;
  /** How many processes have been started (1 until one exits and the next invocation restarts it). */
  starts = 0;

  constructor(
    readonly name: string,
    private readonly hostScript: string,
    private readonly assetDir: string,
    private readonly env: Record<string, string>,
    private readonly log: (line: string) => void,
    /** The template's Timeout for this function, in seconds. */
    private readonly timeoutSeconds = 30,
    /** Multiplies every timeout here (see LAMBDA_TIMEOUT_FACTOR_ENV). */
    private readonly timeoutFactor = 1,
  ) {
    this.spawn();
  }

  private spawn(): ChildProcess {
    const { name, log } = this;
    this.starts += 1;
    const child = fork(this.hostScript, [], {
      cwd: this.assetDir,
      env: this.env,
      execArgv: [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    const prefix = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line) log(`[${name}] ${line}`);
    };
    child.stdout?.on('data', prefix);
    child.stderr?.on('data', prefix);
    // a failed fork or a send racing the channel's close: logged, never thrown at the server
    child.on('error', (err) => log(`[${name}] process error: ${err.message}`));
    child.on('message', (message: ResultMessage) => this.settle(message));
    child.on('exit', (code, signal) => {
      log(`[${name}] exited (${code ?? signal})`);
      if (this.child !== child) return;
      this.child = undefined;
      for (const id of [...this.pending.keys()]) {
        this.settle({ kind: 'error', id, errorType: 'Runtime.ExitError', errorMessage: 'exited' });
      }
    });
    return child;
  }

  private settle(outcome: InvokeOutcome): void {
    const done = this.pending.get(outcome.id);
    this.pending.delete(outcome.id);
    done?.(outcome);
  }

  invoke(event: APIGatewayProxyEventV2): Promise<InvokeOutcome> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      if (this.stopped) {
        resolve({ kind: 'error', id, errorType: 'Runtime.ExitError', errorMessage: 'stopped' });
        return;
      }
      const child = this.child?.connected ? this.child : this.spawn();
      // the function's own Timeout ends it first (Sandbox.Timedout, a 500) unless the
      // HTTP API's integration timeout is shorter (a 503)
      const functionFirst = this.timeoutSeconds < INTEGRATION_TIMEOUT_SECONDS;
      const limitMs =
        Math.min(this.timeoutSeconds, INTEGRATION_TIMEOUT_SECONDS) * 1000 * this.timeoutFactor;
      const timer = setTimeout(() => {
        if (!this.pending.has(id)) return;
        this.log(`[${this.name}] ${id}: timed out after ${limitMs} ms`);
        this.settle({ kind: 'timeout', id, after: functionFirst ? 'function' : 'integration' });
        // Lambda ends a sandbox whose invocation timed out; the next invocation starts another
        if (functionFirst && this.child === child) {
          this.child = undefined;
          child.kill('SIGKILL');
        }
      }, limitMs);
      this.pending.set(id, (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
      const message: InvokeMessage = {
        kind: 'invoke',
        id,
        event: event as unknown as Record<string, unknown>,
      };
      try {
        child.send(message, (err) => {
          if (err) {
            this.settle({
              kind: 'error',
              id,
              errorType: 'Runtime.ExitError',
              errorMessage: 'not running',
            });
          }
        });
      } catch {
        this.settle({
          kind: 'error',
          id,
          errorType: 'Runtime.ExitError',
          errorMessage: 'not running',
        });
      }
    });
  }

  stop(): void {
    this.stopped = true;
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) child.kill('SIGTERM');
    for (const id of [...this.pending.keys()]) {
      this.settle({ kind: 'error', id, errorType: 'Runtime.ExitError', errorMessage: 'stopped' });
    }
  }
}

/** The byte size of a value as Lambda measures a payload: its JSON. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null) ?? 'null', 'utf8');
}

/**
 * What API Gateway answers for one invocation's outcome: the function's result
 * (if within Lambda's 6 MB), 500 for an error, a crash, an oversized result or
 * the function's own timeout, 503 when the HTTP API's integration timeout
 * comes first.
 */
export function gatewayAnswer(
  outcome: InvokeOutcome,
  log: (line: string) => void = () => {},
): unknown {
  if (outcome.kind === 'timeout') {
    return outcome.after === 'integration' ? INTEGRATION_TIMEOUT : INTEGRATION_FAILURE;
  }
  if (outcome.kind === 'error') return INTEGRATION_FAILURE;
  const size = jsonBytes(outcome.result);
  if (size > LAMBDA_PAYLOAD_BYTES) {
    log(`response payload of ${size} bytes exceeds Lambda's ${LAMBDA_PAYLOAD_BYTES}`);
    return INTEGRATION_FAILURE;
  }
  return outcome.result;
}

/** The shipped API's dispatch: the template's routes, each function's bundle in its own process. */
export function shippedDispatch(
  plan: ShippedApiPlan,
  hostScript: string,
  log: (line: string) => void,
  timeoutFactor = Number(process.env[LAMBDA_TIMEOUT_FACTOR_ENV] ?? '2') || 2,
): ApiDispatch & {
  stop(): void;
  /** Invokes a function with a plain event (not the HTTP API's); rejects when it fails. */
  invokeFunction(id: string, event: unknown): Promise<unknown>;
} {
  const processes = new Map<string, LambdaProcess>();
  for (const [id, fn] of Object.entries(plan.functions)) {
    processes.set(
      id,
      new LambdaProcess(
        fn.name,
        hostScript,
        fn.assetDir,
        fn.environment,
        log,
        fn.timeoutSeconds,
        timeoutFactor,
      ),
    );
  }
  const route = templateRouter(plan.routes);
  return {
    route,
    maxBodyBytes: HTTP_API_MAX_BODY_BYTES,
    bodyTooLarge: REQUEST_TOO_LARGE,
    async invoke(target, event) {
      const fn = processes.get(target);
      if (!fn) return INTEGRATION_FAILURE;
      // Lambda refuses an event over 6 MB (a body near API Gateway's 10 MB, or base64's third more)
      const size = jsonBytes(event);
      if (size > LAMBDA_PAYLOAD_BYTES) {
        log(
          `[${fn.name}] request payload of ${size} bytes exceeds Lambda's ${LAMBDA_PAYLOAD_BYTES}`,
        );
        return INTEGRATION_FAILURE;
      }
      return gatewayAnswer(await fn.invoke(event), (line) => log(`[${fn.name}] ${line}`));
    },
    async invokeFunction(id, event) {
      const fn = processes.get(id);
      if (!fn) throw new Error(`no function ${id}`);
      const outcome = await fn.invoke(event as APIGatewayProxyEventV2);
      if (outcome.kind === 'timeout') throw new Error(`${fn.name} timed out`);
      if (outcome.kind === 'error') throw new Error(`${fn.name}: ${outcome.errorType}`);
      return outcome.result;
    },
    stop() {
      for (const p of processes.values()) p.stop();
    },
  };
}
