import type { Context } from 'aws-lambda';
import { inLambda, RequestScopedLogger } from '../../../config/logger';

/** The JSON lines Powertools writes while `work` runs (stdout and stderr). */
async function linesOf(work: () => unknown): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const out = jest.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await work();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

const context = (awsRequestId: string) =>
  ({
    functionName: 'provisioner-api-machines',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:provisioner-api-machines',
    memoryLimitInMB: '512',
    awsRequestId,
  }) as Context;

describe('RequestScopedLogger', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  /** A logger made as the module's is, in an environment that says a cold start is on demand. */
  function freshLogger(env: Record<string, string | undefined>): RequestScopedLogger {
    process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    return new RequestScopedLogger({ serviceName: 'provisioner-api' });
  }

  /** What `observed` does per request: the context, the request's keys, one line, keys cleared. */
  const request = (logger: RequestScopedLogger, id: string) =>
    logger.runScoped(() => {
      logger.addContext(context(id));
      logger.appendKeys({ requestId: id });
      logger.info('handled');
      logger.resetKeys();
    });

  it('tells Lambda by the function name the runtime sets', () => {
    expect(inLambda({ AWS_LAMBDA_FUNCTION_NAME: 'provisioner-api-machines' })).toBe(true);
    expect(inLambda({})).toBe(false);
    expect(inLambda({ AWS_LAMBDA_FUNCTION_NAME: '' })).toBe(false);
  });

  it('in Lambda: cold_start is true on the first request of the process only', async () => {
    const logger = freshLogger({ AWS_LAMBDA_FUNCTION_NAME: 'provisioner-api-machines' });
    const child = jest.spyOn(logger, 'createChild');
    const lines = await linesOf(() => {
      for (const id of ['r1', 'r2', 'r3']) request(logger, id);
    });
    expect(lines.map((l) => [l.message, l.function_request_id, l.requestId, l.cold_start])).toEqual(
      [
        ['handled', 'r1', 'r1', true],
        ['handled', 'r2', 'r2', false],
        ['handled', 'r3', 'r3', false],
      ],
    );
    // the module logger itself, as before request scoping: no child per request
    expect(child).not.toHaveBeenCalled();
  });

  it('in the local server: each request on a child of its own, two at once keep their keys apart', async () => {
    const logger = freshLogger({ AWS_LAMBDA_FUNCTION_NAME: undefined });
    const child = jest.spyOn(logger, 'createChild');
    let release!: () => void;
    const bothStarted = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const concurrent = (id: string) =>
      logger.runScoped(async () => {
        logger.appendKeys({ requestId: id });
        if (++started === 2) release();
        await bothStarted;
        logger.info('handled');
        logger.resetKeys();
      });
    const lines = await linesOf(async () => {
      await Promise.all([concurrent('a'), concurrent('b')]);
      logger.info('outside');
    });
    expect(lines.map((l) => [l.message, l.requestId])).toEqual([
      ['handled', 'a'],
      ['handled', 'b'],
      ['outside', undefined],
    ]);
    expect(child).toHaveBeenCalledTimes(2);
  });
});
