/** Repository errors; `code` is what the API maps to a status. */
export class EntityNotFoundError extends Error {
  override readonly name = 'EntityNotFoundError';
  readonly code = 'not-found';
}

export class EntityConflictError extends Error {
  override readonly name = 'EntityConflictError';
  readonly code = 'conflict';
}

/**
 * A change that needs more writes than one DynamoDB transaction holds (100):
 * refused whole (409) rather than written in part.
 */
export class TransactionTooLargeError extends Error {
  override readonly name = 'TransactionTooLargeError';
  readonly code = 'conflict';
}

/** Someone else changed what this request read; the request is retried inside, never shown to the user. */
export class ConcurrentChangeError extends Error {
  override readonly name = 'ConcurrentChangeError';
}

/** A request that lost every one of its retries to concurrent changes (only under extreme contention). */
export class ContendedError extends Error {
  override readonly name = 'ContendedError';
  readonly code = 'conflict';
}

const sleepJittered = (attempt: number) =>
  new Promise((r) => setTimeout(r, Math.random() * Math.min(500, 10 * 2 ** Math.min(attempt, 6))));

/**
 * DynamoDB refuses a single-item write to an item a transaction is holding
 * with TransactionConflictException, which the SDK does not retry: retry it.
 */
export async function retryTransactionConflicts<T>(
  fn: () => Promise<T>,
  attempts = 20,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if ((err as Error).name !== 'TransactionConflictException' || attempt >= attempts) throw err;
      await sleepJittered(attempt);
    }
  }
}

/** Runs `fn` again (with jittered backoff) while it loses races, up to `attempts` times. */
export async function retryOnConcurrentChange<T>(fn: () => Promise<T>, attempts = 40): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ConcurrentChangeError)) throw err;
      if (attempt >= attempts) {
        throw new ContendedError(
          'the request lost too many races with concurrent changes; try it again',
        );
      }
      await sleepJittered(attempt);
    }
  }
}
