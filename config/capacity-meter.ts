import type { ConsumedCapacity, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { renameSync, writeFileSync } from 'node:fs';

/**
 * Opt-in metering of DynamoDB capacity for the benchmark (`npm run bench`):
 * with `PROVISIONER_METRICS_FILE` set, every DynamoDB command of a client
 * built by `dynamoDbClient` asks for `ReturnConsumedCapacity: TOTAL`, and the
 * read and write units DynamoDB reports are added up and written to that file
 * as JSON every second (and at exit). Off when the variable is unset.
 *
 * Not counted: a write refused by its condition (DynamoDB charges it, but the
 * error carries no ConsumedCapacity) and a cancelled transaction.
 */
export const METRICS_FILE_ENV = 'PROVISIONER_METRICS_FILE';

/** Commands that accept `ReturnConsumedCapacity`, and which kind of units they spend. */
const METERED: Readonly<Record<string, 'read' | 'write'>> = {
  GetItemCommand: 'read',
  QueryCommand: 'read',
  ScanCommand: 'read',
  BatchGetItemCommand: 'read',
  TransactGetItemsCommand: 'read',
  PutItemCommand: 'write',
  UpdateItemCommand: 'write',
  DeleteItemCommand: 'write',
  BatchWriteItemCommand: 'write',
  TransactWriteItemsCommand: 'write',
};

export interface CapacityTotals {
  readUnits: number;
  writeUnits: number;
  /** Metered commands that succeeded, by command name without `Command`. */
  calls: Record<string, number>;
  /** Metered commands that failed (conditional check failures included). */
  failed: Record<string, number>;
}

export function emptyTotals(): CapacityTotals {
  return { readUnits: 0, writeUnits: 0, calls: {}, failed: {} };
}

function asList(consumed: unknown): ConsumedCapacity[] {
  if (Array.isArray(consumed)) return consumed as ConsumedCapacity[];
  if (consumed && typeof consumed === 'object') return [consumed];
  return [];
}

/**
 * Adds one answer's ConsumedCapacity to the totals. Read and write units are
 * taken as reported; when only `CapacityUnits` is there, the command's kind
 * says which they are.
 */
export function addConsumed(
  totals: CapacityTotals,
  kind: 'read' | 'write',
  consumed: unknown,
): void {
  for (const c of asList(consumed)) {
    const read = c.ReadCapacityUnits;
    const write = c.WriteCapacityUnits;
    if (read !== undefined || write !== undefined) {
      totals.readUnits += read ?? 0;
      totals.writeUnits += write ?? 0;
    } else if (kind === 'read') {
      totals.readUnits += c.CapacityUnits ?? 0;
    } else {
      totals.writeUnits += c.CapacityUnits ?? 0;
    }
  }
}

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** Installs the metering middleware on a client; the totals grow as commands complete. */
export function meterCapacity(client: DynamoDBClient, totals: CapacityTotals): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const kind = METERED[context.commandName ?? ''];
      if (!kind) return next(args);
      const name = (context.commandName ?? '').replace(/Command$/, '');
      const input = args.input as Record<string, unknown>;
      args.input = { ...input, ReturnConsumedCapacity: 'TOTAL' };
      try {
        const result = await next(args);
        bump(totals.calls, name);
        addConsumed(
          totals,
          kind,
          (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity,
        );
        return result;
      } catch (err) {
        bump(totals.failed, name);
        throw err;
      }
    },
    { step: 'initialize', name: 'provisionerCapacityMeter' },
  );
}

const processTotals = emptyTotals();
let flusher: NodeJS.Timeout | undefined;

function flush(file: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(
    tmp,
    JSON.stringify({ pid: process.pid, at: new Date().toISOString(), ...processTotals }),
  );
  renameSync(tmp, file);
}

/**
 * Meters `client` into this process's totals when `PROVISIONER_METRICS_FILE`
 * is set, and starts the periodic flush to that file once.
 */
export function meterFromEnv(client: DynamoDBClient, env: NodeJS.ProcessEnv = process.env): void {
  const file = env[METRICS_FILE_ENV];
  if (!file) return;
  meterCapacity(client, processTotals);
  if (flusher) return;
  const safeFlush = () => {
    try {
      flush(file);
    } catch {
      // a missed flush is made up by the next one
    }
  };
  safeFlush();
  flusher = setInterval(safeFlush, 1000);
  flusher.unref();
  process.once('exit', safeFlush);
}
