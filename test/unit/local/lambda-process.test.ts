import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  INTEGRATION_FAILURE,
  INTEGRATION_TIMEOUT,
  LAMBDA_PAYLOAD_BYTES,
  LambdaProcess,
  gatewayAnswer,
  shippedDispatch,
} from '../../../local/shipped-api';

/**
 * A stand-in for the compiled lambda-host: answers by the event's rawPath
 * (`/pid` its process id, `/crash` exits, `/hang` never answers, `/big` a
 * result over Lambda's 6 MB, `/echo` the body's length).
 */
const HOST = `
process.on('message', (m) => {
  const path = m.event.rawPath;
  if (path === '/crash') process.exit(3);
  if (path === '/hang') return;
  const body =
    path === '/big' ? 'x'.repeat(${LAMBDA_PAYLOAD_BYTES} + 1) :
    path === '/echo' ? String((m.event.body || '').length) : String(process.pid);
  process.send({ kind: 'result', id: m.id, result: { statusCode: 200, body } });
});
process.on('disconnect', () => process.exit(0));
`;

const event = (rawPath: string, body?: string) =>
  ({ rawPath, body, requestContext: { requestId: rawPath } }) as unknown as APIGatewayProxyEventV2;

describe('shipped artifacts: a function process, as the Lambda service runs it', () => {
  let dir = '';
  let host = '';
  const logs: string[] = [];
  const log = (line: string) => logs.push(line);
  const started: LambdaProcess[] = [];
  const start = (timeoutSeconds: number, factor: number) => {
    const p = new LambdaProcess(
      'Fn',
      host,
      dir,
      { PATH: process.env.PATH ?? '' },
      log,
      timeoutSeconds,
      factor,
    );
    started.push(p);
    return p;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lambda-process-'));
    host = join(dir, 'host.cjs');
    writeFileSync(host, HOST);
  });
  afterEach(() => {
    for (const p of started.splice(0)) p.stop();
    logs.length = 0;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const pidOf = async (p: LambdaProcess) => {
    const outcome = await p.invoke(event('/pid'));
    expect(outcome.kind).toBe('result');
    return (gatewayAnswer(outcome) as { body: string }).body;
  };

  it('answers 500 for the invocation that crashed it, and starts it again for the next', async () => {
    const p = start(29, 1);
    const before = await pidOf(p);
    const crash = await p.invoke(event('/crash'));
    expect(crash).toEqual({
      kind: 'error',
      id: 2,
      errorType: 'Runtime.ExitError',
      errorMessage: 'exited',
    });
    expect(gatewayAnswer(crash)).toEqual(INTEGRATION_FAILURE);
    const after = await pidOf(p);
    expect(after).not.toBe(before);
    expect(p.starts).toBe(2);
    expect(logs).toContain('[Fn] exited (3)');
  });

  it('times out at the function Timeout with a 500 and a new process for the next invocation', async () => {
    const p = start(0.5, 1);
    const before = await pidOf(p);
    const hung = await p.invoke(event('/hang'));
    expect(hung).toEqual({ kind: 'timeout', id: 2, after: 'function' });
    expect(gatewayAnswer(hung)).toEqual(INTEGRATION_FAILURE);
    expect(await pidOf(p)).not.toBe(before);
    expect(p.starts).toBe(2);
  });

  it("answers 503 when the HTTP API's 30 s integration timeout comes before the function's", async () => {
    // Timeout 60 s: API Gateway gives up at 30 s (scaled down here by the factor) and the function runs on
    const p = start(60, 0.02);
    const before = await pidOf(p);
    const hung = await p.invoke(event('/hang'));
    expect(hung).toEqual({ kind: 'timeout', id: 2, after: 'integration' });
    expect(gatewayAnswer(hung)).toEqual(INTEGRATION_TIMEOUT);
    expect(INTEGRATION_TIMEOUT.statusCode).toBe(503);
    expect(JSON.parse(INTEGRATION_TIMEOUT.body)).toEqual({ message: 'Service Unavailable' });
    expect(await pidOf(p)).toBe(before);
    expect(p.starts).toBe(1);
  });

  it("refuses a result over Lambda's 6 MB with API Gateway's 500", async () => {
    const p = start(29, 1);
    const big = await p.invoke(event('/big'));
    expect(big.kind).toBe('result');
    // the result's JSON: the body and `{"statusCode":200,"body":""}` (28 bytes)
    const seen: string[] = [];
    expect(gatewayAnswer(big, (l) => seen.push(l))).toEqual(INTEGRATION_FAILURE);
    expect(seen).toEqual([
      `response payload of ${LAMBDA_PAYLOAD_BYTES + 1 + 28} bytes exceeds Lambda's 6291456`,
    ]);
  });

  it('logs an error the child process emits instead of letting it take down the server', async () => {
    const p = start(29, 1);
    const child = (p as unknown as { child: NodeJS.EventEmitter }).child;
    expect(() => child.emit('error', new Error('channel closed'))).not.toThrow();
    expect(logs).toContain('[Fn] process error: channel closed');
    expect((await p.invoke(event('/pid'))).kind).toBe('result');
  });

  it('fails invocations after stop without starting a process', async () => {
    const p = start(29, 1);
    p.stop();
    expect(await p.invoke(event('/pid'))).toMatchObject({ kind: 'error', errorMessage: 'stopped' });
    expect(p.starts).toBe(1);
  });

  it("passes bodies past 512 KiB to the function and refuses an event over Lambda's 6 MB with a 500", async () => {
    const dispatch = shippedDispatch(
      {
        routes: [{ routeKey: '$default', functionLogicalId: 'Fn' }],
        functions: {
          Fn: {
            name: 'Fn',
            assetDir: dir,
            handler: 'index.handler',
            timeoutSeconds: 29,
            memoryMiB: 128,
            environment: { PATH: process.env.PATH ?? '' },
          },
        },
      },
      host,
      log,
      1,
    );
    try {
      expect(dispatch.maxBodyBytes).toBe(10 * 1024 * 1024);
      expect(await dispatch.invoke('Fn', event('/echo', 'x'.repeat(600 * 1024)))).toEqual({
        statusCode: 200,
        body: String(600 * 1024),
      });
      expect(await dispatch.invoke('Fn', event('/echo', 'x'.repeat(LAMBDA_PAYLOAD_BYTES)))).toEqual(
        INTEGRATION_FAILURE,
      );
      expect(
        logs.some((l) => /^\[Fn\] request payload of \d+ bytes exceeds Lambda's 6291456$/.test(l)),
      ).toBe(true);
    } finally {
      dispatch.stop();
    }
  });
});
