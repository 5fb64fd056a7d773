import type { Command } from 'commander';
import { segment } from '../client';
import type { Session } from '../context';
import { CliError, UsageError } from '../errors';
import { columns } from '../table';
import type { Model } from '../types';
import { printStructured, withFormat, withModel, type Format, type ModelOpts } from './common';

/** A model config key: the API field it is, its default, and how a typed value reads. */
interface ConfigKey {
  field: 'harvestMode' | 'availabilitySets' | 'reprovisionLost';
  fallback: string | boolean;
  parse(value: string): string | boolean;
}

function bool(key: string) {
  return (value: string): boolean => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    throw new UsageError(`invalid value "${value}" for config ${key}: expected true or false`);
  };
}

/** The keys `model-config` knows, Juju's names; their defaults are the API's. */
export const CONFIG_KEYS: Record<string, ConfigKey> = {
  'availability-sets-enabled': {
    field: 'availabilitySets',
    fallback: false,
    parse: bool('availability-sets-enabled'),
  },
  'provisioner-harvest-mode': {
    field: 'harvestMode',
    fallback: 'destroyed',
    parse: (v) => v,
  },
  'reprovision-lost': {
    field: 'reprovisionLost',
    fallback: false,
    parse: bool('reprovision-lost'),
  },
};

export interface ConfigValue {
  value: string | boolean;
  /** `default` when it is the default, else `model` (Juju's sources). */
  source: 'default' | 'model';
}

/** Every key's value on the model and where it comes from. */
export function modelConfigValues(model: Model): Record<string, ConfigValue> {
  return Object.fromEntries(
    Object.entries(CONFIG_KEYS).map(([key, k]) => {
      const value = model[k.field] ?? k.fallback;
      return [key, { value, source: value === k.fallback ? 'default' : 'model' }];
    }),
  );
}

function knownKey(key: string): ConfigKey {
  const k = CONFIG_KEYS[key];
  if (!k)
    throw new UsageError(
      `unknown model config key "${key}" (known: ${Object.keys(CONFIG_KEYS).join(', ')})`,
    );
  return k;
}

/** `key=value` words as the PATCH body; every key known, none given twice. */
export function configChanges(words: string[], reset: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const seen = new Set<string>();
  const put = (key: string, value: string | boolean) => {
    if (seen.has(key)) throw new UsageError(`key "${key}" specified more than once`);
    seen.add(key);
    body[knownKey(key).field] = value;
  };
  for (const word of words) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new UsageError(`expected "key=value", got "${word}"`);
    const key = word.slice(0, eq);
    put(key, knownKey(key).parse(word.slice(eq + 1)));
  }
  for (const key of reset) put(key, knownKey(key).fallback);
  return body;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, ...value.split(',').filter(Boolean)];
}

export function registerModelConfigCommand(program: Command, session: Session): void {
  withFormat(
    withModel(
      program
        .command('model-config')
        .description('Displays or sets configuration values on a model.')
        .argument('[key[=value]...]', 'a key to show, or key=value pairs to set')
        .option(
          '--reset <key>',
          'reset a key to its default (repeatable, or comma-separated)',
          collect,
          [],
        ),
    ),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (words: string[], opts: ModelOpts & { format: Format; reset: string[] }) => {
    const model = session.model(opts.model);
    const path = `/v1/models/${segment(model)}`;
    const setting = words.some((w) => w.includes('='));
    if (setting || opts.reset.length > 0) {
      if (words.some((w) => !w.includes('=')))
        throw new UsageError('cannot get and set keys in one command: give key=value pairs only');
      const body = configChanges(words, opts.reset);
      await session.client().request<Model>('PATCH', path, body);
      return;
    }
    if (words.length > 1) throw new UsageError('can only show one key at a time');
    const values = modelConfigValues(await session.client().get<Model>(path));
    if (words.length === 1) {
      const key = words[0]!;
      knownKey(key);
      const v = values[key];
      if (!v) throw new CliError(`key "${key}" not found in "${model}" model`);
      if (opts.format === 'tabular') session.out(`${String(v.value)}\n`);
      else printStructured(session, opts.format, v.value);
      return;
    }
    if (opts.format !== 'tabular') {
      printStructured(session, opts.format, values);
      return;
    }
    session.out(
      `${columns(
        ['Attribute', 'From', 'Value'],
        Object.entries(values).map(([k, v]) => [k, v.source, String(v.value)]),
      )}\n`,
    );
  });
}
