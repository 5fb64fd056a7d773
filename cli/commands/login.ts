import type { Command } from 'commander';
import { credentialsFile, saveLogin } from '../config';
import type { Session } from '../context';
import { ApiError, CliError, UsageError } from '../errors';
import { askSecret, readStdin } from '../prompt';
import { existsSync, rmSync } from 'node:fs';

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
      'Logs in to a provisioner API, storing its token in the user\u2019s config directory.',
    )
    .argument('<url>', 'the API URL, e.g. https://abc123.execute-api.us-east-1.amazonaws.com')
    .option('--token-stdin', 'read the token from stdin (the default when stdin is not a terminal)')
    .option(
      '--token <token>',
      'the token (visible in the process list: prefer stdin or PROVISIONER_API_TOKEN)',
    )
    .action(async (rawUrl: string, opts: { tokenStdin?: boolean; token?: string }) => {
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
    });

  program
    .command('logout')
    .description('Forgets the stored API token.')
    .action(() => {
      const file = credentialsFile(session.ctx.env);
      if (existsSync(file)) rmSync(file);
      session.info('Logged out.\n');
    });
}
