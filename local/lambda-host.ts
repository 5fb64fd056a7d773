/**
 * One Lambda function of the shipped artifacts (PROVISIONER_ARTIFACTS=shipped):
 * a child process that does what the Node.js Lambda runtime does with a
 * function's code. It is compiled to a dependency-free script and run with
 * plain `node` (no TypeScript loader), in the function's asset directory from
 * `cdk.out`, with only the environment the template sets (plus the local
 * endpoints and what the Lambda service itself sets), so the bundle runs as
 * it would in the cloud.
 *
 * Like the runtime, it resolves `_HANDLER` (`index.handler`: file `index` in
 * `LAMBDA_TASK_ROOT`, export `handler`) once, at cold start; a module that
 * fails to load or an export that is missing fails every invocation with the
 * runtime's error type (`Runtime.ImportModuleError`, `Runtime.HandlerNotFound`).
 * Events come from the parent over IPC (local/shipped-api.ts) and results go
 * back the same way. Unlike Lambda, one process takes concurrent invocations
 * (as the sources path's one API process does).
 *
 * With `PROVISIONER_LAMBDA_EVENTS_FILE` set, the shape of the init and of each
 * event (names and kinds, never a header value or a body: those carry tokens
 * and passwords) is appended to that file, for test/integration/shipped.test.ts.
 */
import { appendFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LAMBDA_EVENTS_FILE_ENV } from './shipped';

export interface InvokeMessage {
  kind: 'invoke';
  id: number;
  event: Record<string, unknown>;
}

export type ResultMessage =
  | { kind: 'result'; id: number; result: unknown }
  | { kind: 'error'; id: number; errorType: string; errorMessage: string };

class RuntimeError extends Error {
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}

type Handler = (event: unknown, context: unknown) => unknown;

async function loadHandler(taskRoot: string, spec: string): Promise<Handler> {
  const dot = spec.lastIndexOf('.');
  if (dot <= 0) throw new RuntimeError('Runtime.MalformedHandlerName', `Bad handler ${spec}`);
  const modulePath = spec.slice(0, dot);
  const exportPath = spec.slice(dot + 1);
  const file = ['.js', '.mjs', '.cjs']
    .map((ext) => join(taskRoot, `${modulePath}${ext}`))
    .find((f) => existsSync(f));
  if (!file) {
    throw new RuntimeError(
      'Runtime.ImportModuleError',
      `Error: Cannot find module '${modulePath}'`,
    );
  }
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new RuntimeError('Runtime.ImportModuleError', String(err));
  }
  // a CommonJS module's exports arrive as `default` as well as by name
  const fn =
    loaded[exportPath] ?? (loaded.default as Record<string, unknown> | undefined)?.[exportPath];
  if (typeof fn !== 'function') {
    throw new RuntimeError('Runtime.HandlerNotFound', `${spec} is undefined or not exported`);
  }
  return fn as Handler;
}

/** What the shape check records of an event: names, kinds and sizes only. */
export function eventShape(event: Record<string, unknown>): Record<string, unknown> {
  const ctx = (event.requestContext ?? {}) as Record<string, unknown>;
  const http = (ctx.http ?? {}) as Record<string, unknown>;
  const headers = (event.headers ?? {}) as Record<string, unknown>;
  return {
    keys: Object.keys(event).sort(),
    version: event.version,
    routeKey: event.routeKey,
    rawPath: event.rawPath,
    rawQueryString: event.rawQueryString,
    headerNames: Object.keys(headers).sort(),
    cookieCount: Array.isArray(event.cookies) ? event.cookies.length : undefined,
    pathParameterNames: Object.keys(event.pathParameters ?? {}).sort(),
    isBase64Encoded: event.isBase64Encoded,
    bodyBytes: typeof event.body === 'string' ? event.body.length : undefined,
    requestContext: {
      keys: Object.keys(ctx).sort(),
      requestId: ctx.requestId,
      routeKey: ctx.routeKey,
      stage: ctx.stage,
      timeEpochType: typeof ctx.timeEpoch,
      http: {
        method: http.method,
        path: http.path,
        protocol: http.protocol,
        sourceIp: http.sourceIp,
      },
    },
  };
}

function main(): void {
  const env = process.env;
  const taskRoot = env.LAMBDA_TASK_ROOT ?? process.cwd();
  const spec = env._HANDLER ?? 'index.handler';
  const functionName = env.AWS_LAMBDA_FUNCTION_NAME ?? 'function';
  const timeoutMs = Number(env.PROVISIONER_LAMBDA_TIMEOUT_SECONDS ?? '30') * 1000;
  const eventsFile = env[LAMBDA_EVENTS_FILE_ENV];
  const record = (entry: Record<string, unknown>) => {
    if (eventsFile) appendFileSync(eventsFile, `${JSON.stringify({ functionName, ...entry })}\n`);
  };
  const started = Date.now();
  const handler = loadHandler(taskRoot, spec);
  void handler.then(
    () => {
      console.log(`INIT_REPORT ${functionName} ${spec} Init Duration: ${Date.now() - started} ms`);
      record({ init: 'ok', handler: spec, envNames: Object.keys(env).sort() });
    },
    (err: RuntimeError) => {
      console.error(
        JSON.stringify({ errorType: err.errorType, errorMessage: err.message, handler: spec }),
      );
      record({ init: err.errorType, handler: spec, envNames: Object.keys(env).sort() });
    },
  );

  const send = (message: ResultMessage) => process.send?.(message);
  process.on('message', (message: InvokeMessage) => {
    if (message.kind !== 'invoke') return;
    const contextId = ((message.event.requestContext ?? {}) as Record<string, unknown>).requestId;
    const requestId = typeof contextId === 'string' ? contextId : String(message.id);
    const begin = Date.now();
    record({ event: eventShape(message.event) });
    const context = {
      functionName,
      functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION ?? '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:${env.AWS_REGION ?? 'us-east-1'}:000000000000:function:${functionName}`,
      memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '128',
      awsRequestId: requestId,
      logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME ?? `/aws/lambda/${functionName}`,
      logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME ?? 'local',
      callbackWaitsForEmptyEventLoop: true,
      getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - begin)),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    handler
      .then((fn) => fn(message.event, context))
      .then(
        (result) => {
          send({ kind: 'result', id: message.id, result });
        },
        (err: unknown) => {
          const errorType =
            err instanceof RuntimeError ? err.errorType : err instanceof Error ? err.name : 'Error';
          const errorMessage = err instanceof Error ? err.message : String(err);
          console.error(JSON.stringify({ requestId, errorType, errorMessage }));
          send({ kind: 'error', id: message.id, errorType, errorMessage });
        },
      )
      .finally(() => {
        console.log(`REPORT RequestId: ${requestId} Duration: ${Date.now() - begin} ms`);
      });
  });
  process.on('disconnect', () => process.exit(0));
}

// only as the compiled entry script of a child with IPC (never when imported, e.g. by a test)
if (require.main === module && process.send) main();
