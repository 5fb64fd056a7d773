import type { Command } from 'commander';
import { segment } from '../client';
import { currentModel, setCurrentModel } from '../config';
import type { Session } from '../context';
import { parseDuration } from '../duration';
import { ApiError, CliError, UsageError } from '../errors';
import { ask } from '../prompt';
import { modelsTable, modelSummaries } from '../model-summary';
import { naturalCompare } from '../status';
import type { ConstraintsAnswer, Model, Status } from '../types';
import {
  constraintArgs,
  plural,
  printStructured,
  withFormat,
  withModel,
  type Format,
  type ModelOpts,
} from './common';

/** `--config key=value` keys add-model understands, mapped to the API's fields. */
const MODEL_CONFIG: Record<string, (value: string) => [string, unknown]> = {
  'provisioner-harvest-mode': (v) => ['harvestMode', v],
  'availability-sets-enabled': (v) => [
    'availabilitySets',
    boolConfig('availability-sets-enabled', v),
  ],
  'reprovision-lost': (v) => ['reprovisionLost', boolConfig('reprovision-lost', v)],
};

function boolConfig(key: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new UsageError(`invalid value "${value}" for config ${key}: expected true or false`);
}

export function modelConfig(pairs: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`expected "key=value" for --config, got "${pair}"`);
    const key = pair.slice(0, eq);
    const map = MODEL_CONFIG[key];
    if (!map)
      throw new UsageError(
        `unknown model config key "${key}" (known: ${Object.keys(MODEL_CONFIG).join(', ')})`,
      );
    const [field, value] = map(pair.slice(eq + 1));
    body[field] = value;
  }
  return body;
}

/** `[cloud/]region`: Juju names the cloud too; the only cloud here is aws. */
export function regionArg(value: string): string {
  const parts = value.split('/');
  if (parts.length === 2 && parts[0] === 'aws' && parts[1]) return parts[1];
  if (parts.length === 1 && parts[0]) return parts[0];
  throw new UsageError(`cloud/region "${value}" not valid: the cloud is "aws", e.g. aws/us-east-1`);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function constraintsOutput(
  session: Session,
  format: Format | 'constraints',
  answer: ConstraintsAnswer,
) {
  if (format === 'constraints') {
    session.out(answer.constraints ? `${answer.constraints}\n` : '');
    if (answer.unsupported?.length)
      session.info(`WARNING unsupported constraints: ${answer.unsupported.join(',')}\n`);
  } else printStructured(session, format, answer);
}

async function waitForModelGone(session: Session, model: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    let status: Status;
    try {
      status = await session.client().get<Status>(`/v1/models/${segment(model)}/status`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return;
      throw err;
    }
    const machines = Object.keys(status.machines).length;
    const apps = Object.keys(status.applications).length;
    const parts = [];
    if (machines) parts.push(`${machines} machine(s)`);
    if (apps) parts.push(`${apps} application(s)`);
    const line = `Waiting for model to be removed${parts.length ? `, ${parts.join(', ')}` : ''}...`;
    if (line !== last) session.info(`${line}\n`);
    last = line;
    if (Date.now() > deadline)
      throw new CliError(`timed out waiting for model "${model}" to be removed`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export function registerModelCommands(program: Command, session: Session): void {
  program
    .command('add-model')
    .description('Adds a workload model.')
    .argument('<model-name>', 'name of the new model')
    .argument('[cloud/region]', 'region to create it in, e.g. aws/us-east-1')
    .option('--constraints <constraints>', 'model constraints, e.g. "mem=4G cores=2"')
    .option(
      '--config <key=value>',
      'model config: provisioner-harvest-mode, availability-sets-enabled, reprovision-lost (repeatable)',
      collect,
      [],
    )
    .option('--no-switch', 'do not switch to the new model')
    .action(
      async (
        name: string,
        region: string | undefined,
        opts: { constraints?: string; config: string[]; switch: boolean },
      ) => {
        const body: Record<string, unknown> = { name, ...modelConfig(opts.config) };
        if (region !== undefined) body.region = regionArg(region);
        if (opts.constraints !== undefined) body.constraints = opts.constraints;
        const model = await session.client().request<Model>('POST', '/v1/models', body);
        session.info(`Added '${model.name}' model on aws/${model.region}\n`);
        if (opts.switch) setCurrentModel(session.endpoint().apiUrl, model.name, session.ctx.env);
      },
    );

  withFormat(
    program.command('models').alias('list-models').description('Lists models.'),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (opts: { format: Format }) => {
    // the table's counts come with the list, a page at a time (the server pages a summary:
    // one request per 100 models, following its cursor); json and yaml print the plain list
    const models: Model[] = [];
    let cursor: string | undefined;
    // a cursor answered twice would page forever: a server fault, stopped with an error
    const seen = new Set<string>();
    do {
      const path =
        opts.format !== 'tabular'
          ? '/v1/models'
          : `/v1/models?summary=true${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await session.client().get<{ models: Model[]; cursor?: string }>(path);
      models.push(...page.models);
      cursor = opts.format === 'tabular' ? page.cursor : undefined;
      if (cursor !== undefined) {
        if (seen.has(cursor))
          throw new CliError(
            `the server answered the same models cursor twice ("${cursor.slice(0, 100)}"); ` +
              'stopped paging after ' +
              `${models.length} models (a server fault: try again, or use --format json)`,
          );
        seen.add(cursor);
      }
    } while (cursor);
    const current = currentModel(session.endpoint().apiUrl, session.ctx.env);
    if (opts.format !== 'tabular') {
      printStructured(session, opts.format, {
        models,
        ...(current ? { 'current-model': current } : {}),
      });
      return;
    }
    if (models.length === 0) {
      session.out('No models to display.\n');
      return;
    }
    const sorted = [...models].sort((a, b) => naturalCompare(a.name, b.name));
    const summaries = await modelSummaries(session, sorted);
    session.out(`${modelsTable(sorted, summaries, current, session.ctx.now())}\n`);
  });

  program
    .command('destroy-model')
    .description('Terminates all machines and resources for a model.')
    .argument('<model>', 'the model to destroy')
    .option('--no-prompt', 'do not ask for confirmation')
    .option('-y', 'same as --no-prompt')
    .option('--no-wait', 'return at once, without waiting for the model to be removed')
    .option('--timeout <duration>', 'how long to wait for the model to be removed', '30m')
    .action(
      async (
        model: string,
        opts: { prompt: boolean; y?: boolean; wait: boolean; timeout: string },
      ) => {
        const timeoutMs = parseDuration(opts.timeout, '--timeout');
        const client = session.client();
        if (opts.prompt && !opts.y) {
          if (!session.ctx.stdinIsTTY)
            throw new UsageError(
              'cannot ask for confirmation without a terminal: use --no-prompt (or -y) to destroy the model',
            );
          const status = await client.get<Status>(`/v1/models/${segment(model)}/status`);
          const machines = Object.values(status.machines);
          const apps = Object.keys(status.applications);
          const lines = [
            `WARNING This command will destroy the "${model}" model and affect the following resources. It cannot be stopped.`,
            '',
          ];
          if (machines.length)
            lines.push(
              ` - ${plural(machines.length, 'machine')} will be destroyed`,
              `  - machine list: ${machines
                .map((m) => `"${m.id}${m.instanceId ? ` (${m.instanceId})` : ''}"`)
                .join(' ')}`,
            );
          if (apps.length)
            lines.push(
              ` - ${plural(apps.length, 'application')} will be removed`,
              `  - application list: ${apps.map((a) => `"${a}"`).join(' ')}`,
            );
          if (!machines.length && !apps.length) lines.push(' - the model is empty');
          session.info(`${lines.join('\n')}\n\n`);
          const answer = await ask('To continue, enter the name of the model to be destroyed: ');
          if (answer.trim() !== model) throw new CliError('model destruction aborted');
        }
        await client.request('DELETE', `/v1/models/${segment(model)}`);
        const apiUrl = session.endpoint().apiUrl;
        if (currentModel(apiUrl, session.ctx.env) === model)
          setCurrentModel(apiUrl, undefined, session.ctx.env);
        session.info('Destroying model\n');
        if (!opts.wait) return;
        await waitForModelGone(session, model, timeoutMs);
        session.info('Model destroyed.\n');
      },
    );

  program
    .command('switch')
    .description('Selects or identifies the current model.')
    .argument('[model]', 'the model to make current')
    .action(async (model: string | undefined) => {
      const apiUrl = session.endpoint().apiUrl;
      const previous = currentModel(apiUrl, session.ctx.env);
      if (model === undefined) {
        if (!previous)
          throw new CliError('no current model: use "provisioner switch <model>" to select one');
        session.out(`${previous}\n`);
        return;
      }
      await session.client().get<Model>(`/v1/models/${segment(model)}`);
      setCurrentModel(apiUrl, model, session.ctx.env);
      session.info(`${previous ?? '(none)'} -> ${model}\n`);
    });

  withFormat(
    withModel(
      program.command('model-constraints').description('Displays machine constraints for a model.'),
    ),
    ['constraints', 'json', 'yaml'],
    'constraints',
  ).action(async (opts: ModelOpts & { format: Format | 'constraints' }) => {
    const model = session.model(opts.model);
    const answer = await session
      .client()
      .get<ConstraintsAnswer>(`/v1/models/${segment(model)}/constraints`);
    constraintsOutput(session, opts.format, answer);
  });

  withModel(
    program
      .command('set-model-constraints')
      .description('Sets machine constraints on a model.')
      .argument('<constraint...>', 'constraints as key=value, e.g. mem=4G cores=2'),
  ).action(async (words: string[], opts: ModelOpts) => {
    const model = session.model(opts.model);
    const answer = await session
      .client()
      .request<ConstraintsAnswer>('PUT', `/v1/models/${segment(model)}/constraints`, {
        constraints: constraintArgs(words),
      });
    if (answer.unsupported?.length)
      session.info(`WARNING unsupported constraints: ${answer.unsupported.join(',')}\n`);
  });
}
