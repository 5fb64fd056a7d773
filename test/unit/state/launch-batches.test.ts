import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { ABANDONED_BATCH_TTL_SECONDS, LaunchBatchStore } from '../../../state/launch-batches';
import type { StatementBatching } from '../../../state/statement-batch';
import { answeredDynamoDb, type SentCommand } from '../../support/answered-dynamodb';

/**
 * A LaunchBatchStore over a DynamoDB client whose calls never leave the
 * process (answered before the document client's marshalling: plain values).
 */
function store(
  answer: (sent: SentCommand) => Record<string, unknown> = () => ({}),
  batching: StatementBatching = false,
) {
  const { client, sent } = answeredDynamoDb(answer);
  return { batches: new LaunchBatchStore(client, 'table', { batching }), sent };
}

const call = {
  region: 'us-east-1',
  zone: 'us-east-1a',
  imageId: 'ami-1',
  instanceType: 't3.micro',
  rootDiskGiB: 8,
  tags: [],
  clientToken: 'token',
};

describe('launch batch records: a sent batch outlives its members', () => {
  it('writes a sent batch without a TTL (it maps unrecorded instances to machines)', async () => {
    const { batches, sent } = store();
    expect(await batches.commit('big', { id: 'b1', members: ['0', '1'], call })).toBe(true);
    expect(sent).toHaveLength(1);
    const item = sent[0]!.input.Item as Record<string, unknown>;
    expect(sent[0]!.command).toBe('PutItemCommand');
    expect(item.state).toBe('sent');
    expect(item.members).toEqual(['0', '1']);
    expect(item).not.toHaveProperty('expiresAt');
  });

  it('writes an abandoned batch with a TTL (it maps nothing)', async () => {
    const before = Math.floor(Date.now() / 1000);
    // the first read finds nothing, so the batch is written abandoned
    const { batches, sent } = store();
    expect(await batches.settle('big', 'b2')).toEqual({
      id: 'b2',
      state: 'abandoned',
      members: [],
    });
    const put = sent.find((s) => s.command === 'PutItemCommand')!;
    const item = put.input.Item as Record<string, unknown>;
    expect(item.state).toBe('abandoned');
    expect(item.expiresAt).toBeGreaterThanOrEqual(before + ABANDONED_BATCH_TTL_SECONDS);
    expect(item.expiresAt).toBeLessThanOrEqual(
      Math.floor(Date.now() / 1000) + ABANDONED_BATCH_TTL_SECONDS,
    );
  });

  it('takes the TTL off a sent record an earlier version wrote with one, when it reads it', async () => {
    const { batches, sent } = store((s) =>
      s.command === 'GetItemCommand'
        ? { Item: { state: 'sent', members: ['0'], expiresAt: 1 } }
        : {},
    );
    expect(await batches.members('big', 'b3')).toEqual(['0']);
    expect(sent.map((s) => s.command)).toEqual(['GetItemCommand', 'UpdateItemCommand']);
    expect(sent[1]!.input.UpdateExpression).toBe('REMOVE #expiresAt');
    expect(sent[1]!.input.ConditionExpression).toBe('#state = :sent');
  });

  it('reads a sent record without a TTL and writes nothing', async () => {
    const { batches, sent } = store(() => ({
      Item: { state: 'sent', members: ['0', '1'] },
    }));
    expect(await batches.members('big', 'b4')).toEqual(['0', '1']);
    expect(sent.map((s) => s.command)).toEqual(['GetItemCommand']);
  });

  it('answers undefined for an abandoned batch, and leaves its TTL', async () => {
    const { batches, sent } = store(() => ({
      Item: { state: 'abandoned', members: [], expiresAt: 1 },
    }));
    expect(await batches.members('big', 'b5')).toBeUndefined();
    expect(sent.map((s) => s.command)).toEqual(['GetItemCommand']);
  });
});

describe('launch batch markers: one launch attempt is a member of one live batch (each mark alone)', () => {
  const marker = { batchId: 'b2', tokenSeed: 'machine:big:0/run/1/1/us-east-1a' };

  it('marks with one conditional write: free when unmarked, for another attempt, or this very batch', async () => {
    const { batches, sent } = store();
    expect(await batches.mark('big', '0', marker)).toEqual({ marked: true });
    expect(sent.map((s) => s.command)).toEqual(['UpdateItemCommand']);
    const input = sent[0]!.input;
    expect(input.ConditionExpression).toBe(
      'attribute_exists(pk) AND #life <> :dead AND (attribute_not_exists(#launchBatch) OR #launchBatch.#tokenSeed <> :seed OR #launchBatch.#batchId = :batch)',
    );
    expect(input.ExpressionAttributeValues).toEqual({
      ':marker': marker,
      ':dead': 'dead',
      ':seed': marker.tokenSeed,
      ':batch': 'b2',
    });
  });

  it('takes the marker over only from the very batch the try settled (replaces), whatever its seed', async () => {
    const { batches, sent } = store();
    expect(await batches.mark('big', '0', marker, { replaces: 'b1' })).toEqual({ marked: true });
    // no "another seed" clause: a stale try never marks over the next attempt's batch
    expect(sent[0]!.input.ConditionExpression).toBe(
      'attribute_exists(pk) AND #life <> :dead AND (#launchBatch.#batchId = :batch OR #launchBatch.#batchId = :replaces)',
    );
    expect(sent[0]!.input.ExpressionAttributeValues).toEqual({
      ':marker': marker,
      ':dead': 'dead',
      ':batch': 'b2',
      ':replaces': 'b1',
    });
    expect(sent[0]!.input.ExpressionAttributeNames).toEqual({
      '#launchBatch': 'launchBatch',
      '#life': 'life',
      '#batchId': 'batchId',
    });
  });

  it('refused while another batch holds the attempt: answers that batch, read once', async () => {
    const { batches, sent } = store((s) => {
      if (s.command === 'UpdateItemCommand') {
        throw new ConditionalCheckFailedException({ message: 'refused', $metadata: {} });
      }
      return {
        Item: { life: 'alive', launchBatch: { batchId: 'b1', tokenSeed: marker.tokenSeed } },
      };
    });
    expect(await batches.mark('big', '0', marker)).toEqual({ marked: false, claimedBy: 'b1' });
    expect(sent.map((s) => s.command)).toEqual(['UpdateItemCommand', 'GetItemCommand']);
  });

  it('refused for a machine gone or Dead: no claim, the batch answers it gone', async () => {
    const refused = (item?: Record<string, unknown>) =>
      store((s) => {
        if (s.command === 'UpdateItemCommand') {
          throw new ConditionalCheckFailedException({ message: 'refused', $metadata: {} });
        }
        return item ? { Item: item } : {};
      }).batches;
    expect(await refused().mark('big', '0', marker)).toEqual({ marked: false });
    expect(
      await refused({ life: 'dead', launchBatch: { batchId: 'b1', tokenSeed: 's' } }).mark(
        'big',
        '0',
        marker,
      ),
    ).toEqual({ marked: false });
  });
});

describe('launch batch markers sent together (BatchExecuteStatement)', () => {
  const marker = { batchId: 'b2', tokenSeed: 'machine:big:0/run/1/1/us-east-1a' };
  const together = { windowMs: 5 };

  it('sends marks made together as one call of the same conditional writes, in PartiQL', async () => {
    const { batches, sent } = store(
      (s) => ({ Responses: (s.input.Statements as unknown[]).map(() => ({})) }),
      together,
    );
    const outcomes = await Promise.all([
      batches.mark('big', '0', marker),
      batches.mark('big', '1', { ...marker, tokenSeed: 'seed-1' }, { replaces: 'b1' }),
    ]);
    expect(outcomes).toEqual([{ marked: true }, { marked: true }]);
    expect(sent.map((s) => s.command)).toEqual(['BatchExecuteStatementCommand']);
    expect(sent[0]!.input.Statements).toEqual([
      {
        Statement:
          'UPDATE "table" SET "launchBatch" = ? WHERE "pk" = ? AND "sk" = ? AND "life" <> ? AND ("launchBatch" IS MISSING OR "launchBatch"."tokenSeed" <> ? OR "launchBatch"."batchId" = ?)',
        Parameters: [marker, 'MODEL#big', 'MACHINE#0', 'dead', marker.tokenSeed, 'b2'],
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      {
        Statement:
          'UPDATE "table" SET "launchBatch" = ? WHERE "pk" = ? AND "sk" = ? AND "life" <> ? AND ("launchBatch"."batchId" = ? OR "launchBatch"."batchId" = ?)',
        Parameters: [
          { ...marker, tokenSeed: 'seed-1' },
          'MODEL#big',
          'MACHINE#1',
          'dead',
          'b2',
          'b1',
        ],
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    ]);
  });

  it('answers a refusal from the item it failed on, with no read; another error is retried alone', async () => {
    const refused = (item?: Record<string, unknown>) => ({
      Error: {
        Code: 'ConditionalCheckFailed',
        Message: 'The conditional request failed',
        ...(item ? { Item: item } : {}),
      },
    });
    const { batches, sent } = store((s) => {
      if (s.command === 'UpdateItemCommand') return {};
      return {
        Responses: [
          refused({ life: 'alive', launchBatch: { batchId: 'b1', tokenSeed: marker.tokenSeed } }),
          refused({ life: 'dead', launchBatch: { batchId: 'b1', tokenSeed: marker.tokenSeed } }),
          refused(),
          refused({ life: 'alive' }),
          { Error: { Code: 'ThrottlingError', Message: 'slow down' } },
        ],
      };
    }, together);
    const warned: unknown[] = [];
    const spy = jest.spyOn(console, 'warn').mockImplementation((line) => void warned.push(line));
    const outcomes = await Promise.all(
      ['0', '1', '2', '3', '4'].map((id) => batches.mark('big', id, marker)),
    ).finally(() => spy.mockRestore());
    // the one written alone is told, once, by its code and count
    expect(warned.map((l) => JSON.parse(l as string) as unknown)).toEqual([
      expect.objectContaining({
        level: 'warn',
        calls: 'launch-batches:mark',
        statements: 1,
        of: 5,
        codes: { ThrottlingError: 1 },
      }),
    ]);
    expect(outcomes).toEqual([
      { marked: false, claimedBy: 'b1' },
      { marked: false },
      { marked: false },
      { marked: false, claimedBy: '' },
      { marked: true },
    ]);
    // the throttled statement alone, as an UpdateItem; no GetItem for any refusal
    expect(sent.map((s) => s.command)).toEqual([
      'BatchExecuteStatementCommand',
      'UpdateItemCommand',
    ]);
    expect(sent[1]!.input.Key).toEqual({ pk: 'MODEL#big', sk: 'MACHINE#4' });
  });
});
