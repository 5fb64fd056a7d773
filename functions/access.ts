import { CognitoJwtVerifier } from 'aws-jwt-verify';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import type { Fetcher } from 'aws-jwt-verify/https';
import { ADMIN_USER, type ControllerAccess, type ModelAccess } from '../core/access';
import { bearerToken, tokensMatch, tokenSourceFromEnv, type TokenSource } from '../config/auth';
import { dynamoDbClient } from '../config/clients';
import { serviceEndpoints } from '../config/env';
import { identitySettings, type IdentitySettings } from '../config/identity';
import { logger } from '../config/logger';
import { METRIC, metricsNamespace, unitOf } from '../config/metrics';
import { AccessStore } from '../state/access';
import { AuditStore, type AuditEntry } from '../state/audit';
import { UnauthorizedError } from './errors';

/** Who is calling: the admin token's `admin`, or a pool user, with their controller access. */
export interface Caller {
  user: string;
  access: ControllerAccess;
}

/**
 * The request pipeline's view of identity (functions/http.ts): who is calling,
 * what they may do on a model, and where the audit goes. One per container.
 */
export interface Gate {
  authenticate(authorization: string | undefined): Promise<Caller>;
  /** The caller's level on a model; undefined: none. A superuser has `admin` everywhere. */
  modelAccess(caller: Caller, model: string): Promise<ModelAccess | undefined>;
  /** Records an answered request. May fail: the pipeline decides what that means. */
  audit(entry: AuditEntry): Promise<void>;
}

/** Verifies a pool's access tokens; resolves to the token's user and issue time, or throws. */
export type PoolTokenVerifier = (
  token: string,
) => Promise<{ user: string; sub: string; issuedAt: number }>;

/**
 * The JWKS of a pool served somewhere else than AWS's regional endpoint
 * (locally moto, at `<endpoint>/<pool>/.well-known/jwks.json`): aws-jwt-verify
 * asks for the AWS address, derived from the issuer it checks; this fetcher
 * reads the same path from the endpoint instead. Loopback plain HTTP only.
 */
export class EndpointJwksFetcher implements Fetcher {
  constructor(private readonly endpoint: string) {
    const url = new URL(endpoint);
    if (url.protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
      throw new Error(`cognito endpoint ${endpoint}: plain HTTP is allowed on loopback only`);
    }
  }

  async fetch(uri: string): Promise<ArrayBuffer> {
    const path = new URL(uri).pathname;
    const res = await fetch(`${this.endpoint.replace(/\/+$/, '')}${path}`, {
      signal: AbortSignal.timeout(5_000),
    });
    if (!res.ok) throw new Error(`JWKS ${path}: HTTP ${res.status}`);
    return res.arrayBuffer();
  }
}

export function poolTokenVerifier(pool: NonNullable<IdentitySettings['pool']>): PoolTokenVerifier {
  const verifier = CognitoJwtVerifier.create(
    { userPoolId: pool.userPoolId, clientId: pool.clientId, tokenUse: 'access' },
    pool.endpoint
      ? { jwksCache: new SimpleJwksCache({ fetcher: new EndpointJwksFetcher(pool.endpoint) }) }
      : undefined,
  );
  return async (token) => {
    const payload = await verifier.verify(token);
    const user = payload.username;
    if (typeof user !== 'string' || user === '') throw new Error('token names no user');
    return {
      user,
      sub: payload.sub,
      issuedAt: typeof payload.iat === 'number' ? payload.iat : payload.auth_time,
    };
  };
}

const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);

export interface GateParts {
  /** The admin token, when it is enabled. */
  adminToken?: TokenSource;
  verifyPoolToken?: PoolTokenVerifier;
  access?: AccessStore;
  audit?: AuditStore;
}

export function createGate(parts: GateParts): Gate {
  return {
    async authenticate(authorization) {
      const presented = bearerToken(authorization);
      if (presented === undefined) throw new UnauthorizedError();
      if (parts.adminToken && tokensMatch(presented, await parts.adminToken())) {
        return { user: ADMIN_USER, access: 'superuser' };
      }
      if (!parts.verifyPoolToken || !looksLikeJwt(presented)) throw new UnauthorizedError();
      let claims: Awaited<ReturnType<PoolTokenVerifier>>;
      try {
        claims = await parts.verifyPoolToken(presented);
      } catch {
        // signature, issuer, token_use, client_id or expiry: which one is not the caller's business
        throw new UnauthorizedError();
      }
      // `admin` is the admin token's; a pool user of that name would inherit its grants
      if (claims.user === ADMIN_USER) throw new UnauthorizedError();
      const state = parts.access
        ? await parts.access.getUser(claims.user)
        : ({ kind: 'unknown' } as const);
      switch (state.kind) {
        case 'removed':
          // every token, old or new, while the tombstone lives: a removal cut
          // off before the pool forgot the user must not let them back in
          // (re-adding the user replaces the tombstone)
          throw new UnauthorizedError('the user of this token has been removed');
        case 'user':
          if (state.user.sub !== undefined && state.user.sub !== claims.sub)
            throw new UnauthorizedError('the user of this token has been removed');
          return { user: claims.user, access: state.user.access };
        case 'unknown':
          // every pool user has `login` (API.md)
          return { user: claims.user, access: 'login' };
      }
    },
    async modelAccess(caller, model) {
      if (caller.access === 'superuser') return 'admin';
      if (!parts.access) return undefined;
      return parts.access.modelAccess(model, caller.user);
    },
    async audit(entry) {
      if (parts.audit) await parts.audit.record(entry);
    },
  };
}

/** Only the admin token, no pool, no grants, no audit: for tests of the pipeline alone. */
export function adminTokenGate(token: TokenSource): Gate {
  return createGate({ adminToken: token });
}

let gate: Gate | undefined;

/** The gate of this container, from the environment (built at first use). */
export function gateFromEnv(): Gate {
  if (gate) return gate;
  const settings = identitySettings();
  // the table is reached only when a request needs it (the admin token alone needs none)
  let stores: { access: AccessStore; audit: AuditStore } | undefined;
  const table = () => {
    if (!stores) {
      const endpoints = serviceEndpoints();
      const ddb = dynamoDbClient(endpoints);
      stores = {
        access: new AccessStore(ddb, endpoints.tableName),
        audit: new AuditStore(ddb, endpoints.tableName, settings.auditRetentionDays),
      };
    }
    return stores;
  };
  gate = createGate({
    ...(settings.adminTokenEnabled ? { adminToken: tokenSourceFromEnv() } : {}),
    ...(settings.pool ? { verifyPoolToken: poolTokenVerifier(settings.pool) } : {}),
    get access() {
      return table().access;
    },
    get audit() {
      return table().audit;
    },
  });
  return gate;
}

/**
 * What happens when the audit write fails (README, "Audit"): the request's
 * effect stands and its answer goes out as it was; the failure is logged
 * with the entry (no body, token or password is in it) and counted as the
 * metric `AuditWriteFailures` in the environment's namespace (`Provisioner/<env>`),
 * service-wide like the API's other metrics (dimension `service`, which the
 * logger's line carries), in the same line (embedded metric format), so the
 * count and the entry it lost cannot part.
 */
export function reportAuditFailure(entry: AuditEntry, err: unknown): void {
  logger.error('audit entry not written', {
    audit: entry,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: metricsNamespace(),
          Dimensions: [['service']],
          Metrics: [{ Name: METRIC.auditWriteFailures, Unit: unitOf(METRIC.auditWriteFailures) }],
        },
      ],
    },
    [METRIC.auditWriteFailures]: 1,
  });
}
