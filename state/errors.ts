/** Repository errors; `code` is what the API maps to a status. */
export class EntityNotFoundError extends Error {
  override readonly name = 'EntityNotFoundError';
  readonly code = 'not-found';
}

export class EntityConflictError extends Error {
  override readonly name = 'EntityConflictError';
  readonly code = 'conflict';
}

/** Someone else changed what this request read; the request is retried inside, never shown to the user. */
export class ConcurrentChangeError extends Error {
  override readonly name = 'ConcurrentChangeError';
}

/** Runs `fn` again (with jittered backoff) while it loses races, up to `attempts` times. */
export async function retryOnConcurrentChange<T>(fn: () => Promise<T>, attempts = 40): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ConcurrentChangeError) || attempt >= attempts) throw err;
      const ceiling = Math.min(500, 10 * 2 ** Math.min(attempt, 6));
      await new Promise((r) => setTimeout(r, Math.random() * ceiling));
    }
  }
}
