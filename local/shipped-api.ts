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
  /** Literal segments: a route with more of them wins (API Gateway prefers the most specific). */
  literals: number;
  target: string;
}

/** Routes a request as API Gateway does with the template's route keys; unmatched: `$default`. */
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
      literals: segments.filter((s) => !s.startsWith('{')).length,
      target: r.functionLogicalId,
    });
  }
  compiled.sort((a, b) => b.literals - a.literals);
  return (method, rawPath) => {
    const segments = rawPath.replace(/\/+$/, '').split('/');
    for (const route of compiled) {
      if (route.method !== method && route.method !== 'ANY') continue;
      if (route.segments.length !== segments.length) continue;
      const params: Record<string, string> = {};
      const ok = route.segments.every((t, i) => {
        const s = segments[i] ?? '';
        if (!t.startsWith('{')) return t === s;
        if (s === '') return false;
        try {
          params[t.slice(1, -1)] = decodeURIComponent(s);
          return true;
        } catch {
          return false;
        }
      });
      if (ok) return { routeKey: route.routeKey, pathParameters: params, target: route.target };
    }
    if (!fallback) throw new Error(`no route for ${method} ${rawPath} and no $default route`);
    return { routeKey: '$default', target: fallback };
  };
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

/** One function's process; invocations go over IPC, answers come back by id. */
export class LambdaProcess {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, (message: ResultMessage) => void>();

  constructor(
    readonly name: string,
    hostScript: string,
    assetDir: string,
    env: Record<string, string>,
    log: (line: string) => void,
  ) {
    this.child = fork(hostScript, [], {
      cwd: assetDir,
      env,
      execArgv: [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const prefix = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line) log(`[${name}] ${line}`);
    };
    this.child.stdout?.on('data', prefix);
    this.child.stderr?.on('data', prefix);
    this.child.on('message', (message: ResultMessage) => {
      const done = this.pending.get(message.id);
      this.pending.delete(message.id);
      done?.(message);
    });
    this.child.on('exit', (code, signal) => {
      log(`[${name}] exited (${code ?? signal})`);
      for (const [id, done] of this.pending) {
        done({ kind: 'error', id, errorType: 'Runtime.ExitError', errorMessage: 'exited' });
      }
      this.pending.clear();
    });
  }

  invoke(event: APIGatewayProxyEventV2): Promise<ResultMessage> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      const message: InvokeMessage = {
        kind: 'invoke',
        id,
        event: event as unknown as Record<string, unknown>,
      };
      if (!this.child.connected) {
        this.pending.delete(id);
        resolve({ kind: 'error', id, errorType: 'Runtime.ExitError', errorMessage: 'not running' });
        return;
      }
      this.child.send(message);
    });
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
  }
}

/** The shipped API's dispatch: the template's routes, each function's bundle in its own process. */
export function shippedDispatch(
  plan: ShippedApiPlan,
  hostScript: string,
  log: (line: string) => void,
): ApiDispatch & { stop(): void } {
  const processes = new Map<string, LambdaProcess>();
  for (const [id, fn] of Object.entries(plan.functions)) {
    processes.set(id, new LambdaProcess(fn.name, hostScript, fn.assetDir, fn.environment, log));
  }
  const route = templateRouter(plan.routes);
  return {
    route,
    async invoke(target, event) {
      const fn = processes.get(target);
      if (!fn) return INTEGRATION_FAILURE;
      const answer = await fn.invoke(event);
      return answer.kind === 'result' ? answer.result : INTEGRATION_FAILURE;
    },
    stop() {
      for (const p of processes.values()) p.stop();
    },
  };
}
