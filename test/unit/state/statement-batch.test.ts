import { ConditionalCheckFailedException, ThrottlingException } from '@aws-sdk/client-dynamodb';
import { EntityNotFoundError } from '../../../state/errors';
import { ProvisioningStore } from '../../../state/provisioning';
import {
  STATEMENT_BATCH_LIMIT,
  StatementBatcher,
  type WriteStatement,
} from '../../../state/statement-batch';
import { answeredDynamoDb } from '../../support/answered-dynamodb';

const statement = (item: string): WriteStatement => ({
  item,
  statement: `UPDATE "t" SET "x" = ? WHERE "pk" = ? AND "sk" = ?`,
  parameters: [1, 'p', item],
});

/** A batcher whose calls are recorded and answered by `answer` (every statement done by default). */
function batcher(answer?: (s: readonly WriteStatement[]) => Promise<Array<{ Error?: object }>>) {
  const calls: string[][] = [];
  const b = new StatementBatcher((statements) => {
    calls.push(statements.map((s) => s.item));
    return answer ? answer(statements) : Promise.resolve(statements.map(() => ({})));
  }, 5);
  return { b, calls };
}

describe('statements sent together', () => {
  it('sends 25 at once, and the rest when the window ends', async () => {
    const { b, calls } = batcher();
    const items = Array.from({ length: 60 }, (_, i) => `i${i}`);
    const outcomes = await Promise.all(items.map((i) => b.submit(statement(i))));
    expect(outcomes).toEqual(items.map(() => ({ ok: true })));
    expect(calls.map((c) => c.length)).toEqual([STATEMENT_BATCH_LIMIT, STATEMENT_BATCH_LIMIT, 10]);
    expect(calls.flat()).toEqual(items);
  });

  it('never puts two statements of one item in one call', async () => {
    const { b, calls } = batcher();
    await Promise.all(['a', 'b', 'a', 'a', 'c'].map((i) => b.submit(statement(i))));
    expect(calls).toEqual([['a', 'b', 'c'], ['a'], ['a']]);
  });

  it('answers each statement its own outcome, the item it failed on included', async () => {
    const { b } = batcher(() =>
      Promise.resolve([
        {},
        { Error: { Code: 'ConditionalCheckFailed', Message: 'no', Item: { life: 'dead' } } },
        { Error: { Code: 'ConditionalCheckFailed', Message: 'no' } },
      ]),
    );
    const outcomes = await Promise.all(['a', 'b', 'c'].map((i) => b.submit(statement(i))));
    expect(outcomes).toEqual([
      { ok: true },
      { ok: false, code: 'ConditionalCheckFailed', message: 'no', item: { life: 'dead' } },
      { ok: false, code: 'ConditionalCheckFailed', message: 'no' },
    ]);
  });

  it('warns once per call of the statements refused for another reason than their condition: codes and counts, no item', async () => {
    const warnings: Array<{ message: string; attrs: Record<string, unknown> }> = [];
    const b = new StatementBatcher(
      () =>
        Promise.resolve([
          {},
          { Error: { Code: 'ThrottlingError', Message: 'slow down' } },
          { Error: { Code: 'ConditionalCheckFailed', Message: 'no', Item: { secret: 'x' } } },
          { Error: { Code: 'ThrottlingError', Message: 'slow down' } },
          { Error: { Code: 'TransactionConflict', Message: 'busy', Item: { secret: 'y' } } },
        ]),
      5,
      { name: 'test:write', warn: (message, attrs) => warnings.push({ message, attrs }) },
    );
    const outcomes = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map((i) => b.submit(statement(i))),
    );
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.code))).toEqual([
      'ok',
      'ThrottlingError',
      'ConditionalCheckFailed',
      'ThrottlingError',
      'TransactionConflict',
    ]);
    expect(warnings).toEqual([
      {
        message:
          'DynamoDB refused statements of a BatchExecuteStatement for another reason than their condition; each is written alone',
        attrs: {
          calls: 'test:write',
          statements: 3,
          of: 5,
          codes: { ThrottlingError: 2, TransactionConflict: 1 },
        },
      },
    ]);
    expect(JSON.stringify(warnings)).not.toContain('secret');

    // a call with refusals by condition only, or none: no warning
    warnings.length = 0;
    const quiet = new StatementBatcher(
      (statements) =>
        Promise.resolve(
          statements.map((_, i) =>
            i === 0 ? { Error: { Code: 'ConditionalCheckFailed', Message: 'no' } } : {},
          ),
        ),
      5,
      { warn: (message, attrs) => warnings.push({ message, attrs }) },
    );
    await Promise.all(['a', 'b'].map((i) => quiet.submit(statement(i))));
    expect(warnings).toEqual([]);
  });

  it('warns as one JSON line on the console when given no warn', async () => {
    const lines: unknown[] = [];
    const spy = jest.spyOn(console, 'warn').mockImplementation((line) => void lines.push(line));
    try {
      const b = new StatementBatcher(
        () => Promise.resolve([{ Error: { Code: 'AccessDenied', Message: 'denied' } }]),
        5,
        { name: 'launch-batches:mark' },
      );
      await expect(b.submit(statement('a'))).resolves.toMatchObject({
        ok: false,
        code: 'AccessDenied',
      });
    } finally {
      spy.mockRestore();
    }
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toEqual({
      level: 'warn',
      message:
        'DynamoDB refused statements of a BatchExecuteStatement for another reason than their condition; each is written alone',
      calls: 'launch-batches:mark',
      statements: 1,
      of: 1,
      codes: { AccessDenied: 1 },
    });
  });

  it('fails every statement of a call that fails as a whole, and of one answered short', async () => {
    const err = new Error('throttled');
    const failing = batcher(() => Promise.reject(err)).b;
    const answers = await Promise.allSettled(['a', 'b'].map((i) => failing.submit(statement(i))));
    expect(answers).toEqual([
      { status: 'rejected', reason: err },
      { status: 'rejected', reason: err },
    ]);
    const short = batcher(() => Promise.resolve([{}])).b;
    const shortAnswers = await Promise.allSettled(
      ['a', 'b'].map((i) => short.submit(statement(i))),
    );
    expect(shortAnswers.map((a) => a.status)).toEqual(['rejected', 'rejected']);
    expect((shortAnswers[0] as PromiseRejectedResult).reason).toEqual(
      new Error('BatchExecuteStatement answered 1 statements of 2'),
    );
  });
});

describe('the stores on a throttled table', () => {
  it("rejects each caller with the SDK's throttling error once its retries are spent", async () => {
    const { client, sent } = answeredDynamoDb(
      () =>
        Promise.reject(
          new ThrottlingException({
            message: 'Rate of requests exceeds the allowed throughput',
            $metadata: {},
          }),
        ),
      { maxAttempts: 1 },
    );
    const store = new ProvisioningStore(client, 't');
    const run = {
      instanceId: 'i-1',
      imageId: 'ami-1',
      zone: 'us-east-1a',
      instanceType: 't3.small',
      hardware: { arch: 'amd64', cores: 2, mem: 2048 },
    };
    const answers = await Promise.allSettled([
      store.batches.mark('m', '0', { batchId: 'b', tokenSeed: 's0' }),
      store.batches.mark('m', '1', { batchId: 'b', tokenSeed: 's1' }),
      store.recordRunning('m', '2', run),
      store.recordRunning('m', '3', run),
    ]);
    for (const a of answers) {
      expect(a.status).toBe('rejected');
      expect((a as PromiseRejectedResult).reason).toBeInstanceOf(ThrottlingException);
    }
    // one call for the marks, one for the records: nothing sent alone, nothing dropped
    expect(sent.map((c) => c.command)).toEqual([
      'BatchExecuteStatementCommand',
      'BatchExecuteStatementCommand',
    ]);
  });
});

describe('a record refused for another reason than its condition', () => {
  it('is written alone as the UpdateItem before batching, which answers its life (or that it is gone)', async () => {
    // the life each machine's single write finds (a missing one: the item is gone)
    const lives: Record<string, string | undefined> = {
      'MACHINE#0': 'alive',
      'MACHINE#1': 'dying',
      'MACHINE#3': undefined,
    };
    const { client, sent } = answeredDynamoDb(
      ({ command, input }) => {
        if (command === 'BatchExecuteStatementCommand') {
          return {
            Responses: [
              { Error: { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' } },
              { Error: { Code: 'TransactionConflict', Message: 'in a transaction' } },
              {},
              { Error: { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' } },
            ],
          };
        }
        const sk = (input.Key as { sk: string }).sk;
        const life = lives[sk];
        if (life === undefined) {
          return Promise.reject(
            new ConditionalCheckFailedException({
              message: 'The conditional request failed',
              $metadata: {},
            }),
          );
        }
        return { Attributes: { life } };
      },
      { maxAttempts: 1 },
    );
    const store = new ProvisioningStore(client, 't');
    const run = (id: string) => ({
      instanceId: `i-${id}`,
      imageId: 'ami-1',
      zone: 'us-east-1a',
      instanceType: 't3.small',
      hardware: { arch: 'amd64', cores: 2, mem: 2048 },
    });
    const warned: unknown[] = [];
    const spy = jest.spyOn(console, 'warn').mockImplementation((line) => void warned.push(line));
    const answers = await Promise.allSettled(
      ['0', '1', '2', '3'].map((id) => store.recordRunning('m', id, run(id))),
    ).finally(() => spy.mockRestore());
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : a.reason))).toEqual([
      'alive',
      'dying',
      'alive',
      new EntityNotFoundError('machine 3 not found'),
    ]);
    expect((answers[3] as PromiseRejectedResult).reason).toBeInstanceOf(EntityNotFoundError);
    // one call for the four; the three refused for another reason written alone, in order
    expect(sent.map((c) => c.command)).toEqual([
      'BatchExecuteStatementCommand',
      'UpdateItemCommand',
      'UpdateItemCommand',
      'UpdateItemCommand',
    ]);
    const [first, second] = [sent[1]!.input, sent[2]!.input];
    expect(first).toMatchObject({
      TableName: 't',
      Key: { pk: 'MODEL#m', sk: 'MACHINE#0' },
      ConditionExpression: 'attribute_exists(pk)',
      ReturnValues: 'ALL_NEW',
      ExpressionAttributeValues: expect.objectContaining({
        ':status': 'running',
        ':instanceId': 'i-0',
        ':instanceStatus': 'pending',
      }) as unknown,
    });
    expect(first.UpdateExpression).toMatch(/^SET #status = :status, .* REMOVE #zoneClaim, /);
    expect(second).toMatchObject({
      Key: { pk: 'MODEL#m', sk: 'MACHINE#1' },
      ExpressionAttributeValues: expect.objectContaining({ ':instanceId': 'i-1' }) as unknown,
    });
    expect(sent[3]!.input.Key).toEqual({ pk: 'MODEL#m', sk: 'MACHINE#3' });
    // the warning told the three by code
    expect(warned.map((l) => JSON.parse(l as string) as unknown)).toEqual([
      expect.objectContaining({
        calls: 'provisioning:recordRunning',
        statements: 3,
        of: 4,
        codes: { ThrottlingError: 2, TransactionConflict: 1 },
      }),
    ]);
  });
});
