import {
  BatchExecuteStatementCommand,
  type BatchExecuteStatementCommandOutput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';

/** DynamoDB's limit of statements in one BatchExecuteStatement call. */
export const STATEMENT_BATCH_LIMIT = 25;

/** How long a statement waits for others before its call goes out (unless 25 are waiting first). */
export const STATEMENT_WINDOW_MS = 5;

/**
 * Coalescing of single-item writes (BatchExecuteStatement), on by default:
 * `false` sends each write alone, as UpdateItem (PROVISIONER_DDB_WRITE_BATCHING=off).
 */
export type StatementBatching = { windowMs: number } | false;

export const DEFAULT_STATEMENT_BATCHING: StatementBatching = { windowMs: STATEMENT_WINDOW_MS };

/** One write statement: the item it writes (no two of one item go in one call) and its PartiQL. */
export interface WriteStatement {
  /** The item's key, as one string: DynamoDB refuses a call that names an item twice. */
  item: string;
  statement: string;
  parameters: unknown[];
}

/**
 * A statement's own outcome: done, or refused with DynamoDB's code
 * (`ConditionalCheckFailed`: its WHERE clause did not hold; `item` is the
 * item as it was, absent when there is none).
 */
export type StatementOutcome =
  { ok: true } | { ok: false; code: string; message: string; item?: Record<string, unknown> };

/** Sends one call of up to 25 statements and answers DynamoDB's response for each, in order. */
export type StatementSender = (
  statements: readonly WriteStatement[],
) => Promise<NonNullable<BatchExecuteStatementCommandOutput['Responses']>>;

/** The code of a statement refused by its WHERE clause; any other code is written alone by its store. */
export const CONDITION_FAILED = 'ConditionalCheckFailed';

/** Where a call's statements refused for another reason than their condition are told (once per call). */
export type FallbackWarn = (message: string, attrs: Record<string, unknown>) => void;

/** A warning as one JSON line on the console (the worker's log format for lines outside an activity). */
const warnLine: FallbackWarn = (message, attrs) =>
  console.warn(JSON.stringify({ level: 'warn', message, ...attrs }));

interface Waiting {
  statement: WriteStatement;
  resolve: (outcome: StatementOutcome) => void;
  reject: (err: unknown) => void;
}

/**
 * Gathers conditional single-item writes made close together into one
 * BatchExecuteStatement (up to 25 statements): the call goes out `windowMs`
 * after the first statement that waits, or at once when 25 are waiting.
 * Each statement keeps its own condition and its own outcome, billed as its
 * single-item write would be (no transaction premium); only the per-call
 * cost (the SDK's middleware, signing, parsing; DynamoDB's per-request
 * work) is shared.
 *
 * A call that fails as a whole (throttled past the SDK's retries, the
 * network) fails every statement in it with that error, as each single
 * write would have failed; none is dropped. Two writes of one item never go
 * in one call (DynamoDB refuses the whole call): the later one waits for the
 * next.
 */
export class StatementBatcher {
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  /**
   * `name` says whose calls these are in the warning about statements
   * refused for another reason than their condition (`warn`, a JSON line on
   * the console unless given).
   */
  constructor(
    private readonly send: StatementSender,
    private readonly windowMs: number,
    private readonly options: { name?: string; warn?: FallbackWarn } = {},
  ) {}

  submit(statement: WriteStatement): Promise<StatementOutcome> {
    return new Promise<StatementOutcome>((resolve, reject) => {
      this.queue.push({ statement, resolve, reject });
      if (this.queue.length >= STATEMENT_BATCH_LIMIT) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
    });
  }

  /** Sends what is waiting, up to 25 distinct items; the rest (repeats, overflow) waits a window. */
  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch: Waiting[] = [];
    const later: Waiting[] = [];
    const items = new Set<string>();
    for (const w of this.queue) {
      if (batch.length < STATEMENT_BATCH_LIMIT && !items.has(w.statement.item)) {
        items.add(w.statement.item);
        batch.push(w);
      } else {
        later.push(w);
      }
    }
    this.queue = later;
    if (later.length > 0) this.timer = setTimeout(() => this.flush(), this.windowMs);
    // sent from a task of its own, full or not, so the call never runs on one caller's stack
    // (the capacity meter names every call of a store by the same call site)
    queueMicrotask(() => void this.sendBatch(batch));
  }

  private async sendBatch(batch: Waiting[]): Promise<void> {
    try {
      const responses = await this.send(batch.map((w) => w.statement));
      if (responses.length !== batch.length) {
        throw new Error(
          `BatchExecuteStatement answered ${responses.length} statements of ${batch.length}`,
        );
      }
      this.warnFallbacks(responses);
      batch.forEach((w, i) => {
        const error = responses[i]!.Error;
        if (!error) {
          w.resolve({ ok: true });
          return;
        }
        w.resolve({
          ok: false,
          code: error.Code ?? 'Unknown',
          message: error.Message ?? '',
          ...(error.Item ? { item: error.Item } : {}),
        });
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }

  /**
   * Once per call: how many statements DynamoDB refused for another reason
   * than their condition (throttled, a transaction conflict, denied, not
   * valid), by code. Each is then written alone by its store, so a cause
   * that refuses every statement (a missing PartiQL grant, a statement real
   * DynamoDB parses differently) doubles the writes without failing one:
   * this line says so. Codes and counts only, never an item.
   */
  private warnFallbacks(responses: NonNullable<BatchExecuteStatementCommandOutput['Responses']>) {
    const codes: Record<string, number> = {};
    let count = 0;
    for (const r of responses) {
      if (!r.Error || r.Error.Code === CONDITION_FAILED) continue;
      const code = r.Error.Code ?? 'Unknown';
      codes[code] = (codes[code] ?? 0) + 1;
      count += 1;
    }
    if (count === 0) return;
    (this.options.warn ?? warnLine)(
      'DynamoDB refused statements of a BatchExecuteStatement for another reason than their condition; each is written alone',
      { calls: this.options.name ?? 'statements', statements: count, of: responses.length, codes },
    );
  }
}

/**
 * One BatchExecuteStatement through the document client (its marshalling:
 * plain values in and out), each statement answering the item it failed on.
 */
export async function sendStatements(
  doc: DynamoDBDocumentClient,
  statements: readonly WriteStatement[],
): Promise<NonNullable<BatchExecuteStatementCommandOutput['Responses']>> {
  const out = await doc.send(
    new BatchExecuteStatementCommand({
      Statements: statements.map((s) => ({
        Statement: s.statement,
        Parameters: s.parameters,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      })),
    }),
  );
  return out.Responses ?? [];
}

/** A PartiQL identifier (a table or attribute name), quoted. */
export function quoted(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
