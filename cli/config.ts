import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { CliError } from './errors';

/** Where the CLI talks to, and how it found out. */
export interface Endpoint {
  apiUrl: string;
  token: string;
  source: 'stack' | 'env' | 'login' | 'user';
  /** The file it came from, for stack.json and login. */
  file?: string;
  /** For `login --user`: who is logged in, and how to renew their access token. */
  user?: UserLogin;
  /** Gives the token to send, renewing it when it has expired (user logins only). */
  auth?: TokenSource;
}

/** Where a deployment's user pool is (`GET /v1/auth`). */
export interface PoolInfo {
  region: string;
  userPoolId: string;
  clientId: string;
  /** Only where the pool is not AWS's regional endpoint, e.g. the local stack's moto. */
  endpoint?: string;
}

/** What `login --user` stores (0600): the refresh token, and the access token while it lasts. */
export interface UserLogin {
  apiUrl: string;
  user: string;
  pool: PoolInfo;
  refreshToken: string;
  accessToken: string;
  /** When the access token expires (RFC 3339). */
  expiresAt: string;
}

/** The bearer token to send; `renew` gets a new one after the API refused the current one. */
export interface TokenSource {
  token(): Promise<string>;
  renew(): Promise<string>;
}

export type Env = Record<string, string | undefined>;

/** The user's config directory for the CLI: `$PROVISIONER_CONFIG_DIR`, else XDG's, else the platform's. */
export function configDir(env: Env = process.env): string {
  if (env.PROVISIONER_CONFIG_DIR) return env.PROVISIONER_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'provisioner');
  if (process.platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'provisioner');
  return join(homedir(), '.config', 'provisioner');
}

/** `.provisioner/stack.json` in `cwd` or the nearest directory above it that has one. */
export function findStackFile(cwd: string): string | undefined {
  let dir = cwd;
  const root = parse(dir).root;
  for (;;) {
    const candidate = join(dir, '.provisioner', 'stack.json');
    if (existsSync(candidate)) return candidate;
    if (dir === root) return undefined;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

function endpointFrom(value: unknown, file: string, source: Endpoint['source']): Endpoint {
  const v = value as { apiUrl?: unknown; token?: unknown } | null;
  if (!v || typeof v.apiUrl !== 'string' || typeof v.token !== 'string' || !v.token)
    throw new CliError(`${file} has no apiUrl and token`);
  return { apiUrl: v.apiUrl.replace(/\/+$/, ''), token: v.token, source, file };
}

export function credentialsFile(env: Env = process.env): string {
  return join(configDir(env), 'credentials.json');
}

function isUserLogin(value: unknown): value is UserLogin {
  const v = value as Partial<UserLogin> | null;
  return (
    !!v &&
    typeof v.apiUrl === 'string' &&
    typeof v.user === 'string' &&
    typeof v.refreshToken === 'string' &&
    typeof v.accessToken === 'string' &&
    typeof v.expiresAt === 'string' &&
    !!v.pool &&
    typeof v.pool.clientId === 'string' &&
    typeof v.pool.region === 'string'
  );
}

/** The stored `login --user`, if the credentials file holds one (rather than a token login). */
export function storedUserLogin(env: Env = process.env): UserLogin | undefined {
  const file = credentialsFile(env);
  if (!existsSync(file)) return undefined;
  const value = readJson(file);
  if ((value as { user?: unknown } | null)?.user === undefined) return undefined;
  if (!isUserLogin(value))
    throw new CliError(`${file} is not a login this version understands: run "provisioner logout"`);
  return value;
}

/**
 * Where to talk to, in order: a user's own login (`provisioner login --user`,
 * until `provisioner logout`), then the local stack's `.provisioner/stack.json`
 * (walking up from `cwd`), then `PROVISIONER_API_URL` with
 * `PROVISIONER_API_TOKEN`, then a token stored by `provisioner login <url>`.
 */
export function resolveEndpoint(cwd: string, env: Env = process.env): Endpoint {
  const user = storedUserLogin(env);
  if (user)
    return {
      apiUrl: user.apiUrl,
      token: user.accessToken,
      source: 'user',
      file: credentialsFile(env),
      user,
    };
  const stackFile = findStackFile(cwd);
  if (stackFile) return endpointFrom(readJson(stackFile), stackFile, 'stack');
  if (env.PROVISIONER_API_URL) {
    if (!env.PROVISIONER_API_TOKEN)
      throw new CliError('PROVISIONER_API_URL is set but PROVISIONER_API_TOKEN is not');
    return {
      apiUrl: env.PROVISIONER_API_URL.replace(/\/+$/, ''),
      token: env.PROVISIONER_API_TOKEN,
      source: 'env',
    };
  }
  const creds = credentialsFile(env);
  if (existsSync(creds)) return endpointFrom(readJson(creds), creds, 'login');
  throw new CliError(
    'no provisioner API to talk to: run "npm start" in the checkout, set PROVISIONER_API_URL and PROVISIONER_API_TOKEN, or run "provisioner login <url>"',
  );
}

/** Writes a file only its owner can read, replacing it atomically. */
export function writePrivate(file: string, content: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export function saveLogin(apiUrl: string, token: string, env: Env = process.env): string {
  const file = credentialsFile(env);
  writePrivate(file, `${JSON.stringify({ apiUrl: apiUrl.replace(/\/+$/, ''), token }, null, 2)}\n`);
  return file;
}

export function saveUserLogin(login: UserLogin, env: Env = process.env): string {
  const file = credentialsFile(env);
  writePrivate(
    file,
    `${JSON.stringify({ ...login, apiUrl: login.apiUrl.replace(/\/+$/, '') }, null, 2)}\n`,
  );
  return file;
}

function modelsFile(env: Env): string {
  return join(configDir(env), 'models.json');
}

interface ModelsConfig {
  current: Record<string, string>;
}

function readModels(env: Env): ModelsConfig {
  const file = modelsFile(env);
  if (!existsSync(file)) return { current: {} };
  const value = readJson(file) as Partial<ModelsConfig> | null;
  return { current: { ...(value?.current ?? {}) } };
}

/** The current model for an API (as `juju switch` keeps one per controller). */
export function currentModel(apiUrl: string, env: Env = process.env): string | undefined {
  return readModels(env).current[apiUrl];
}

export function setCurrentModel(
  apiUrl: string,
  model: string | undefined,
  env: Env = process.env,
): void {
  const config = readModels(env);
  if (model === undefined) delete config.current[apiUrl];
  else config.current[apiUrl] = model;
  writePrivate(modelsFile(env), `${JSON.stringify(config, null, 2)}\n`);
}

/** The model a command acts on: `-m`, then `PROVISIONER_MODEL`, then the current one. */
export function selectModel(
  flag: string | undefined,
  apiUrl: string,
  env: Env = process.env,
): string {
  const model = flag ?? env.PROVISIONER_MODEL ?? currentModel(apiUrl, env);
  if (!model)
    throw new CliError(
      'no model selected: use "provisioner switch <model>" or -m <model> (see "provisioner models")',
    );
  return model;
}
