import { saveUserLogin, type Env, type PoolInfo, type TokenSource, type UserLogin } from './config';
import { CliError } from './errors';

/** Tokens the pool gave: an access token for `expiresIn` seconds, and on login a refresh token. */
export interface PoolTokens {
  accessToken: string;
  expiresIn: number;
  refreshToken?: string;
}

/** Why the pool said no, as the CLI tells it apart. */
export type PoolRefusal = 'credentials' | 'revoked' | 'other';

/** A refusal by the pool (as opposed to not reaching it). The message is the pool's, never a secret. */
export class PoolError extends Error {
  constructor(
    readonly reason: PoolRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'PoolError';
  }
}

/**
 * The calls the CLI makes to the user pool (Cognito's InitiateAuth, and
 * RevokeToken at logout), so tests can hand in their own.
 */
export interface IdentityProvider {
  passwordAuth(pool: PoolInfo, user: string, password: string): Promise<PoolTokens>;
  refresh(pool: PoolInfo, refreshToken: string): Promise<PoolTokens>;
  /**
   * Revokes a refresh token at the pool: no new access token is issued with
   * it. Access tokens already issued are not made invalid at this API (it
   * checks their signature and expiry, not revocation); the CLI forgets its
   * own. Resolves once the pool has revoked the token, or when the pool says
   * the token itself was no longer valid (revoked or expired); rejects with a
   * CliError saying why not for anything else, a NotAuthorizedException about
   * the app client included.
   */
  revoke(pool: PoolInfo, refreshToken: string): Promise<void>;
}

/** How long logout waits for the pool to revoke the refresh token before leaving it be. */
export const REVOKE_TIMEOUT_MS = 10_000;

/** An access token is renewed this long before it expires, so it does not lapse on the way. */
export const RENEW_BEFORE_MS = 60_000;

export function loginAgain(user: string): string {
  return `log in again with "provisioner login --user ${user}"`;
}

/** The line a person sees when their stored login can no longer be renewed. */
export function expiredLogin(login: Pick<UserLogin, 'user' | 'apiUrl'>): CliError {
  return new CliError(
    `the login of "${login.user}" to ${login.apiUrl} has expired or was revoked: ${loginAgain(login.user)}`,
  );
}

/**
 * The access token of a stored `login --user`: the stored one while it has
 * more than a minute left, else a new one from the pool with the refresh
 * token (REFRESH_TOKEN_AUTH), written back to the credentials file (0600) so
 * the next command reuses it. A refresh token the pool refuses (expired,
 * revoked by a sign-out, the user removed) is one line: log in again.
 */
export class UserTokens implements TokenSource {
  private renewing?: Promise<string>;

  constructor(
    private login: UserLogin,
    private readonly idp: IdentityProvider,
    private readonly env: Env,
    private readonly now: () => Date,
  ) {}

  get current(): UserLogin {
    return this.login;
  }

  /** Whether the stored access token still has more than RENEW_BEFORE_MS to run. */
  fresh(): boolean {
    const expires = Date.parse(this.login.expiresAt);
    return Number.isFinite(expires) && expires - RENEW_BEFORE_MS > this.now().getTime();
  }

  token(): Promise<string> {
    return this.fresh() ? Promise.resolve(this.login.accessToken) : this.renew();
  }

  renew(): Promise<string> {
    this.renewing ??= this.doRenew().finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  private async doRenew(): Promise<string> {
    let tokens: PoolTokens;
    try {
      tokens = await this.idp.refresh(this.login.pool, this.login.refreshToken);
    } catch (err) {
      if (err instanceof PoolError && err.reason !== 'other') throw expiredLogin(this.login);
      throw err;
    }
    this.login = {
      ...this.login,
      accessToken: tokens.accessToken,
      expiresAt: expiryTime(this.now(), tokens.expiresIn),
      ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
    };
    saveUserLogin(this.login, this.env);
    return this.login.accessToken;
  }
}

export function expiryTime(now: Date, expiresInSeconds: number): string {
  return new Date(now.getTime() + expiresInSeconds * 1000).toISOString();
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : '';
}

const NETWORK_CODE_IN_MESSAGE =
  /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)\b/;

function networkCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  // the SDK wraps a non-Error throw of another realm ("AWS SDK error wrapper for Error: connect
  // ECONNREFUSED …"), keeping only the message
  const message = err instanceof Error ? err.message : '';
  return NETWORK_CODE_IN_MESSAGE.exec(message)?.[1];
}

function poolWhere(pool: PoolInfo): string {
  return pool.endpoint ?? `cognito-idp.${pool.region}`;
}

/**
 * What a failed InitiateAuth means for a person. Cognito answers a wrong
 * password with NotAuthorizedException and, without user-existence
 * protection, an unknown user with UserNotFoundException: both are "wrong
 * user name or password" at login and "revoked" on refresh.
 */
export function classifyPoolError(pool: PoolInfo, err: unknown, flow: 'password' | 'refresh') {
  const name = errorName(err);
  if (name === 'NotAuthorizedException' || name === 'UserNotFoundException')
    return new PoolError(flow === 'password' ? 'credentials' : 'revoked', name);
  if (name === 'PasswordResetRequiredException')
    return new PoolError('other', 'the password must be reset before logging in');
  if (name === 'UserNotConfirmedException')
    return new PoolError('other', 'the user is not confirmed in the user pool');
  if (name === 'ResourceNotFoundException')
    return new PoolError('other', `the user pool has no app client "${pool.clientId}"`);
  const code = networkCode(err);
  if (code === 'ECONNREFUSED')
    return new CliError(`cannot reach the user pool at ${poolWhere(pool)}: connection refused`);
  if (code) return new CliError(`cannot reach the user pool at ${poolWhere(pool)}: ${code}`);
  return new CliError(
    `the user pool at ${poolWhere(pool)} answered with an error${name ? ` (${name})` : ''}`,
  );
}

/**
 * A NotAuthorizedException's message that says the token itself is not
 * valid (revoked, expired, malformed), not that the client may not ask.
 */
const TOKEN_NOT_VALID =
  /\b(refresh )?token\b[^.]*\b(revoked|invalid|expired|not valid)\b|\binvalid (refresh )?token\b/i;

/**
 * Why the pool did not revoke a refresh token, as one clause for the logout
 * line; undefined: the pool says the token is no longer valid anyway
 * (already revoked, the user signed out everywhere or removed), which is
 * what logout wanted. A NotAuthorizedException for any other reason (an app
 * client that needs a secret, say) did not revoke it, and says so.
 */
export function revokeFailure(pool: PoolInfo, err: unknown): string | undefined {
  const name = errorName(err);
  if (name === 'NotAuthorizedException') {
    const message = err instanceof Error ? err.message : '';
    if (TOKEN_NOT_VALID.test(message)) return undefined;
    // the pool's words, clipped, with anything token-like blanked
    const said = message
      .replace(/[A-Za-z0-9_\-.=+/]{40,}/g, '***')
      .slice(0, 200)
      .trim();
    return `the user pool at ${poolWhere(pool)} refused (${name}${said ? `: ${said}` : ''})`;
  }
  if (name === 'UnsupportedOperationException')
    return `the app client "${pool.clientId}" does not allow token revocation`;
  if (name === 'TimeoutError' || name === 'AbortError')
    return `the user pool at ${poolWhere(pool)} did not answer in ${REVOKE_TIMEOUT_MS / 1000} s`;
  const code = networkCode(err);
  if (code) return `cannot reach the user pool at ${poolWhere(pool)}: ${code}`;
  const status = (err as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata
    ?.httpStatusCode;
  // an answer that is not Cognito's JSON (moto without RevokeToken answers an HTML 500)
  const what = /^[A-Z]\w*Exception$/.test(name)
    ? name
    : typeof status === 'number'
      ? `HTTP ${status}`
      : name;
  return `the user pool at ${poolWhere(pool)} answered with an error${what ? ` (${what})` : ''}`;
}

/** Cognito's InitiateAuth and RevokeToken through the AWS SDK; need no AWS credentials (the calls are unsigned). */
export function cognitoProvider(): IdentityProvider {
  async function client(pool: PoolInfo) {
    // the SDK warns on stderr about Node 20 on first use; a CLI's stderr is the person's
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const sdk = await import('@aws-sdk/client-cognito-identity-provider');
    return {
      sdk,
      client: new sdk.CognitoIdentityProviderClient({
        region: pool.region,
        ...(pool.endpoint ? { endpoint: pool.endpoint } : {}),
        maxAttempts: 2,
      }),
    };
  }
  async function initiate(
    pool: PoolInfo,
    flow: 'USER_PASSWORD_AUTH' | 'REFRESH_TOKEN_AUTH',
    params: Record<string, string>,
  ): Promise<PoolTokens> {
    const { sdk, client: cognito } = await client(pool);
    try {
      const answer = await cognito.send(
        new sdk.InitiateAuthCommand({
          ClientId: pool.clientId,
          AuthFlow: flow,
          AuthParameters: params,
        }),
      );
      if (answer.ChallengeName)
        throw new PoolError(
          'other',
          `the user pool asks for ${answer.ChallengeName}, which this CLI does not answer`,
        );
      const result = answer.AuthenticationResult;
      if (!result?.AccessToken)
        throw new PoolError('other', 'the user pool answered without an access token');
      return {
        accessToken: result.AccessToken,
        expiresIn: result.ExpiresIn ?? 3600,
        ...(result.RefreshToken ? { refreshToken: result.RefreshToken } : {}),
      };
    } catch (err) {
      if (err instanceof PoolError) throw err;
      throw classifyPoolError(pool, err, flow === 'USER_PASSWORD_AUTH' ? 'password' : 'refresh');
    } finally {
      cognito.destroy();
    }
  }
  return {
    passwordAuth: (pool, user, password) =>
      initiate(pool, 'USER_PASSWORD_AUTH', { USERNAME: user, PASSWORD: password }),
    refresh: (pool, refreshToken) =>
      initiate(pool, 'REFRESH_TOKEN_AUTH', { REFRESH_TOKEN: refreshToken }),
    async revoke(pool, refreshToken) {
      const { sdk, client: cognito } = await client(pool);
      try {
        await cognito.send(
          new sdk.RevokeTokenCommand({ Token: refreshToken, ClientId: pool.clientId }),
          {
            abortSignal: AbortSignal.timeout(REVOKE_TIMEOUT_MS),
          },
        );
      } catch (err) {
        const why = revokeFailure(pool, err);
        if (why !== undefined) throw new CliError(why);
      } finally {
        cognito.destroy();
      }
    },
  };
}
