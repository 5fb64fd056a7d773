import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';
import { Client } from '@smithy/core/client';

/**
 * Records which AWS actions each component of the local stack calls, for the
 * IAM test (test/unit/infra/iam.test.ts, test/integration/zz-aws-calls.test.ts):
 * loaded with `node --import` into the worker and API processes when
 * `PROVISIONER_AWS_CALLS_FILE` is set (local/stack.ts). It wraps the one
 * `send` every AWS SDK v3 client inherits, so a client made anywhere (a new
 * service, a new file) is recorded without anyone remembering to; the
 * shipped code carries none of it.
 *
 * Each distinct call appends one line: `<component> <service>:<Operation>`,
 * then what IAM conditions see of the request (` key=value`, URI-encoded):
 * a transaction's item kinds, RunInstances' request tags and instance
 * profile. The component is the one `runAsComponent` set for the current
 * request (the local API server: `api:<group>`), else
 * `PROVISIONER_AWS_CALLS_COMPONENT` (`worker`).
 */
export const AWS_CALLS_FILE_ENV = 'PROVISIONER_AWS_CALLS_FILE';
export const AWS_CALLS_COMPONENT_ENV = 'PROVISIONER_AWS_CALLS_COMPONENT';

const STATE = Symbol.for('provisioner.awsCallRecorder');

interface RecorderState {
  component: AsyncLocalStorage<string>;
  seen: Set<string>;
}

function state(): RecorderState {
  const holder = globalThis as unknown as Record<symbol, RecorderState | undefined>;
  holder[STATE] ??= { component: new AsyncLocalStorage<string>(), seen: new Set() };
  return holder[STATE];
}

/** Runs `fn` with AWS calls attributed to `component` (a no-op without the recorder). */
export function runAsComponent<T>(component: string, fn: () => T): T {
  return state().component.run(component, fn);
}

/** `DynamoDBClient` → `dynamodb`: IAM's service prefixes of the clients the project uses. */
const SERVICE_PREFIX: Readonly<Record<string, string>> = {
  DynamoDB: 'dynamodb',
  EC2: 'ec2',
  SSM: 'ssm',
  SecretsManager: 'secretsmanager',
  Pricing: 'pricing',
  CognitoIdentityProvider: 'cognito-idp',
  STS: 'sts',
};

type Input = Record<string, unknown>;

/** Tags whose values IAM conditions of the project's policies test (infra/permissions.ts DEPLOYMENT_TAG). */
const CONDITION_TAGS = ['provisioner:deployment'];

/**
 * Components whose role conditions UpdateItem on the attributes a write names
 * (infra/constructs/instance-events.ts: `dynamodb:Attributes`,
 * `dynamodb:ReturnValues`): their writes' attributes are recorded too (the
 * key's and the expressions' named ones: that handler names every attribute
 * it touches). Not every component's: each write shape would be a line.
 */
const ATTRIBUTE_CONDITIONED = new Set(['instance-events']);

/** What of a request IAM's condition keys see (the IAM test evaluates them). */
export function conditionFacts(operation: string, input: Input, component?: string): string[] {
  const facts: string[] = [];
  if (operation === 'UpdateItem' && component && ATTRIBUTE_CONDITIONED.has(component)) {
    const named = new Set([
      ...Object.keys((input.Key as Input | undefined) ?? {}),
      ...Object.values((input.ExpressionAttributeNames as Record<string, string>) ?? {}),
    ]);
    facts.push(`attributes=${[...named].sort().join(',')}`);
    const { ReturnValues: back, ReturnValuesOnConditionCheckFailure: onFailure } = input;
    if (typeof back === 'string') facts.push(`returnValues=${back}`);
    if (typeof onFailure === 'string') facts.push(`returnValuesOnFailure=${onFailure}`);
  }
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const kinds = new Set<string>();
    for (const item of (input.TransactItems as Input[] | undefined) ?? []) {
      for (const kind of Object.keys(item)) kinds.add(kind);
    }
    facts.push(`items=${[...kinds].sort().join(',')}`);
  }
  if (operation === 'BatchExecuteStatement' || operation === 'ExecuteStatement') {
    // IAM authorizes each statement by its verb (dynamodb:PartiQLUpdate, …)
    const statements = (input.Statements as Input[] | undefined) ?? [
      { Statement: input.Statement },
    ];
    const verbs = new Set<string>();
    for (const s of statements) {
      const text = typeof s.Statement === 'string' ? s.Statement : '';
      const verb = /^\s*(\w+)/.exec(text)?.[1];
      if (verb) verbs.add(verb[0]!.toUpperCase() + verb.slice(1).toLowerCase());
    }
    facts.push(`statements=${[...verbs].sort().join(',')}`);
  }
  if (operation === 'RunInstances') {
    const specs = (input.TagSpecifications as Input[] | undefined) ?? [];
    const types = specs.map((s) => String(s.ResourceType)).sort();
    if (types.length > 0) facts.push(`tagOnCreate=${types.join(',')}`);
    const keys = new Set<string>();
    for (const spec of specs) {
      if (spec.ResourceType !== 'instance') continue;
      for (const tag of (spec.Tags as Array<{ Key?: string; Value?: string }> | undefined) ?? []) {
        if (!tag.Key) continue;
        keys.add(tag.Key);
        // values only of the tags the policies test (the others name models, batches: one line each)
        if (CONDITION_TAGS.includes(tag.Key))
          facts.push(`requestTag:${tag.Key}=${tag.Value ?? ''}`);
      }
    }
    if (keys.size > 0) facts.push(`requestTagKeys=${[...keys].sort().join(',')}`);
    if (input.IamInstanceProfile) facts.push('passRole=ec2.amazonaws.com');
  }
  return facts.map((f) => {
    const at = f.indexOf('=');
    return `${f.slice(0, at)}=${f.slice(at + 1).replace(/[%\s]/g, encodeURIComponent)}`;
  });
}

function serviceOf(clientName: string | undefined): string {
  const name = (clientName ?? 'Unknown').replace(/Client$/, '');
  return SERVICE_PREFIX[name] ?? name.toLowerCase();
}

function install(file: string): void {
  const recorder = state();
  const stacks = new WeakSet<object>();
  const fallback = process.env[AWS_CALLS_COMPONENT_ENV] ?? 'unknown';
  const prototype = Client.prototype as unknown as {
    send: (this: Client<never, never, never, never>, ...args: unknown[]) => unknown;
    __provisionerRecorded?: true;
  };
  if (prototype.__provisionerRecorded) return;
  prototype.__provisionerRecorded = true;
  const send = prototype.send;
  prototype.send = function recordedSend(this, ...args) {
    const stack = this.middlewareStack as unknown as {
      add: (mw: unknown, options: { step: string; name: string }) => void;
    };
    if (!stacks.has(stack)) {
      stacks.add(stack);
      stack.add(
        (next: (a: unknown) => unknown, context: { clientName?: string; commandName?: string }) =>
          (middlewareArgs: { input: Input }) => {
            const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
            const component = recorder.component.getStore() ?? fallback;
            const line = [
              component,
              `${serviceOf(context.clientName)}:${operation}`,
              ...conditionFacts(operation, middlewareArgs.input ?? {}, component),
            ].join(' ');
            if (!recorder.seen.has(line)) {
              recorder.seen.add(line);
              try {
                appendFileSync(file, `${line}\n`);
              } catch {
                recorder.seen.delete(line); // told again on the next such call
              }
            }
            return next(middlewareArgs);
          },
        { step: 'initialize', name: 'provisionerAwsCallRecorder' },
      );
    }
    return send.apply(this, args);
  };
}

const file = process.env[AWS_CALLS_FILE_ENV];
if (file) install(file);
