import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { buildSync } from 'esbuild';
import { ROUTE_GROUPS } from '../../../functions/routes';
import { PROJECT_ROOT } from '../../../infra/bundling';
import { ENVIRONMENT_AGNOSTIC, synthEnvironment, type Synthesized } from './synth';

/**
 * Environment wiring: every variable the shipped code reads is derived from
 * the code itself (the files esbuild puts in each function's and the
 * worker's bundle, scanned for the config getters of config/env.ts and
 * `env.X` reads), then checked against what the template sets for that
 * function or task. A variable the code requires (`requireEnv`) must be set;
 * one read with a default, or read and optional, must be set too unless its
 * entry below says why leaving it unset is right in the cloud. So a new
 * variable fails here until the template sets it or someone writes down why
 * its default holds outside a laptop.
 */

/** Set by the Lambda runtime for every function (not by the template). */
const LAMBDA_RUNTIME_VARS = new Set([
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_LAMBDA_FUNCTION_NAME',
  'AWS_LAMBDA_FUNCTION_MEMORY_SIZE',
  'AWS_LAMBDA_FUNCTION_VERSION',
  'AWS_LAMBDA_LOG_GROUP_NAME',
  'AWS_LAMBDA_LOG_STREAM_NAME',
  'AWS_EXECUTION_ENV',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'LAMBDA_TASK_ROOT',
  '_HANDLER',
  '_X_AMZN_TRACE_ID',
]);

/** Set by ECS on Fargate for every task. */
const FARGATE_RUNTIME_VARS = new Set([
  'ECS_CONTAINER_METADATA_URI_V4',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_EXECUTION_ENV',
]);

const LOCAL_ENDPOINT =
  'a local stand-in’s endpoint (DynamoDB Local, the EC2 proxy, the pricing emulator); unset in the cloud means the service’s own endpoint';
const API_DEFAULT =
  'worker tuning with the API.md default, the same in every environment (infra/config.ts sets the ones that differ)';

/** Variables the code reads that the template rightly leaves unset, and why. */
export const UNSET_IN_THE_CLOUD: Readonly<Record<string, string>> = {
  DYNAMODB_ENDPOINT: LOCAL_ENDPOINT,
  EC2_ENDPOINT: LOCAL_ENDPOINT,
  SSM_ENDPOINT: LOCAL_ENDPOINT,
  PRICING_ENDPOINT: LOCAL_ENDPOINT,
  PROVISIONER_ADMIN_TOKEN_DISABLED:
    'the admin token stays on (break-glass) unless the environment’s config sets adminTokenDisabled, which sets it to true (infra/provisioner-stack.ts)',
  PROVISIONER_AUDIT_RETENTION_DAYS:
    'the audit is kept the 90 days API.md names by default, the same in every environment',
  PROVISIONER_COGNITO_ENDPOINT:
    'moto’s cognito-idp endpoint of the local stack; in the cloud the pool is Cognito’s regional one (config/identity.ts)',
  PROVISIONER_API_TOKEN:
    'the local API’s plain token; in the cloud the Lambdas get PROVISIONER_API_TOKEN_SECRET_ARN and read the secret (config/auth.ts)',
  TEMPORAL_API_KEY:
    'read by the worker, which gets it as an ECS secret; the Lambdas read TEMPORAL_API_KEY_SECRET_ARN instead (service/context.ts)',
  PROVISIONER_LAUNCH_BATCH_IDLE: API_DEFAULT,
  PROVISIONER_LAUNCH_BATCH_MAX: API_DEFAULT,
  PROVISIONER_CAPACITY_MEMORY: API_DEFAULT,
  PROVISIONER_ZONE_CACHE: API_DEFAULT,
  PROVISIONER_LAUNCH_BURST: API_DEFAULT,
  PROVISIONER_LAUNCH_RATE: API_DEFAULT,
  PROVISIONER_LAUNCH_SHARED_PACING:
    'on (the default) in every environment: every worker of a deployment paces RunInstances through the launch record; off only for the bench’s and the integration test’s control runs',
  PROVISIONER_LAUNCH_KEY_SPACING:
    'unset in every environment: a launch key’s calls are spaced by the batch’s max window (PROVISIONER_LAUNCH_BATCH_MAX); 0 turns key spacing off, only for the bench’s and the integration test’s control runs',
  PROVISIONER_FIRST_LAUNCH_BUDGET: API_DEFAULT,
  PROVISIONER_REPROVISION_CAP: API_DEFAULT,
  PROVISIONER_SWEEP_CONCURRENCY: API_DEFAULT,
  PROVISIONER_CONTAINER_POLL: API_DEFAULT,
  PROVISIONER_CONTAINER_ONLINE_TIMEOUT: API_DEFAULT,
  PROVISIONER_BLOCKED_HISTORY: API_DEFAULT,
  PROVISIONER_MAX_CONCURRENT_ACTIVITIES: API_DEFAULT,
  PROVISIONER_MAX_CONCURRENT_WORKFLOW_TASKS: API_DEFAULT,
  PROVISIONER_STICKY_TIMEOUT_S:
    'the worker’s sticky-queue schedule-to-start timeout, 30 s in every environment (worker/main.ts: the SDK’s 10 s ran out about once a machine in a 1,000-machine burst)',
  PROVISIONER_REUSE_V8_CONTEXT:
    'a bench/tuning knob (worker/settings.ts); unset is on, the SDK’s default, in every environment',
  PROVISIONER_MAX_CACHED_WORKFLOWS:
    'a bench/tuning knob (worker/settings.ts); unset is 1,000 runs in every environment, not the SDK’s heap-based default (34 in a 1 GiB task)',
  PROVISIONER_WORKFLOW_PRELOAD:
    'a bench/tuning knob (worker/preload.ts); unset is on in every environment: the workflow bundle’s modules evaluated once per workflow thread, not once per run',
  PROVISIONER_TEMPORAL_CORE_LOG:
    'a diagnosis knob (worker/telemetry.ts); unset forwards the SDK core’s warnings and errors to the worker’s logger in every environment',
  PROVISIONER_WORKFLOW_THREADS:
    'a bench/tuning knob (worker/settings.ts); unset leaves the SDK’s default thread count in every environment',
  PROVISIONER_WORKFLOW_TASK_BACKLOG:
    'a tuning knob (worker/settings.ts); unset is a backlog of 100 workflow tasks in every environment, 5-10 s of work for a worker starved to ~14 % of a core; off only for the bench’s control runs',
  PROVISIONER_TEARDOWN_TERMINATE_BURST: API_DEFAULT,
  PROVISIONER_TEARDOWN_TERMINATE_RATE: API_DEFAULT,
  PROVISIONER_TEARDOWN_DESCRIBE_BURST: API_DEFAULT,
  PROVISIONER_TEARDOWN_DESCRIBE_RATE: API_DEFAULT,
  PROVISIONER_TEARDOWN_BATCH_IDLE: API_DEFAULT,
  PROVISIONER_TEARDOWN_BATCH_MAX: API_DEFAULT,
  PROVISIONER_DDB_WRITE_BATCHING:
    'on in every environment (the launch path’s single-item writes sent together, state/statement-batch.ts); `off` is an escape hatch, one UpdateItem per write as before',
  PROVISIONER_EC2_CALLER_HEADER:
    'the local EC2 proxy’s per-caller counts (ec2/caller.ts); off in the cloud, where a header would only reach AWS (or a VPC endpoint EC2_ENDPOINT names)',
  PROVISIONER_LAUNCH_INSTANCE_BURST:
    'EC2’s own instance bucket for RunInstances (1,000 at once, then 2 a second, per account and region), the same in every environment; read by the plans’ estimate only',
  PROVISIONER_LAUNCH_INSTANCE_RATE:
    'EC2’s own instance bucket for RunInstances (1,000 at once, then 2 a second, per account and region), the same in every environment; read by the plans’ estimate only',
  PROVISIONER_WORKFLOW_GUARDS:
    'off in every environment: the SDK’s per-promise stack traces cost ~40 % of a machine’s workflow-task CPU (worker/sandbox.ts; the deadlock detector stays on); on only to read a stuck workflow’s stack',
  PROVISIONER_SWEEPER:
    'on by default, as the cloud wants; only tests that run a second worker turn it off',
  PRICING_REGION:
    'the Price List API answers in us-east-1 (the default) whatever region the worker runs in',
  PROVISIONER_TASK_QUEUE: 'the one task queue name the API and the worker share by default',
  PROVISIONER_METRICS_FILE:
    'the benchmark’s capacity metering (config/capacity-meter.ts); off in the cloud',
  POWERTOOLS_LOG_LEVEL: 'Powertools’ own default level (INFO) is the one wanted in the cloud',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'a local notice switch; the cloud runs Node 22',
};

const GETTER =
  /\b(requireEnv|optionalEnv|durationEnv|zeroableDurationEnv|positiveIntEnv|positiveNumberEnv)\(\s*'([A-Z][A-Z0-9_]*)'/g;
const DIRECT_READ = /\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[\s*'([A-Z][A-Z0-9_]*)'\s*\])/g;

interface Reads {
  required: Map<string, string>;
  other: Map<string, string>;
}

/** The project files in `entry`'s bundle and the variables they read (name → first file). */
function variablesRead(entry: string): Reads {
  const result = buildSync({
    entryPoints: [path.join(PROJECT_ROOT, entry)],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    logLevel: 'silent',
    tsconfig: path.join(PROJECT_ROOT, 'tsconfig.json'),
  });
  const reads: Reads = { required: new Map(), other: new Map() };
  const files = Object.keys(result.metafile.inputs).filter((f) => f.endsWith('.ts'));
  const texts = new Map(files.map((f) => [f, readFileSync(path.join(PROJECT_ROOT, f), 'utf8')]));
  // config/env.ts's tuning getter reads its variables only where something calls it (the worker)
  const callsTuning = files.some(
    (f) => f !== 'config/env.ts' && texts.get(f)!.includes('provisioningTuning('),
  );
  for (const file of files) {
    let text = texts.get(file)!;
    if (file === 'config/env.ts' && !callsTuning) {
      text = text.replace(/export function provisioningTuning[\s\S]*?\n}\n/, '');
    }
    for (const [, getter, name] of text.matchAll(GETTER)) {
      const into = getter === 'requireEnv' ? reads.required : reads.other;
      if (!into.has(name!)) into.set(name!, file);
    }
    for (const [, dotted, indexed] of text.matchAll(DIRECT_READ)) {
      const name = (dotted ?? indexed)!;
      if (!reads.other.has(name)) reads.other.set(name, file);
    }
  }
  for (const name of reads.required.keys()) reads.other.delete(name);
  return reads;
}

interface Component {
  name: string;
  entry: string;
  set: Set<string>;
  runtime: Set<string>;
}

function lambdaVariables(synth: Synthesized, fn: IConstruct): Set<string> {
  const id = synth.stack.getLogicalId(fn.node.defaultChild as CfnElement);
  const resource = synth.template.toJSON().Resources[id] as {
    Properties: { Environment?: { Variables?: Record<string, unknown> } };
  };
  return new Set(Object.keys(resource.Properties.Environment?.Variables ?? {}));
}

function components(synth: Synthesized): Component[] {
  const { stack } = synth;
  const out: Component[] = ROUTE_GROUPS.map((group) => ({
    name: `api:${group}`,
    entry: `functions/${group}.ts`,
    set: lambdaVariables(synth, stack.api.functions.get(group)!),
    runtime: LAMBDA_RUNTIME_VARS,
  }));
  out.push({
    name: 'instance-events',
    entry: 'functions/instance-events.ts',
    set: lambdaVariables(synth, stack.instanceEvents.function),
    runtime: LAMBDA_RUNTIME_VARS,
  });
  out.push({
    name: 'search-attributes',
    entry: 'infra/search-attributes/handler.ts',
    set: lambdaVariables(synth, stack.searchAttributes.node.findChild('Handler')),
    runtime: LAMBDA_RUNTIME_VARS,
  });
  const taskDefinitions = synth.template.findResources('AWS::ECS::TaskDefinition');
  const [taskDefinition] = Object.values(taskDefinitions) as Array<{
    Properties: {
      ContainerDefinitions: Array<{
        Environment?: Array<{ Name: string }>;
        Secrets?: Array<{ Name: string }>;
      }>;
    };
  }>;
  const container = taskDefinition!.Properties.ContainerDefinitions[0]!;
  out.push({
    name: 'worker',
    // the Dockerfile's entry point
    entry: 'worker/main.ts',
    set: new Set([
      ...(container.Environment ?? []).map((e) => e.Name),
      ...(container.Secrets ?? []).map((s) => s.Name),
    ]),
    runtime: FARGATE_RUNTIME_VARS,
  });
  return out;
}

describe('environment wiring: what the code reads, the template sets', () => {
  let synth: Synthesized;
  beforeAll(() => {
    synth = synthEnvironment('dev', {}, ENVIRONMENT_AGNOSTIC, { bundle: false });
  });
  afterAll(() => synth?.cleanup());

  it('finds the variables the code requires (the derivation works)', () => {
    const api = variablesRead('functions/models.ts');
    expect([...api.required.keys()]).toEqual(
      expect.arrayContaining(['PROVISIONER_TABLE', 'TEMPORAL_ADDRESS']),
    );
    expect([...api.other.keys()]).toEqual(
      expect.arrayContaining(['PROVISIONER_API_TOKEN_SECRET_ARN', 'TEMPORAL_NAMESPACE']),
    );
    const worker = variablesRead('worker/main.ts');
    expect([...worker.other.keys()]).toEqual(
      expect.arrayContaining(['PROVISIONER_DEPLOYMENT', 'PROVISIONER_START_ATTEMPTS']),
    );
  });

  it('sets every variable each function and the worker require at cold start', () => {
    const missing: string[] = [];
    for (const c of components(synth)) {
      for (const [name, file] of variablesRead(c.entry).required) {
        if (!c.set.has(name) && !c.runtime.has(name)) {
          missing.push(`${c.name}: ${name} (required by ${file}) is not set by the template`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('leaves nothing the code reads to a default unless the default is right in the cloud', () => {
    const unexplained: string[] = [];
    for (const c of components(synth)) {
      for (const [name, file] of variablesRead(c.entry).other) {
        if (c.set.has(name) || c.runtime.has(name) || UNSET_IN_THE_CLOUD[name]) continue;
        unexplained.push(
          `${c.name}: ${name} (read by ${file}) is unset by the template and has no reason in UNSET_IN_THE_CLOUD`,
        );
      }
    }
    expect(unexplained).toEqual([]);
  });

  it('sets no local endpoint or plain token in the cloud', () => {
    for (const c of components(synth)) {
      for (const name of [
        'DYNAMODB_ENDPOINT',
        'EC2_ENDPOINT',
        'SSM_ENDPOINT',
        'PRICING_ENDPOINT',
        'PROVISIONER_API_TOKEN',
      ]) {
        expect({ component: c.name, name, set: c.set.has(name) }).toEqual({
          component: c.name,
          name,
          set: false,
        });
      }
    }
  });
});
