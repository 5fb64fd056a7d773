/** Repository errors; `code` is what the API maps to a status. */
export class EntityNotFoundError extends Error {
  override readonly name = 'EntityNotFoundError';
  readonly code = 'not-found';
}

export class EntityConflictError extends Error {
  override readonly name = 'EntityConflictError';
  readonly code = 'conflict';
}
