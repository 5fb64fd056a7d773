import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ABANDONED_BATCH_TTL_SECONDS, LaunchBatchStore } from '../../../state/launch-batches';

interface Sent {
  command: string;
  input: Record<string, unknown>;
}

/**
 * A LaunchBatchStore over a DynamoDB client whose calls never leave the
 * process (answered before the document client's marshalling: plain values).
 */
function store(answer: (sent: Sent) => Record<string, unknown> = () => ({})) {
  const sent: Sent[] = [];
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  client.middlewareStack.add(
    (_next, context) => (args) => {
      const s = {
        command: String(context.commandName),
        input: (args as unknown as { input: Record<string, unknown> }).input,
      };
      sent.push(s);
      return Promise.resolve({ output: { $metadata: {}, ...answer(s) }, response: {} });
    },
    { step: 'initialize', name: 'answeredInProcess' },
  );
  return { batches: new LaunchBatchStore(client, 'table'), sent };
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
