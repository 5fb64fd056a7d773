import { cognitoProvider, UserTokens, type IdentityProvider } from './auth';
import { createClient, type Client } from './client';
import { colourEnabled, colours, type Colours } from './colour';
import { resolveEndpoint, selectModel, type Endpoint, type Env } from './config';

export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Everything a command touches outside itself, so tests can hand in their own. */
export interface Context {
  env: Env;
  cwd: string;
  stdout: Output;
  stderr: Output;
  stdinIsTTY: boolean;
  now: () => Date;
  connect: (endpoint: Endpoint) => Client;
  /** The user pool's InitiateAuth (login and token refresh); Cognito's through the SDK unless a test gives its own. */
  identity?: IdentityProvider;
}

export function processContext(): Context {
  return {
    env: process.env,
    cwd: process.cwd(),
    stdout: process.stdout,
    stderr: process.stderr,
    stdinIsTTY: process.stdin.isTTY === true,
    now: () => new Date(),
    connect: createClient,
  };
}

/** What a command needs once it runs: the endpoint, a client, the model, the colours. */
export class Session {
  private endpointCache?: Endpoint;
  private clientCache?: Client;

  constructor(readonly ctx: Context) {}

  endpoint(): Endpoint {
    if (!this.endpointCache) {
      const endpoint = resolveEndpoint(this.ctx.cwd, this.ctx.env);
      if (endpoint.user)
        endpoint.auth = new UserTokens(endpoint.user, this.identity(), this.ctx.env, this.ctx.now);
      this.endpointCache = endpoint;
    }
    return this.endpointCache;
  }

  identity(): IdentityProvider {
    return this.ctx.identity ?? cognitoProvider();
  }

  client(): Client {
    this.clientCache ??= this.ctx.connect(this.endpoint());
    return this.clientCache;
  }

  model(flag: string | undefined): string {
    return selectModel(flag, this.endpoint().apiUrl, this.ctx.env);
  }

  /** `force` is Juju's `--color` (true) or `--no-color` (false); otherwise the terminal and env decide. */
  colours(force?: boolean): Colours {
    return colours(force ?? colourEnabled(this.ctx.stdout, this.ctx.env));
  }

  out(text: string): void {
    this.ctx.stdout.write(text);
  }

  /** Juju writes what it did (as opposed to what was asked for) on stderr. */
  info(text: string): void {
    this.ctx.stderr.write(text);
  }
}
