import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { QueryParams } from './query';

/**
 * RunInstances idempotency by ClientToken, the AWS way
 * (docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html):
 * - zonal when the request names a zone (Placement.AvailabilityZone, or a
 *   subnet); regional when it names none;
 * - same token and same parameters → the first launch's reservation, nothing
 *   launched again; same token with other parameters (the zone aside) →
 *   IdempotentParameterMismatch;
 * - only successful launches hold their token.
 * moto itself launches again for a repeated token, hence this layer.
 */

export interface IdempotencyScope {
  /** Who is asking: access key and account header (moto maps them to an account). */
  readonly principal: string;
  readonly region: string;
}

/** Who is calling and where: the SigV4 credential scope, and moto's account header. */
export function callerScope(headers: IncomingHttpHeaders): IdempotencyScope {
  const auth = headers.authorization ?? '';
  const m = /Credential=([^/,\s]+)\/\d{8}\/([^/,\s]+)\//.exec(auth);
  const account = headers['x-moto-account-id'];
  return {
    principal: `${m?.[1] ?? ''}|${typeof account === 'string' ? account : ''}`,
    region: m?.[2] ?? 'us-east-1',
  };
}

/** The key a token is held under: per principal and region, and per zone for zonal requests. */
export function idempotencyKey(
  scope: IdempotencyScope,
  zonalZone: string | undefined,
  clientToken: string,
): string {
  const where = zonalZone === undefined ? 'regional' : `zone=${zonalZone}`;
  return JSON.stringify([scope.principal, scope.region, where, clientToken]);
}

// Not compared: the token itself, the API version, and the zone ("other than the
// Region or Availability Zone").
const UNCOMPARED_PARAMS = new Set([
  'Action',
  'Version',
  'ClientToken',
  'Placement.AvailabilityZone',
]);

/** A digest of everything in a RunInstances request that a retry must repeat, order-independent. */
export function launchFingerprint(params: QueryParams): string {
  const compared = params
    .filter(([k]) => !UNCOMPARED_PARAMS.has(k))
    .map(([k, v]) => `${k}=${v}`)
    .sort();
  return createHash('sha256').update(JSON.stringify(compared)).digest('hex');
}

/** A launch that succeeded with a token. */
export interface LaunchRecord {
  readonly fingerprint: string;
  readonly reservationId: string;
  readonly instanceIds: readonly string[];
  /** moto's answer to the launch, byte for byte (used when the instances cannot be described). */
  readonly responseBody: string;
}

export type ReplayDecision = 'replay' | 'mismatch';

export function decideReplay(record: LaunchRecord, fingerprint: string): ReplayDecision {
  return record.fingerprint === fingerprint ? 'replay' : 'mismatch';
}

/** What `acquire` hands back: a stored launch, or the right (and duty) to launch. */
export type Acquired =
  | { readonly kind: 'stored'; readonly record: LaunchRecord }
  | {
      readonly kind: 'owner';
      /** Ends the launch: a record stores the token; undefined (a failure) leaves it free. */
      readonly release: (record: LaunchRecord | undefined) => void;
    };

/**
 * Successful launches by key, plus the launches in flight, so that two
 * concurrent requests with one token make one launch: the second waits for
 * the first and then sees its record (or, if it failed, launches itself).
 */
export class IdempotencyStore {
  private readonly records = new Map<string, LaunchRecord>();
  private readonly inFlight = new Map<string, Promise<void>>();

  async acquire(key: string): Promise<Acquired> {
    for (;;) {
      const record = this.records.get(key);
      if (record) return { kind: 'stored', record };
      const pending = this.inFlight.get(key);
      if (!pending) break;
      await pending;
    }
    let done: () => void = () => undefined;
    this.inFlight.set(
      key,
      new Promise<void>((resolve) => {
        done = resolve;
      }),
    );
    let released = false;
    return {
      kind: 'owner',
      release: (record) => {
        if (released) return;
        released = true;
        if (record) this.records.set(key, record);
        this.inFlight.delete(key);
        done();
      },
    };
  }

  /** Drops a stored token (its instances no longer exist at moto, e.g. after a moto reset). */
  forget(key: string): void {
    this.records.delete(key);
  }

  get size(): number {
    return this.records.size;
  }
}
