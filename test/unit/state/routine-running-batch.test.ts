import { ConditionalCheckFailedException, ThrottlingException } from '@aws-sdk/client-dynamodb';
import {
  ProvisioningStore,
  ROUTINE_ALONE_AT_ONCE,
  ROUTINE_BATCHED_AT_ONCE,
  routineRunningStatement,
  type RoutineOutcome,
  type RoutineRunning,
} from '../../../state/provisioning';
import { THROTTLED_PAUSE_MS } from '../../../state/backoff';
import { STATEMENT_BATCH_LIMIT } from '../../../state/statement-batch';
import { answeredDynamoDb, type SentCommand } from '../../support/answered-dynamodb';

/**
 * The catch-up's routine `running` writes sent together
 * (ProvisioningStore.recordRoutineRunningAll), on a DynamoDB client answered
 * in process: each write's own outcome, calls of 25, a statement refused for
 * another reason written alone, a call that fails failing its writes only.
 */

type Sent = SentCommand;
type Answer = (sent: Sent) => Promise<Record<string, unknown>>;

/** A client whose commands are recorded and answered by `answer` (no network, no retries). */
const answeredClient = (answer: Answer) => answeredDynamoDb(answer, { maxAttempts: 1 });

/** Every statement done. */
const allDone: Answer = ({ input }) =>
  Promise.resolve({ Responses: (input.Statements as unknown[]).map(() => ({})) });

const write = (id: string, addresses?: RoutineRunning['addresses']): RoutineRunning => ({
  model: 'm',
  machineId: id,
  instanceId: `i-${id}`,
  ...(addresses ? { addresses } : {}),
});

/** The machine a statement writes (its `sk` parameter). */
function machineOf(statement: { Parameters?: unknown[] }): string {
  return String(statement.Parameters?.find((p) => String(p).startsWith('MACHINE#'))).slice(8);
}

const statementsOf = (s: Sent) => s.input.Statements as Array<{ Parameters?: unknown[] }>;

const outcomeNames = (outcomes: RoutineOutcome[]) => outcomes.map((o) => o.outcome);

describe('routine running writes sent together', () => {
  it('sends 60 writes as calls of 25, 25 and 10, each write answered written, in order', async () => {
    const { client, sent } = answeredClient(allDone);
    const store = new ProvisioningStore(client, 't');
    const writes = Array.from({ length: 60 }, (_, i) => write(String(i)));
    const outcomes = await store.recordRoutineRunningAll(writes);
    expect(outcomes).toEqual(writes.map(() => ({ outcome: 'written' })));
    expect(sent.map((s) => s.command)).toEqual(Array(3).fill('BatchExecuteStatementCommand'));
    expect(sent.map((s) => statementsOf(s).length)).toEqual([
      STATEMENT_BATCH_LIMIT,
      STATEMENT_BATCH_LIMIT,
      10,
    ]);
    expect(sent.flatMap((s) => statementsOf(s).map(machineOf))).toEqual(
      writes.map((w) => w.machineId),
    );
  });

  it('answers each statement its own outcome: written, refused by its condition (item or none), or written alone when refused for another reason', async () => {
    const alone: Record<string, () => Promise<Record<string, unknown>>> = {
      // throttled in the call, written alone
      'MACHINE#3': () => Promise.resolve({}),
      // in a transaction in the call; alone, the machine has moved on meanwhile: refused
      'MACHINE#4': () =>
        Promise.reject(
          new ConditionalCheckFailedException({
            message: 'The conditional request failed',
            $metadata: {},
          }),
        ),
      // throttled in the call and alone, past the SDK's retries: failed
      'MACHINE#5': () =>
        Promise.reject(new ThrottlingException({ message: 'Rate exceeded', $metadata: {} })),
    };
    const { client, sent } = answeredClient(({ command, input }) => {
      if (command === 'BatchExecuteStatementCommand') {
        return Promise.resolve({
          Responses: [
            {},
            {
              Error: {
                Code: 'ConditionalCheckFailed',
                Message: 'The conditional request failed',
                Item: { life: { S: 'dying' } },
              },
            },
            // a machine that is gone: refused with no item
            {
              Error: { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
            },
            { Error: { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' } },
            { Error: { Code: 'TransactionConflict', Message: 'in a transaction' } },
            { Error: { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' } },
          ],
        });
      }
      return alone[(input.Key as { sk: string }).sk]!();
    });
    const pauses: number[] = [];
    const store = new ProvisioningStore(client, 't', {
      sleep: (ms) => {
        pauses.push(ms);
        return Promise.resolve();
      },
      random: () => 0.5,
    });
    const warned: unknown[] = [];
    const spy = jest.spyOn(console, 'warn').mockImplementation((line) => void warned.push(line));
    const writes = ['0', '1', '2', '3', '4', '5'].map((id) =>
      write(id, { privateAddress: `10.0.0.${id}` }),
    );
    const outcomes = await store.recordRoutineRunningAll(writes).finally(() => spy.mockRestore());

    expect(outcomeNames(outcomes)).toEqual([
      'written',
      'refused',
      'refused',
      'written',
      'refused',
      'failed',
    ]);
    expect(outcomes[5]).toEqual({ outcome: 'failed', error: expect.any(ThrottlingException) });
    // one call for the six; the three refused for another reason written alone as the single
    // routine write (its condition, its addresses), in order
    expect(sent.map((s) => s.command)).toEqual([
      'BatchExecuteStatementCommand',
      'UpdateItemCommand',
      'UpdateItemCommand',
      'UpdateItemCommand',
    ]);
    expect(sent.slice(1).map((s) => (s.input.Key as { sk: string }).sk)).toEqual([
      'MACHINE#3',
      'MACHINE#4',
      'MACHINE#5',
    ]);
    expect(sent[1]!.input).toMatchObject({
      TableName: 't',
      Key: { pk: 'MODEL#m', sk: 'MACHINE#3' },
      ConditionExpression:
        '#instanceId = :instanceId AND #life = :alive AND #status = :running AND ' +
        '(attribute_not_exists(#instanceStatus) OR #instanceStatus IN (:starting, :runs))',
      UpdateExpression:
        'SET #instanceStatus = :state, #statusAt = :now, #updatedAt = :now, ' +
        '#private = :privateAddress REMOVE #public',
      ExpressionAttributeValues: expect.objectContaining({
        ':state': 'running',
        ':instanceId': 'i-3',
        ':privateAddress': '10.0.0.3',
      }) as unknown,
    });
    // two were throttled: one jittered pause before the three alone writes
    expect(pauses).toEqual([THROTTLED_PAUSE_MS * 1.5]);
    // told once for the call, by code and count
    expect(warned.map((l) => JSON.parse(l as string) as unknown)).toEqual([
      expect.objectContaining({
        calls: 'provisioning:recordRoutineRunning',
        statements: 3,
        of: 6,
        codes: { ThrottlingError: 2, TransactionConflict: 1 },
      }),
    ]);
  });

  it('bounds a burst refused for throughput: calls 4 at a time, one jittered pause, then alone 8 at a time, each outcome right', async () => {
    let calls = 0;
    let callsInFlight = 0;
    let mostCalls = 0;
    let alone = 0;
    let mostAlone = 0;
    const events: string[] = [];
    const { client, sent } = answeredClient(async ({ command, input }) => {
      if (command === 'BatchExecuteStatementCommand') {
        calls++;
        callsInFlight++;
        mostCalls = Math.max(mostCalls, callsInFlight);
        await new Promise((r) => setTimeout(r, 10));
        callsInFlight--;
        events.push('call');
        return {
          Responses: (input.Statements as unknown[]).map(() => ({
            Error: { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' },
          })),
        };
      }
      alone++;
      mostAlone = Math.max(mostAlone, alone);
      events.push('alone');
      await new Promise((r) => setTimeout(r, 5));
      alone--;
      const sk = (input.Key as { sk: string }).sk;
      // alone: one refused by its condition, one throttled past the SDK's retries, the rest written
      if (sk === 'MACHINE#7') {
        throw new ConditionalCheckFailedException({ message: 'no', $metadata: {} });
      }
      if (sk === 'MACHINE#8') throw new ThrottlingException({ message: 'slow', $metadata: {} });
      return {};
    });
    const pauses: number[] = [];
    const store = new ProvisioningStore(client, 't', {
      sleep: (ms) => {
        pauses.push(ms);
        events.push('pause');
        return Promise.resolve();
      },
      random: () => 0.999,
    });
    const spy = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const writes = Array.from({ length: 250 }, (_, i) => write(String(i)));
    const outcomes = await store.recordRoutineRunningAll(writes).finally(() => spy.mockRestore());

    expect(outcomeNames(outcomes)).toEqual(
      writes.map((w) =>
        w.machineId === '7' ? 'refused' : w.machineId === '8' ? 'failed' : 'written',
      ),
    );
    // every statement went in a call of 25, no more than 4 calls at once
    expect(calls).toBe(10);
    expect(ROUTINE_BATCHED_AT_ONCE).toBe(4 * STATEMENT_BATCH_LIMIT);
    expect(mostCalls).toBeLessThanOrEqual(ROUTINE_BATCHED_AT_ONCE / STATEMENT_BATCH_LIMIT);
    // each then alone, never more than 8 at once, each once, in order, after one pause
    const updates = sent.filter((s) => s.command === 'UpdateItemCommand');
    expect(updates.map((s) => (s.input.Key as { sk: string }).sk)).toEqual(
      writes.map((w) => `MACHINE#${w.machineId}`),
    );
    expect(mostAlone).toBe(ROUTINE_ALONE_AT_ONCE);
    expect(pauses).toEqual([THROTTLED_PAUSE_MS * 2 - 1]);
    expect(events.indexOf('pause')).toBe(events.lastIndexOf('call') + 1);
    expect(events.indexOf('alone')).toBe(events.indexOf('pause') + 1);
  });

  it('writes alone at once, with no pause, statements refused for another reason than throughput', async () => {
    const { client, sent } = answeredClient(({ command, input }) =>
      Promise.resolve(
        command === 'BatchExecuteStatementCommand'
          ? {
              Responses: (input.Statements as unknown[]).map(() => ({
                Error: { Code: 'TransactionConflict', Message: 'in a transaction' },
              })),
            }
          : {},
      ),
    );
    const pauses: number[] = [];
    const store = new ProvisioningStore(client, 't', {
      sleep: (ms) => {
        pauses.push(ms);
        return Promise.resolve();
      },
    });
    const spy = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const outcomes = await store
      .recordRoutineRunningAll([write('0'), write('1')])
      .finally(() => spy.mockRestore());
    expect(outcomeNames(outcomes)).toEqual(['written', 'written']);
    expect(sent.map((s) => s.command)).toEqual([
      'BatchExecuteStatementCommand',
      'UpdateItemCommand',
      'UpdateItemCommand',
    ]);
    expect(pauses).toEqual([]);
  });

  it('fails the writes of a call that fails as a whole, and only those: nothing is sent alone', async () => {
    const cut = new ThrottlingException({ message: 'Rate exceeded', $metadata: {} });
    let calls = 0;
    const { client, sent } = answeredClient((s) =>
      ++calls === 1 ? Promise.reject(cut) : allDone(s),
    );
    const store = new ProvisioningStore(client, 't');
    const writes = Array.from({ length: 30 }, (_, i) => write(String(i)));
    const outcomes = await store.recordRoutineRunningAll(writes);
    expect(outcomes.slice(0, STATEMENT_BATCH_LIMIT)).toEqual(
      Array(STATEMENT_BATCH_LIMIT).fill({ outcome: 'failed', error: cut }),
    );
    expect(outcomes.slice(STATEMENT_BATCH_LIMIT)).toEqual(Array(5).fill({ outcome: 'written' }));
    expect(sent.map((s) => s.command)).toEqual(Array(2).fill('BatchExecuteStatementCommand'));
  });

  it('writes each alone with batching off, a few at a time, each answered as the single write', async () => {
    let inFlight = 0;
    let most = 0;
    const { client, sent } = answeredClient(async ({ input }) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      const sk = (input.Key as { sk: string }).sk;
      if (sk === 'MACHINE#1') {
        throw new ConditionalCheckFailedException({ message: 'no', $metadata: {} });
      }
      if (sk === 'MACHINE#2') throw new ThrottlingException({ message: 'slow', $metadata: {} });
      return {};
    });
    const store = new ProvisioningStore(client, 't', { batching: false });
    const writes = Array.from({ length: 20 }, (_, i) => write(String(i)));
    const outcomes = await store.recordRoutineRunningAll(writes);
    expect(outcomeNames(outcomes)).toEqual([
      'written',
      'refused',
      'failed',
      ...Array(17).fill('written'),
    ]);
    expect(sent.map((s) => s.command)).toEqual(Array(20).fill('UpdateItemCommand'));
    expect(most).toBe(ROUTINE_ALONE_AT_ONCE);
  });

  it('answers nothing for no writes, and sends nothing', async () => {
    const { client, sent } = answeredClient(allDone);
    const store = new ProvisioningStore(client, 't');
    await expect(store.recordRoutineRunningAll([])).resolves.toEqual([]);
    expect(sent).toEqual([]);
  });
});

describe('the routine running write as a statement', () => {
  const NOW = new Date('2026-11-27T05:00:00Z');

  it('sets the state, its time and the addresses given, removes the one absent, under the single write’s condition', () => {
    const s = routineRunningStatement('t', write('3', { privateAddress: '10.0.0.5' }), NOW);
    expect(s.item).toBe('MODEL#m\nMACHINE#3');
    expect(s.statement).toBe(
      'UPDATE "t" SET "instanceStatus" = ? SET "instanceStatusAt" = ? SET "updatedAt" = ? ' +
        'SET "privateAddress" = ? REMOVE "publicAddress" ' +
        'WHERE "pk" = ? AND "sk" = ? AND "instanceId" = ? AND "life" = ? AND "status" = ? ' +
        'AND ("instanceStatus" IS MISSING OR "instanceStatus" = ? OR "instanceStatus" = ?)',
    );
    expect(s.parameters).toEqual([
      'running',
      '2026-11-27T05:00:00.000Z',
      '2026-11-27T05:00:00.000Z',
      '10.0.0.5',
      'MODEL#m',
      'MACHINE#3',
      'i-3',
      'alive',
      'running',
      'pending',
      'running',
    ]);
  });

  it('touches no address without addresses, and removes both when EC2 listed none', () => {
    const none = routineRunningStatement('t', write('3'), NOW);
    expect(none.statement).not.toMatch(/Address/);
    expect(none.parameters).toHaveLength(10);
    const empty = routineRunningStatement('t', write('3', {}), NOW);
    expect(empty.statement).toContain('REMOVE "privateAddress" REMOVE "publicAddress" WHERE');
    expect(empty.parameters).toHaveLength(10);
  });
});
