import {
  BatchExecuteStatementCommand,
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  addConsumed,
  atTransactionPrice,
  emptyTotals,
  meterCapacity,
  meterFromEnv,
  STATEMENT_FALLBACK,
  STATEMENT_REFUSED,
  statementsCapacity,
} from '../../../config/capacity-meter';
import { LaunchBatchStore } from '../../../state/launch-batches';

interface Exchange {
  target: string;
  body: Record<string, unknown>;
}

/** A DynamoDB client whose transport answers from a table of canned bodies, recording what it was sent. */
function fakeClient(answers: Record<string, { status?: number; body: unknown }>) {
  const sent: Exchange[] = [];
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
    requestHandler: {
      handle: (request: { headers: Record<string, string>; body?: unknown }) => {
        const target = (request.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
        sent.push({
          target,
          body: JSON.parse(new TextDecoder().decode(request.body as Uint8Array)) as Record<
            string,
            unknown
          >,
        });
        const answer = answers[target] ?? { body: {} };
        const status = answer.status ?? 200;
        return Promise.resolve({
          response: {
            statusCode: status,
            reason: status === 200 ? 'OK' : 'Bad Request',
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Readable.from([Buffer.from(JSON.stringify(answer.body))]),
          },
        });
      },
    } as never,
  });
  return { client, sent };
}

describe('DynamoDB capacity metering', () => {
  it('asks for TOTAL consumed capacity on data commands and adds up the units reported', async () => {
    const { client, sent } = fakeClient({
      PutItem: { body: { ConsumedCapacity: { TableName: 't', CapacityUnits: 3 } } },
      GetItem: { body: { ConsumedCapacity: { TableName: 't', CapacityUnits: 0.5 } } },
      TransactWriteItems: {
        body: {
          ConsumedCapacity: [
            { TableName: 't', CapacityUnits: 4, WriteCapacityUnits: 4 },
            { TableName: 'u', CapacityUnits: 2, WriteCapacityUnits: 2 },
          ],
        },
      },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals);
    await client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' } } }));
    await client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } }));
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [{ Put: { TableName: 't', Item: { pk: { S: 'b' } } } }],
      }),
    );
    expect(sent.map((s) => [s.target, s.body.ReturnConsumedCapacity])).toEqual([
      ['PutItem', 'TOTAL'],
      ['GetItem', 'TOTAL'],
      ['TransactWriteItems', 'TOTAL'],
    ]);
    expect(totals).toEqual({
      readUnits: 0.5,
      writeUnits: 9,
      calls: { PutItem: 1, GetItem: 1, TransactWriteItems: 1 },
      failed: {},
    });
  });

  it('leaves commands that take no ReturnConsumedCapacity alone', async () => {
    const { client, sent } = fakeClient({ CreateTable: { body: {} } });
    const totals = emptyTotals();
    meterCapacity(client, totals);
    await client.send(
      new CreateTableCommand({
        TableName: 't',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    expect(sent[0]?.body.ReturnConsumedCapacity).toBeUndefined();
    expect(totals).toEqual(emptyTotals());
  });

  it('counts a refused write as failed, with no units, and rethrows the error', async () => {
    const { client } = fakeClient({
      PutItem: {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
          message: 'The conditional request failed',
        },
      },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals);
    await expect(
      client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' } } })),
    ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(totals).toEqual({ readUnits: 0, writeUnits: 0, calls: {}, failed: { PutItem: 1 } });
  });

  it('takes reported read and write units over the command kind', () => {
    const totals = emptyTotals();
    addConsumed(totals, 'write', { CapacityUnits: 3, ReadCapacityUnits: 1, WriteCapacityUnits: 2 });
    addConsumed(totals, 'read', [{ CapacityUnits: 1.5 }, { CapacityUnits: 0.5 }]);
    addConsumed(totals, 'read', undefined);
    expect(totals).toMatchObject({ readUnits: 3, writeUnits: 2 });
  });

  it('writes the totals to PROVISIONER_METRICS_FILE when it is set, and does nothing otherwise', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'meter-')), 'ddb.json');
    const off = fakeClient({ PutItem: { body: { ConsumedCapacity: { CapacityUnits: 1 } } } });
    meterFromEnv(off.client, {});
    await off.client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' } } }));
    expect(off.sent[0]?.body.ReturnConsumedCapacity).toBeUndefined();

    const on = fakeClient({ PutItem: { body: { ConsumedCapacity: { CapacityUnits: 2 } } } });
    meterFromEnv(on.client, { PROVISIONER_METRICS_FILE: file });
    await on.client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' } } }));
    const deadline = Date.now() + 10_000;
    let written: { writeUnits?: number; pid?: number } = {};
    while (Date.now() < deadline && written.writeUnits !== 2) {
      await new Promise((r) => setTimeout(r, 200));
      written = JSON.parse(readFileSync(file, 'utf8')) as typeof written;
    }
    expect(written).toMatchObject({ writeUnits: 2, pid: process.pid });
  });

  it('prices a transaction at 2 units per item when DynamoDB Local reports less', async () => {
    const { client } = fakeClient({
      TransactWriteItems: { body: { ConsumedCapacity: [{ TableName: 't', CapacityUnits: 2 }] } },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals);
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: Array.from({ length: 10 }, (_, i) => ({
          Put: { TableName: 't', Item: { pk: { S: `k${i}` } } },
        })),
      }),
    );
    expect(totals.writeUnits).toBe(20);
    // a figure at or over the floor is kept; other commands are never touched
    const reported = [{ TableName: 't', CapacityUnits: 7 }];
    expect(atTransactionPrice('TransactWriteItems', { TransactItems: [{}, {}] }, reported)).toBe(
      reported,
    );
    expect(atTransactionPrice('PutItem', {}, { CapacityUnits: 1 })).toEqual({ CapacityUnits: 1 });
    expect(
      atTransactionPrice('TransactGetItems', { TransactItems: [{}, {}, {}] }, undefined),
    ).toEqual({ CapacityUnits: 6 });
  });

  it('keeps the totals by call site when asked: the state method, then who asked it', async () => {
    const { client } = fakeClient({
      GetItem: {
        body: {
          Item: { launchBatch: { M: { batchId: { S: 'b1' }, tokenSeed: { S: 's' } } } },
          ConsumedCapacity: { TableName: 't', CapacityUnits: 1 },
        },
      },
      PutItem: {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
          message: 'The conditional request failed',
        },
      },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals, { callers: true });
    const store = new LaunchBatchStore(client, 't');
    async function askMarker() {
      return await store.marker('m', '1');
    }
    async function putRefused() {
      await client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' } } }));
    }
    await expect(askMarker()).resolves.toEqual({ batchId: 'b1', tokenSeed: 's' });
    await expect(putRefused()).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(totals.byCaller).toEqual({
      'launch-batches:marker < capacity-meter.test:askMarker': {
        readUnits: 1,
        writeUnits: 0,
        calls: { GetItem: 1 },
        failed: {},
      },
      'capacity-meter.test:putRefused': {
        readUnits: 0,
        writeUnits: 0,
        calls: {},
        failed: { PutItem: 1 },
      },
    });
  });

  it('keeps no totals by call site unless asked', async () => {
    const { client } = fakeClient({
      PutItem: { body: { ConsumedCapacity: { CapacityUnits: 1 } } },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals);
    await client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' } } }));
    expect(totals.byCaller).toBeUndefined();
  });

  it('counts a BatchExecuteStatement as DynamoDB bills it when DynamoDB Local reports nothing', async () => {
    const record =
      'UPDATE "t" SET "status" = ? SET "instanceId" = ? REMOVE "zoneClaim" WHERE "pk" = ? AND "sk" = ? AND "life" = ?';
    const mark =
      'UPDATE "t" SET "launchBatch" = ? WHERE "pk" = ? AND "sk" = ? AND "instanceId" IS MISSING';
    const { client } = fakeClient({
      BatchExecuteStatement: {
        body: {
          Responses: [
            {},
            {},
            {
              Error: { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
            },
            { Error: { Code: 'TransactionConflict', Message: 'in a transaction' } },
          ],
        },
      },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals, { callers: true });
    async function sendTogether() {
      await client.send(
        new BatchExecuteStatementCommand({
          Statements: [
            { Statement: record },
            { Statement: mark },
            { Statement: record },
            { Statement: mark },
          ],
        }),
      );
    }
    await sendTogether();
    // the record: 1 for the item, 1 for the byInstance entry its instanceId makes; the mark
    // (instanceId only in its WHERE): 1; the refused record: counted refused, not added in; the
    // mark in a transaction: refused, and counted as written again alone (fallback)
    expect(totals).toMatchObject({
      readUnits: 0,
      writeUnits: 3,
      calls: { BatchExecuteStatement: 1 },
      failed: { [STATEMENT_REFUSED]: 2, [STATEMENT_FALLBACK]: 1 },
    });
    expect(totals.byCaller).toEqual({
      'capacity-meter.test:sendTogether': {
        readUnits: 0,
        writeUnits: 3,
        calls: { BatchExecuteStatement: 1 },
        failed: { [STATEMENT_REFUSED]: 2, [STATEMENT_FALLBACK]: 1 },
      },
    });
  });

  it('takes the capacity DynamoDB reports for a BatchExecuteStatement as it is', () => {
    const input = { Statements: [{ Statement: 'UPDATE "t" SET "instanceId" = ? WHERE "pk" = ?' }] };
    expect(
      statementsCapacity(input, {
        ConsumedCapacity: [{ TableName: 't', CapacityUnits: 5 }],
        Responses: [{}],
      }),
    ).toBeUndefined();
    expect(statementsCapacity(input, { Responses: [{}] })).toEqual({ CapacityUnits: 2 });
    const reads = {
      Statements: [{ Statement: 'SELECT * FROM "t" WHERE "pk" = ?' }, { Statement: 'select x' }],
    };
    expect(statementsCapacity(reads, { Responses: [{}, {}] })).toEqual({ CapacityUnits: 1 });
    const consistent = {
      Statements: reads.Statements.map((r) => ({ ...r, ConsistentRead: true })),
    };
    expect(statementsCapacity(consistent, { Responses: [{}, {}] })).toEqual({ CapacityUnits: 2 });
  });

  it("names a store's writes sent together by the store's method, whoever made them", async () => {
    const { client } = fakeClient({
      BatchExecuteStatement: { body: { Responses: [{}, {}] } },
    });
    const totals = emptyTotals();
    meterCapacity(client, totals, { callers: true });
    const store = new LaunchBatchStore(client, 't');
    async function markTwo() {
      return await Promise.all([
        store.mark('m', '1', { batchId: 'b', tokenSeed: 's1' }),
        store.mark('m', '2', { batchId: 'b', tokenSeed: 's2' }),
      ]);
    }
    await expect(markTwo()).resolves.toEqual([{ marked: true }, { marked: true }]);
    expect(Object.keys(totals.byCaller ?? {})).toEqual(['launch-batches:markTogether']);
    expect(totals.byCaller?.['launch-batches:markTogether']).toMatchObject({
      writeUnits: 2,
      calls: { BatchExecuteStatement: 1 },
    });
  });
});
