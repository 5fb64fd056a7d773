/**
 * The largest input the API accepts, per field and per request (API.md §1:
 * every string and array in a body has a documented maximum). They keep every
 * record well under DynamoDB's 400 KB item limit, so an oversized input is a
 * `400 bad-request` naming the field and the limit, never a 500 from the
 * table. docs/api.md lists them; functions/schemas.ts puts them in the
 * OpenAPI document.
 */
export const LIMITS = {
  /** A whole request body, in bytes (a deploy's 1,000 `to` directives at their longest fit). */
  bodyBytes: 512 * 1024,
  /** A model or application name (the name pattern's own bound). */
  name: 63,
  region: 32,
  /** A constraints string (Juju's longest real ones are a few hundred characters). */
  constraints: 4096,
  charm: 1024,
  base: 64,
  /** One placement directive (`lxd:N`, `zone=…`, `subnet=…`, `ssh:user@host`). */
  placement: 256,
  /** Directives in a `to` list, and units or machines one request adds. */
  count: 1000,
  /** One relation endpoint, `app` or `app:endpoint`. */
  endpoint: 128,
  /** Endpoints in a relation. */
  endpoints: 2,
  /** A user's password (Cognito's own maximum). */
  password: 256,
  /** An audit page's entries (default 100). */
  auditPage: 500,
  /** An audit cursor, as handed out. */
  cursor: 1024,
} as const;

/** The 400 message for a body over `LIMITS.bodyBytes`. */
export const BODY_TOO_LARGE = `request body must be at most ${LIMITS.bodyBytes} bytes`;
