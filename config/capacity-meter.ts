import type { ConsumedCapacity, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { renameSync, writeFileSync } from 'node:fs';
import { sep } from 'node:path';
import { TABLE_SCHEMA } from '../state/schema';

/**
 * Opt-in metering of DynamoDB capacity for the benchmark (`npm run bench`):
 * with `PROVISIONER_METRICS_FILE` set, every DynamoDB command of a client
 * built by `dynamoDbClient` asks for `ReturnConsumedCapacity: TOTAL`, and the
 * read and write units DynamoDB reports are added up and written to that file
 * as JSON every second (and at exit). Off when the variable is unset.
 *
 * Not counted: a write refused by its condition (DynamoDB charges it, but the
 * error carries no ConsumedCapacity) and a cancelled transaction.
 *
 * Transactions are taken at no less than DynamoDB's price: 2 units per item
 * (each KB of it) and per transaction. DynamoDB Local reports 2 for a whole
 * TransactWriteItems whatever its items (measured: 10 Puts of 600 B answered
 * `CapacityUnits: 2`, where DynamoDB charges 20), so its figure is raised to
 * 2 × the items, each counted as under 1 KB (the machine items are: 667 B
 * with an instance recorded); an index the items update is not added.
 *
 * BatchExecuteStatement (PartiQL, state/statement-batch.ts) is billed per
 * statement as its single-item operation. DynamoDB Local reports no
 * ConsumedCapacity for it at all, so when none is reported each statement
 * that succeeded is counted as DynamoDB bills it: a write 1 unit (an item
 * under 1 KB) plus 1 for each index whose key attribute it sets or removes
 * (the index entry written or deleted: what DynamoDB Local reports for the
 * same UpdateItem); a read 1 unit (0.5 if not strongly consistent). A
 * statement refused by its condition is counted as refused (`failed`, as
 * `BatchExecuteStatement:statement`), not added in, as a refused UpdateItem.
 * A statement refused for another reason than its condition (throttled, a
 * transaction conflict, denied, not valid) is written again alone by its
 * store (state/statement-batch.ts): it is also counted as
 * `BatchExecuteStatement:fallback`, which should stay 0 (more than a few
 * means the writes are being made twice).
 *
 * The write units of a BatchExecuteStatement on DynamoDB Local are thus an
 * estimate: 1 per statement and index key, whatever the item's size (each
 * KB of an item over 1 KB is not counted, nor an index entry moved from one
 * key to another, which costs 2); write-batching.test checks it equals what
 * DynamoDB Local reports for the same writes made as UpdateItem.
 */
export const METRICS_FILE_ENV = 'PROVISIONER_METRICS_FILE';
/** Set (to anything) beside METRICS_FILE_ENV: the totals are also kept by call site (`callerLabel`). */
export const METRICS_CALLERS_ENV = 'PROVISIONER_METRICS_CALLERS';

/** How a statement of a BatchExecuteStatement that failed on its own is counted (`failed`). */
export const STATEMENT_REFUSED = 'BatchExecuteStatement:statement';
/** How one that was refused for another reason than its condition, so written again alone, is also counted. */
export const STATEMENT_FALLBACK = 'BatchExecuteStatement:fallback';

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
  // reads or writes by its statements (a call is all one or all the other): statementsKind
  BatchExecuteStatementCommand: 'write',
};

export interface CapacityTotals {
  readUnits: number;
  writeUnits: number;
  /** Metered commands that succeeded, by command name without `Command`. */
  calls: Record<string, number>;
  /** Metered commands that failed (conditional check failures included). */
  failed: Record<string, number>;
  /** The same, by call site (`callerLabel`), when metered with `callers`. */
  byCaller?: Record<string, CallerTotals>;
}

/** What one call site spent: its units, and its calls (and failed calls) by command. */
export interface CallerTotals {
  readUnits: number;
  writeUnits: number;
  calls: Record<string, number>;
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
  totals: Pick<CapacityTotals, 'readUnits' | 'writeUnits'>,
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

/** Units per item of a transaction (each KB of it): twice a plain read's or write's. */
const TRANSACTION_UNITS_PER_ITEM = 2;

/**
 * A transaction's consumed capacity at no less than DynamoDB's price (see
 * above: 2 units per item); any other command's as reported.
 */
export function atTransactionPrice(
  command: string,
  input: Record<string, unknown>,
  consumed: unknown,
): unknown {
  if (command !== 'TransactWriteItems' && command !== 'TransactGetItems') return consumed;
  const items = Array.isArray(input.TransactItems) ? input.TransactItems.length : 0;
  const floor = TRANSACTION_UNITS_PER_ITEM * items;
  const reported = asList(consumed).reduce(
    (t, c) => t + (c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0)),
    0,
  );
  if (reported >= floor) return consumed;
  return { CapacityUnits: floor };
}

/** A BatchExecuteStatement call is all reads (SELECT) or all writes. */
function statementsOf(
  input: Record<string, unknown>,
): Array<{ Statement?: string; ConsistentRead?: boolean }> {
  return Array.isArray(input.Statements)
    ? (input.Statements as Array<{ Statement?: string; ConsistentRead?: boolean }>)
    : [];
}

function statementsKind(input: Record<string, unknown>): 'read' | 'write' {
  const first = statementsOf(input)[0]?.Statement ?? '';
  return /^\s*select\b/i.test(first) ? 'read' : 'write';
}

/** Index key attributes, quoted as PartiQL names them (`"instanceId"`). */
const INDEX_KEYS = [
  ...new Set(TABLE_SCHEMA.globalSecondaryIndexes.flatMap((i) => [i.partitionKey, i.sortKey])),
].filter((k) => k !== TABLE_SCHEMA.partitionKey && k !== TABLE_SCHEMA.sortKey);

/** The indexes a write statement changes an entry of: one per index key attribute it sets or removes. */
function indexWrites(statement: string): number {
  const head = statement.split(/\bWHERE\b/i)[0] ?? '';
  return INDEX_KEYS.filter((key) =>
    new RegExp(`\\b(SET|REMOVE)\\s+"?${key}"?(\\s|=|$)`, 'i').test(head),
  ).length;
}

/**
 * A BatchExecuteStatement's capacity as DynamoDB bills it, for an answer
 * that reports none (DynamoDB Local): see above. Undefined when reported.
 */
export function statementsCapacity(
  input: Record<string, unknown>,
  output: { ConsumedCapacity?: unknown; Responses?: Array<{ Error?: unknown }> },
): { CapacityUnits: number } | undefined {
  if (asList(output.ConsumedCapacity).length > 0) return undefined;
  const statements = statementsOf(input);
  const read = statementsKind(input) === 'read';
  let units = 0;
  (output.Responses ?? []).forEach((r, i) => {
    if (r.Error) return;
    if (read) units += statements[i]?.ConsistentRead === true ? 1 : 0.5;
    else units += 1 + indexWrites(statements[i]?.Statement ?? '');
  });
  return { CapacityUnits: units };
}

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** The project's source root (this file is `<root>/config/capacity-meter.ts`). */
const ROOT = __dirname.slice(0, __dirname.lastIndexOf(sep) + 1);

/**
 * Frames that only carry a call on (the meter, the table's generic helpers):
 * a call site is the first frame past them.
 */
const PLUMBING = new Set([
  `config${sep}capacity-meter`,
  `state${sep}table`,
  `state${sep}batch-get`,
  `state${sep}statement-batch`,
  `state${sep}repository`,
]);

/** `state/zone-claim.ts` → `state/zone-claim`; undefined outside the project's own sources. */
function sourceName(file: string | null | undefined): string | undefined {
  if (!file) return undefined;
  const path = file.startsWith('file://') ? decodeURIComponent(file.slice(7)) : file;
  if (!path.startsWith(ROOT) || path.includes(`${sep}node_modules${sep}`)) return undefined;
  return path.slice(ROOT.length).replace(/\.[cm]?[jt]s$/, '');
}

/** A function's own name (`send`), not one a bundler made up (`import_x.Y.z`). */
const PLAIN_NAME = /^[A-Za-z_$][\w$]*$/;

function siteName(site: NodeJS.CallSite): string | undefined {
  const fn = site.getFunctionName() ?? site.getMethodName();
  return fn && PLAIN_NAME.test(fn) ? fn : undefined;
}

/**
 * `file:function` of the frame at `index`; an anonymous one (a callback) is
 * named by the first named frame after it in the same file (`send`).
 */
function frameLabel(source: string, sites: readonly NodeJS.CallSite[], index: number): string {
  const file = source.slice(source.lastIndexOf(sep) + 1);
  for (let i = index; i < sites.length; i++) {
    if (i > index && sourceName(sites[i]!.getFileName()) !== source) break;
    const name = siteName(sites[i]!);
    if (name) return `${file}:${name}`;
  }
  return `${file}:anonymous`;
}

function stackSites(): NodeJS.CallSite[] {
  // restored as it was found (it is a plain property, not a method of Error)
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const prepare = Error.prepareStackTrace;
  const limit = Error.stackTraceLimit;
  Error.prepareStackTrace = (_err, sites) => sites;
  Error.stackTraceLimit = 40;
  try {
    const holder: { stack?: unknown } = {};
    Error.captureStackTrace(holder, stackSites);
    return Array.isArray(holder.stack) ? (holder.stack as NodeJS.CallSite[]) : [];
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

/**
 * Who made the DynamoDB call now being sent, from the stack (async frames
 * included): the first project frame past the plumbing (`zone-counts:claim`),
 * then, when that one is in `state/`, the first frame outside it, i.e. whoever
 * asked the state layer (`zone-counts:claim < launch:prepareLaunch`).
 * `other` when no project frame is on the stack.
 */
export function callerLabel(): string {
  let inner: string | undefined;
  let innerInState = false;
  const sites = stackSites();
  for (let i = 0; i < sites.length; i++) {
    const source = sourceName(sites[i]!.getFileName());
    if (source === undefined || PLUMBING.has(source)) continue;
    if (inner === undefined) {
      inner = frameLabel(source, sites, i);
      innerInState = source.startsWith(`state${sep}`);
      if (!innerInState) return inner;
      continue;
    }
    if (!source.startsWith(`state${sep}`)) return `${inner} < ${frameLabel(source, sites, i)}`;
  }
  return inner ?? 'other';
}

function callerTotals(totals: CapacityTotals, label: string): CallerTotals {
  const byCaller = (totals.byCaller ??= {});
  return (byCaller[label] ??= { readUnits: 0, writeUnits: 0, calls: {}, failed: {} });
}

/**
 * Installs the metering middleware on a client; the totals grow as commands
 * complete. With `callers`, each call is also added up under its call site
 * (`callerLabel`, read from the stack: a few microseconds a call, so only
 * when asked).
 */
export function meterCapacity(
  client: DynamoDBClient,
  totals: CapacityTotals,
  options: { callers?: boolean } = {},
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const metered = METERED[context.commandName ?? ''];
      if (!metered) return next(args);
      const name = (context.commandName ?? '').replace(/Command$/, '');
      const caller = options.callers ? callerTotals(totals, callerLabel()) : undefined;
      const input = args.input as Record<string, unknown>;
      const statements = name === 'BatchExecuteStatement';
      const kind = statements ? statementsKind(input) : metered;
      args.input = { ...input, ReturnConsumedCapacity: 'TOTAL' };
      try {
        const result = await next(args);
        const output = result.output as {
          ConsumedCapacity?: unknown;
          Responses?: Array<{ Error?: { Code?: string } }>;
        };
        const consumed = statements
          ? (statementsCapacity(input, output) ?? output.ConsumedCapacity)
          : atTransactionPrice(name, input, output.ConsumedCapacity);
        bump(totals.calls, name);
        addConsumed(totals, kind, consumed);
        if (caller) {
          bump(caller.calls, name);
          addConsumed(caller, kind, consumed);
        }
        if (statements) {
          for (const r of output.Responses ?? []) {
            if (!r.Error) continue;
            bump(totals.failed, STATEMENT_REFUSED);
            if (caller) bump(caller.failed, STATEMENT_REFUSED);
            if (r.Error.Code === 'ConditionalCheckFailed') continue;
            bump(totals.failed, STATEMENT_FALLBACK);
            if (caller) bump(caller.failed, STATEMENT_FALLBACK);
          }
        }
        return result;
      } catch (err) {
        bump(totals.failed, name);
        if (caller) bump(caller.failed, name);
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
  meterCapacity(client, processTotals, { callers: Boolean(env[METRICS_CALLERS_ENV]) });
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
