import type { Command } from 'commander';
import { segment } from '../client';
import { currentModel } from '../config';
import type { Session } from '../context';
import { parseDuration } from '../duration';
import { CliError, UsageError } from '../errors';
import { grantChange, parseLevel, revokeChange, type Change, type Level } from '../levels';
import { ask } from '../prompt';
import { columns } from '../table';
import type { AuditEntry, AuditPage, Model, ModelUser, PoolUser, WhoAmI } from '../types';
import { printStructured, withFormat, withModel, type Format } from './common';
import { readPassword, userArg } from './login';

/** The API's largest audit page (API.md: `limit` 1..500). */
const AUDIT_PAGE_MAX = 500;

function byName<T>(key: (t: T) => string) {
  return (a: T, b: T) => key(a).localeCompare(key(b));
}

async function modelUsers(session: Session, model: string): Promise<ModelUser[]> {
  const { users } = await session
    .client()
    .get<{ users: ModelUser[] }>(`/v1/models/${segment(model)}/access`);
  return users;
}

async function poolUsers(session: Session): Promise<PoolUser[]> {
  const { users } = await session.client().get<{ users: PoolUser[] }>('/v1/users');
  return users;
}

/** The user logged in, when the CLI knows without asking (a `login --user`). */
function me(session: Session): string | undefined {
  return session.endpoint().user?.user;
}

function usersTable(session: Session, rows: { name: string; access: string }[]): void {
  if (rows.length === 0) {
    session.out('No users to display.\n');
    return;
  }
  const self = me(session);
  session.out(
    `${columns(
      ['Name', 'Access'],
      [...rows]
        .sort(byName((r) => r.name))
        .map((r) => [r.name === self ? `${r.name}*` : r.name, r.access]),
    )}\n`,
  );
}

async function modelAccessOutput(session: Session, model: string, format: Format): Promise<void> {
  const users = await modelUsers(session, model);
  if (format !== 'tabular') {
    printStructured(session, format, { model, users });
    return;
  }
  usersTable(
    session,
    users.map((u) => ({ name: u.user, access: u.access })),
  );
}

/** Carries out a grant or revoke the level arithmetic decided on. */
async function apply(
  session: Session,
  change: Change,
  user: string,
  model: string | undefined,
): Promise<void> {
  if (change.kind === 'refuse') throw new CliError(change.message);
  const client = session.client();
  if (model === undefined) {
    if (change.kind === 'remove') throw new CliError('controller access cannot be removed');
    await client.request('PUT', `/v1/access/${segment(user)}`, { access: change.access });
    return;
  }
  const path = `/v1/models/${segment(model)}/access/${segment(user)}`;
  if (change.kind === 'remove') await client.request('DELETE', path);
  else await client.request('PUT', path, { access: change.access });
}

/** The user's current level on the model (undefined: none), or on the controller. */
async function currentLevel(
  session: Session,
  user: string,
  model: string | undefined,
): Promise<Level | undefined> {
  if (model !== undefined)
    return (await modelUsers(session, model)).find((u) => u.user === user)?.access;
  const found = (await poolUsers(session)).find((u) => u.name === user);
  if (!found) throw new CliError(`user "${user}" not found`);
  return found.access;
}

/** `--since`: a duration back from now (`1h`, `90m`) or an RFC 3339 time. */
export function sinceArg(value: string, now: Date): string {
  if (/^\d{4}-\d\d-\d\d/.test(value)) {
    const t = Date.parse(value);
    if (!Number.isFinite(t))
      throw new UsageError(`invalid value "${value}" for option --since: not a valid time`);
    return new Date(t).toISOString();
  }
  let ms: number;
  try {
    ms = parseDuration(value, '--since');
  } catch {
    throw new UsageError(
      `invalid value "${value}" for option --since: expected a duration like 1h or 30m, or a time like 2026-11-25T10:00:00Z`,
    );
  }
  return new Date(now.getTime() - ms).toISOString();
}

function limitArg(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(`invalid value "${value}" for option --limit: must be a number 1 or more`);
  return Number(value);
}

/** Pages through the audit, newest first, until `limit` entries or the end. */
export async function fetchAudit(
  session: Session,
  base: string,
  params: Record<string, string>,
  limit: number,
): Promise<{ entries: AuditEntry[]; more: boolean }> {
  const entries: AuditEntry[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = new URLSearchParams({
      ...params,
      limit: String(Math.min(AUDIT_PAGE_MAX, limit - entries.length)),
      ...(cursor ? { cursor } : {}),
    });
    const page = await session.client().get<AuditPage>(`${base}?${query.toString()}`);
    entries.push(...page.entries);
    cursor = page.cursor;
    if (!cursor) return { entries, more: false };
    if (entries.length >= limit) return { entries, more: true };
  }
}

/** `2026-11-25T17:03:04.123Z` → `2026-11-25 17:03:04Z`: a table is read by a person. */
function shortTime(time: string): string {
  const t = Date.parse(time);
  if (!Number.isFinite(t)) return time;
  return new Date(t)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

export function auditTable(entries: AuditEntry[], withModelColumn: boolean): string {
  const header = ['Time', 'User', ...(withModelColumn ? ['Model'] : []), 'Status', 'Request'];
  const rows = entries.map((e) => [
    shortTime(e.time),
    e.user,
    ...(withModelColumn ? [e.model ?? '-'] : []),
    String(e.status),
    `${e.method} ${e.path}`,
  ]);
  return columns(header, rows);
}

export function registerIdentityCommands(program: Command, session: Session): void {
  withFormat(
    program.command('whoami').description('Prints the API, current model and logged-in user.'),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (opts: { format: Format }) => {
    const who = await session.client().get<WhoAmI>('/v1/whoami');
    const endpoint = session.endpoint();
    const model =
      session.ctx.env.PROVISIONER_MODEL ?? currentModel(endpoint.apiUrl, session.ctx.env);
    const info = {
      api: endpoint.apiUrl,
      ...(model ? { model } : {}),
      user: who.user,
      access: who.access,
    };
    if (opts.format !== 'tabular') {
      printStructured(session, opts.format, info);
      return;
    }
    const rows: [string, string][] = [
      ['API:', info.api],
      ['Model:', info.model ?? '(none)'],
      ['User:', info.user],
      ['Access:', info.access],
    ];
    session.out(`${columns(['', ''], rows).split('\n').slice(1).join('\n')}\n`);
  });

  program
    .command('add-user')
    .description("Adds a user to the deployment's user pool, with the password you give.")
    .argument('<user-name>', 'the new user (lowercase letters, digits and hyphens)', userArg)
    .option('--password-stdin', 'read the password from stdin instead of asking for it')
    .action(async (name: string, opts: { passwordStdin?: boolean }) => {
      const password = await readPassword(session, opts.passwordStdin, [
        `Enter a password for ${name}: `,
        'Type the password again: ',
      ]);
      await session.client().request('POST', '/v1/users', { name, password });
      session.info(
        `User "${name}" added\n${name} can log in with "provisioner login --user ${name}"\n`,
      );
    });

  program
    .command('remove-user')
    .description(
      'Removes a user: they leave the pool, lose every grant, and their tokens stop working.',
    )
    .argument('<user-name>', 'the user to remove', userArg)
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--no-prompt', 'same as --yes')
    .action(async (name: string, opts: { yes?: boolean; prompt: boolean }) => {
      if (!opts.yes && opts.prompt) {
        if (!session.ctx.stdinIsTTY)
          throw new UsageError(
            'cannot ask for confirmation without a terminal: use --yes (or -y) to remove the user',
          );
        session.info(
          `WARNING This command will remove the user "${name}": they leave the user pool, every grant of theirs goes, and their tokens stop working at once.\n\n`,
        );
        const answer = await ask('Continue (y/N)? ');
        if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('user removal aborted');
      }
      await session.client().request('DELETE', `/v1/users/${segment(name)}`);
      session.info(`User "${name}" removed\n`);
    });

  withFormat(
    program
      .command('users')
      .description(
        "Lists the deployment's users and their controller access, or with a model, the model's users.",
      )
      .argument('[model]', 'a model: list its users and their access to it'),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (model: string | undefined, opts: { format: Format }) => {
    if (model !== undefined) {
      await modelAccessOutput(session, model, opts.format);
      return;
    }
    const users = await poolUsers(session);
    if (opts.format !== 'tabular') printStructured(session, opts.format, { users });
    else usersTable(session, users);
  });

  withFormat(
    withModel(
      program.command('access').description("Lists a model's users and their access to it."),
    ),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (opts: { model?: string; format: Format }) => {
    await modelAccessOutput(session, session.model(opts.model), opts.format);
  });

  withFormat(
    program
      .command('show-model')
      .description('Shows a model: its settings, and its users with their access.')
      .argument('[model]', 'the model (default: the current model)'),
    ['yaml', 'json'],
    'yaml',
  ).action(async (name: string | undefined, opts: { format: Format }) => {
    const model = session.model(name);
    const client = session.client();
    const info = await client.get<Model>(`/v1/models/${segment(model)}`);
    const users = await modelUsers(session, model);
    const { name: modelName, ...rest } = info;
    printStructured(session, opts.format, {
      [modelName]: {
        name: modelName,
        cloud: 'aws',
        ...rest,
        users: Object.fromEntries(
          [...users].sort(byName((u) => u.user)).map((u) => [u.user, { access: u.access }]),
        ),
      },
    });
  });

  for (const verb of ['grant', 'revoke'] as const) {
    program
      .command(verb)
      .description(
        verb === 'grant'
          ? 'Raises a user\u2019s access: read, write or admin on a model; login, add-model or superuser on the controller (no model).'
          : 'Lowers a user\u2019s access to the level below the one named: admin leaves write, write leaves read, read leaves none; superuser leaves add-model, add-model leaves login.',
      )
      .argument('<user>', 'the user', userArg)
      .argument(
        '<level>',
        'read, write, admin (with a model); login, add-model, superuser (without)',
      )
      .argument('[model]', 'the model; without it, controller access')
      .action(async (user: string, rawLevel: string, model: string | undefined) => {
        const level = parseLevel(verb, rawLevel, model);
        const current = await currentLevel(session, user, model);
        const change =
          verb === 'grant' ? grantChange(current, level) : revokeChange(user, current, level);
        await apply(session, change, user, model);
      });
  }

  withFormat(
    program
      .command('audit')
      .description(
        "Lists who changed what, newest first: a model's entries with -m (needs admin on it), else every model's (needs superuser).",
      )
      .option('-m, --model <model>', "only this model's entries (default: every model's)")
      .option(
        '--since <when>',
        'only entries since then: a duration back (1h, 30m) or a time (RFC 3339)',
      )
      .option(
        '--user <name>',
        'only this user\u2019s entries (every model\u2019s audit only)',
        userArg,
      )
      .option('--limit <n>', 'at most this many entries', limitArg, 100),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(
    async (opts: {
      model?: string;
      since?: string;
      user?: string;
      limit: number;
      format: Format;
    }) => {
      const params: Record<string, string> = {};
      if (opts.since !== undefined) params.since = sinceArg(opts.since, session.ctx.now());
      if (opts.user !== undefined) {
        if (opts.model !== undefined)
          throw new UsageError('--user filters the audit of every model: leave out -m');
        params.user = opts.user;
      }
      const base =
        opts.model !== undefined ? `/v1/models/${segment(opts.model)}/audit` : '/v1/audit';
      const { entries, more } = await fetchAudit(session, base, params, opts.limit);
      if (opts.format !== 'tabular') {
        printStructured(session, opts.format, { entries });
      } else if (entries.length === 0) {
        session.out('No audit entries to display.\n');
      } else {
        session.out(`${auditTable(entries, opts.model === undefined)}\n`);
      }
      if (more)
        session.info(
          `(showing the newest ${entries.length}: there are more; raise --limit or narrow --since)\n`,
        );
    },
  );
}
