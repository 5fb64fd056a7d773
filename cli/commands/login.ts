import type { Command } from 'commander';
import { expiryTime, PoolError } from '../auth';
import {
  credentialsFile,
  resolveEndpoint,
  saveLogin,
  saveUserLogin,
  storedUserLogin,
  type PoolInfo,
  type UserLogin,
} from '../config';
import type { Session } from '../context';
import { ApiError, CliError, UsageError } from '../errors';
import { askSecret, readStdin } from '../prompt';
import { existsSync, rmSync } from 'node:fs';

/** User names are model names (API.md "Identity, access and audit"). */
export function userArg(value: string): string {
  if (!/^[a-z][a-z0-9-]{0,62}$/.test(value))
    throw new UsageError(
      `invalid user name "${value}": use lowercase letters, digits and hyphens, starting with a letter`,
    );
  return value;
}

/** The first line of what was piped in: a password may hold spaces, never a newline. */
export function firstLine(text: string): string {
  return text.split(/\r?\n/, 1)[0] ?? '';
}

/**
 * A password: the first line of stdin with `--password-stdin`, else asked on
 * the terminal without echo. Off a terminal, without the flag, there is no
 * one to ask.
 */
export async function readPassword(
  session: Session,
  fromStdin: boolean | undefined,
  questions: string[],
): Promise<string> {
  let password: string;
  if (fromStdin) password = firstLine(await readStdin());
  else if (!session.ctx.stdinIsTTY)
    throw new UsageError('cannot ask for a password without a terminal: use --password-stdin');
  else {
    password = await askSecret(questions[0]!);
    for (const again of questions.slice(1))
      if ((await askSecret(again)) !== password) throw new CliError('passwords do not match');
  }
  if (!password) throw new UsageError('no password given');
  return password;
}

function isPoolInfo(value: unknown): value is PoolInfo {
  const v = value as Partial<PoolInfo> | null;
  return (
    !!v &&
    typeof v.region === 'string' &&
    typeof v.userPoolId === 'string' &&
    typeof v.clientId === 'string' &&
    (v.endpoint === undefined || typeof v.endpoint === 'string')
  );
}

/** `GET /v1/auth` (no token): where this deployment's user pool is. */
async function findPool(session: Session, apiUrl: string): Promise<PoolInfo> {
  let answer: unknown;
  try {
    answer = await session.ctx.connect({ apiUrl, token: '', source: 'env' }).get('/v1/auth');
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 501))
      throw new CliError(
        `the API at ${apiUrl} has no user pool to log in to: log in with its token ("provisioner login ${apiUrl}")`,
      );
    throw err;
  }
  if (!isPoolInfo(answer))
    throw new CliError(`the API at ${apiUrl} did not say where its user pool is (GET /v1/auth)`);
  return {
    region: answer.region,
    userPoolId: answer.userPoolId,
    clientId: answer.clientId,
    ...(answer.endpoint ? { endpoint: answer.endpoint } : {}),
  };
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * A password is sent only over https, or plain http to this machine (the local
 * stack): never in the clear to a host GET /v1/auth happened to name.
 */
export function requireSafeTransport(what: string, url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`the ${what} ${url} is not a URL`);
  }
  if (parsed.protocol === 'https:') return;
  if (parsed.protocol === 'http:' && LOOPBACK_HOSTS.has(parsed.hostname)) return;
  throw new CliError(
    `refusing to send a password to the ${what} ${parsed.origin}: it must be https (plain http only to 127.0.0.1 or localhost)`,
  );
}

/** `login --user NAME`: the pool's tokens for NAME, checked with the API, stored 0600. */
async function loginUser(
  session: Session,
  apiUrl: string,
  user: string,
  opts: { passwordStdin?: boolean },
): Promise<void> {
  requireSafeTransport('API', apiUrl);
  const pool = await findPool(session, apiUrl);
  if (pool.endpoint !== undefined) requireSafeTransport('user pool endpoint', pool.endpoint);
  const password = await readPassword(session, opts.passwordStdin, [
    `please enter password for ${user} on ${apiUrl}: `,
  ]);
  let tokens;
  try {
    tokens = await session.identity().passwordAuth(pool, user, password);
  } catch (err) {
    if (err instanceof PoolError)
      throw new CliError(
        err.reason === 'credentials'
          ? `cannot log in as "${user}": wrong user name or password`
          : `cannot log in as "${user}": ${err.message}`,
      );
    throw err;
  }
  if (!tokens.refreshToken)
    throw new CliError(`cannot log in as "${user}": the user pool gave no refresh token`);
  let whoami: { user?: string; access?: string } | undefined;
  try {
    whoami = await session.ctx
      .connect({ apiUrl, token: tokens.accessToken, source: 'user' })
      .get('/v1/whoami');
  } catch (err) {
    if (err instanceof ApiError && err.status === 401)
      throw new CliError(
        `cannot log in as "${user}": the API at ${apiUrl} did not accept the login`,
      );
    throw err;
  }
  saveUserLogin(
    {
      apiUrl,
      user,
      pool,
      refreshToken: tokens.refreshToken,
      accessToken: tokens.accessToken,
      expiresAt: expiryTime(session.ctx.now(), tokens.expiresIn),
    },
    session.ctx.env,
  );
  session.info(
    `Welcome, ${whoami?.user ?? user}. You are now logged in to ${apiUrl}${whoami?.access ? ` with "${whoami.access}" access` : ''}.\n`,
  );
}

/** A URL the API can be reached at: http(s) only, no credentials or query in it. */
export function apiUrlArg(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`invalid API URL "${value}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new UsageError(`invalid API URL "${value}": use https:// (or http:// for a local stack)`);
  if (url.username || url.password || url.search)
    throw new UsageError(
      'the API URL must not carry credentials or a query: give the token on stdin',
    );
  return url.toString().replace(/\/+$/, '');
}

export function registerLoginCommands(program: Command, session: Session): void {
  program
    .command('login')
    .description(
      'Logs in to a provisioner API: as a user of its user pool (--user), or with its token. The login is stored in the user\u2019s config directory.',
    )
    .argument(
      '[url]',
      'the API URL, e.g. https://abc123.execute-api.us-east-1.amazonaws.com (with --user: default the one in use)',
    )
    .option('-u, --user <name>', 'log in as this user of the pool (asks for the password)', userArg)
    .option('--password-stdin', 'with --user: read the password from stdin')
    .option('--token-stdin', 'read the token from stdin (the default when stdin is not a terminal)')
    .option(
      '--token <token>',
      'the token (visible in the process list: prefer stdin or PROVISIONER_API_TOKEN)',
    )
    .action(
      async (
        rawUrl: string | undefined,
        opts: { user?: string; passwordStdin?: boolean; tokenStdin?: boolean; token?: string },
      ) => {
        if (opts.user !== undefined) {
          if (opts.token !== undefined || opts.tokenStdin)
            throw new UsageError(
              '--user logs in with a password: --token and --token-stdin do not apply',
            );
          const apiUrl =
            rawUrl !== undefined
              ? apiUrlArg(rawUrl)
              : resolveEndpoint(session.ctx.cwd, session.ctx.env).apiUrl;
          await loginUser(session, apiUrl, opts.user, opts);
          return;
        }
        if (opts.passwordStdin) throw new UsageError('--password-stdin goes with --user');
        if (rawUrl === undefined)
          throw new UsageError("missing required argument 'url' (or log in as a user with --user)");
        const apiUrl = apiUrlArg(rawUrl);
        let token = opts.token ?? '';
        if (!token && !opts.tokenStdin && session.ctx.env.PROVISIONER_API_TOKEN)
          token = session.ctx.env.PROVISIONER_API_TOKEN;
        if (!token) {
          if (opts.tokenStdin || !session.ctx.stdinIsTTY) token = await readStdin();
          else token = await askSecret('Enter the API token: ');
        }
        token = token.trim();
        if (!token) throw new UsageError('no token given');
        try {
          await session.ctx.connect({ apiUrl, token, source: 'login' }).get('/v1/models');
        } catch (err) {
          if (err instanceof ApiError && err.status === 401)
            throw new CliError(`cannot log in to ${apiUrl}: the token was not accepted`);
          throw err;
        }
        const file = saveLogin(apiUrl, token, session.ctx.env);
        session.info(`Logged in to ${apiUrl} (token stored in ${file}).\n`);
      },
    );

  program
    .command('logout')
    .description(
      'Forgets the stored login (user or token), revoking a user login\u2019s refresh token at the user pool; commands then use the local stack\u2019s admin token, or the environment.',
    )
    .action(async () => {
      const file = credentialsFile(session.ctx.env);
      let login: UserLogin | undefined;
      try {
        login = storedUserLogin(session.ctx.env);
      } catch {
        // a credentials file this version cannot read goes all the same
      }
      // best effort: a pool that cannot revoke (unreachable, or without
      // RevokeToken, as moto) does not keep the person logged in here
      let notRevoked: string | undefined;
      if (login) {
        try {
          await session.identity().revoke(login.pool, login.refreshToken);
        } catch (err) {
          notRevoked = err instanceof Error ? err.message : String(err);
        }
      }
      if (existsSync(file)) rmSync(file);
      if (!login) session.info('Logged out.\n');
      else if (notRevoked === undefined) session.info(`Logged out "${login.user}".\n`);
      else
        session.info(
          `Logged out "${login.user}". The refresh token was not revoked (${notRevoked}): it stays valid at the user pool until it expires.\n`,
        );
    });
}
