import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { Connection } from '@temporalio/client';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ensureTable } from '../state/table';
import { SEARCH_ATTRIBUTE_REGISTRATIONS, TASK_QUEUE } from '../temporal/search-attributes';
import { METRICS_FILE_ENV } from '../config/capacity-meter';
import { AWS_CALLS_COMPONENT_ENV, AWS_CALLS_FILE_ENV } from './aws-call-recorder';
import { startEc2Proxy } from './ec2-proxy';
import { deliverToApi, Ec2StateEvents, type Ec2StateEventsStats } from './ec2-events';
import { startPricingEmulator } from './pricing-emulator';
import { createLocalUserPool } from './user-pool';
import {
  artifactsFromEnv,
  baseProcessEnv,
  buildWorker,
  CDK_OUT_ENV,
  LAMBDA_EVENTS_FILE_ENV,
  localEnvironment,
  readShippedAssembly,
  synthesize,
  WORKER_COMMAND,
  type Artifacts,
  type ShippedAssembly,
  type Substitutions,
} from './shipped';
import {
  LAMBDA_TIMEOUT_FACTOR_ENV,
  SHIPPED_API_PLAN_ENV,
  type ShippedApiPlan,
} from './shipped-api';
import { spawnManaged, tcpReachable, waitUntilHealthy, type ManagedProcess } from './processes';
import type { StackInfo } from './stack-info';
import { ensureToolchain } from './toolchain';
import { workerNodeOptions } from '../worker/heap';

export const PROJECT_ROOT = resolve(__dirname, '..');

export interface StackPorts {
  api: number;
  temporal: number;
  temporalUi: number;
  dynamodb: number;
  ec2: number;
  moto: number;
  /** The Price List API emulator; a free port when not given. */
  pricing?: number;
  /** The Temporal server's Prometheus `/metrics`; a port of the server's choosing when not given. */
  temporalMetrics?: number;
}

export interface StackOptions {
  ports: StackPorts;
  token: string;
  /** Where logs and server state go; wiped at start (moto keeps EC2 state in memory only, so the rest starts fresh too). */
  dataDir: string;
  region?: string;
  tableName?: string;
  namespace?: string;
  /** Extra environment for the worker (tuning such as PROVISIONER_RETRY_DELAY). */
  workerEnv?: NodeJS.ProcessEnv;
  /**
   * Worker processes polling the task queue (default 1): `worker`, then
   * `worker-2`, `worker-3`…, each with the same environment and its own log.
   */
  workers?: number;
  /**
   * Node options of the worker processes, before the entry point (e.g. `--cpu-prof`), after the
   * worker's own heap options (worker/heap.ts; the shipped worker has them in its environment).
   */
  workerNodeArgs?: string[];
  /** Extra environment for the local API server (e.g. the benchmark's PROVISIONER_METRICS_FILE). */
  apiEnv?: NodeJS.ProcessEnv;
  /**
   * Record every AWS action the worker and the API call to this file
   * (local/aws-call-recorder.ts), for the IAM test.
   */
  awsCallsFile?: string;
  /**
   * What the API and the worker run: `sources` (the TypeScript, through tsx)
   * or `shipped` (the Lambda bundles `cdk synth` writes and the worker built by
   * the Dockerfile's command). Default: `PROVISIONER_ARTIFACTS`, else `sources`.
   */
  artifacts?: Artifacts;
  /**
   * For `shipped`: a synthesized cloud assembly to run (default:
   * `PROVISIONER_CDK_OUT`, else `cdk synth -c env=dev` into the data dir).
   */
  cdkOut?: string;
  /**
   * EC2's state-change events (local/ec2-events.ts), delivered to the
   * instance-events handler as EventBridge delivers them in the cloud
   * (default on; off: the sweep alone tells the machines of their instances).
   */
  stateChangeEvents?: boolean;
  log?: (line: string) => void;
  /** Told of each child as it starts, so a caller interrupted mid-start can stop them. */
  track?: (proc: ManagedProcess) => void;
}

export interface RunningStack {
  info: StackInfo;
  processes: ManagedProcess[];
  /** Environment that points a worker or API process at this stack. */
  serviceEnv: NodeJS.ProcessEnv;
  /**
   * Kills one of the stack's processes with `signal` (SIGKILL: a crash) and
   * starts it again as it was started (same arguments, environment, log and,
   * for Temporal, the same database file); resolves once it is healthy again.
   */
  restart(name: 'worker' | 'temporal', signal?: NodeJS.Signals): Promise<ManagedProcess>;
  stop(): Promise<void>;
  /** The local EC2 state-change emitter's counts (live), when it runs (`stateChangeEvents`). */
  ec2Events?: Readonly<Ec2StateEventsStats>;
}

const LOOPBACK = '127.0.0.1';

/**
 * DynamoDB Local's JVM compiles with C1 only (the local stack's setting, not
 * the product's). C2's compiles of its request path (Jetty, Jackson, the
 * expression parser, SQLite's bindings) cost more CPU than a run of a test or
 * a bench lives to earn back: on a fixed product-shaped workload (5 calls a
 * machine, a PartiQL batch and a query every 25), DynamoDB Local used 10.5
 * CPU-seconds for 1,000 machines with C1 against 17.5–21.3 with the default
 * tiered compilers, 35.1 against 45.7 for 4,000, and 1.5 against 2.6 CPU-s to
 * start. The collector was measured too (G1, Serial, Parallel, `-Xms` at
 * `-Xmx`): no difference beyond the noise, so it stays the JVM's choice.
 */
const DYNAMODB_JVM_OPTIONS = ['-XX:TieredStopAtLevel=1'];

/** The instance-events Lambda's path in the template (infra/constructs/instance-events.ts). */
const INSTANCE_EVENTS_FUNCTION = /(^|\/)InstanceEvents\/Handler$/;

/** Runs a TypeScript entry point of this project in a child Node process (`nodeArgs` first). */
export function tsEntry(entry: string, nodeArgs: readonly string[] = []): [string, string[]] {
  return [process.execPath, [...nodeArgs, '--import', 'tsx', join(PROJECT_ROOT, entry)]];
}

/**
 * What differs between worker processes: each writes its DynamoDB metering
 * (PROVISIONER_METRICS_FILE) to a file of its own, `<file>.<name>` after the
 * first, so two workers never overwrite each other's totals.
 */
function perWorker(env: NodeJS.ProcessEnv | undefined, i: number): NodeJS.ProcessEnv {
  const file = env?.[METRICS_FILE_ENV];
  return file && i > 0 ? { [METRICS_FILE_ENV]: `${file}.${workerName(i)}` } : {};
}

/** The stack's name of its `i`th worker process (0-based): `worker`, `worker-2`, … */
export function workerName(i: number): string {
  return i === 0 ? 'worker' : `worker-${i + 1}`;
}

/**
 * The recorder's environment for one component, when calls are recorded
 * (the API server imports the recorder itself; the worker runs through
 * local/worker-recorded.ts).
 */
function awsCallRecording(file: string | undefined, component: string): NodeJS.ProcessEnv {
  if (!file) return {};
  return { [AWS_CALLS_FILE_ENV]: file, [AWS_CALLS_COMPONENT_ENV]: component };
}

async function httpAnswers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** The dev server's log level (`warn` when unset): `info` or `debug` to diagnose the server. */
export const TEMPORAL_LOG_LEVEL_ENV = 'PROVISIONER_LOCAL_TEMPORAL_LOG_LEVEL';
/**
 * More dynamic-config values for the dev server, `KEY=JSON` separated by
 * spaces (e.g. `matching.numTaskqueueReadPartitions=4`), after the stack's
 * own: for trying a server setting in the bench without a code change.
 */
export const TEMPORAL_DYNAMIC_CONFIG_ENV = 'PROVISIONER_LOCAL_TEMPORAL_DYNAMIC_CONFIG';

/**
 * The environment's extra dynamic-config values for the dev server, `KEY=JSON`
 * each (the stack's own are passed where it starts the server); only the
 * shape is checked here: the server refuses a value that is not JSON when it starts.
 */
export function temporalDynamicConfig(env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (env[TEMPORAL_DYNAMIC_CONFIG_ENV] ?? '').split(/\s+/).filter((kv) => kv !== '');
  for (const kv of extra) {
    if (!/^[\w.]+=\S+$/.test(kv)) {
      throw new Error(`${TEMPORAL_DYNAMIC_CONFIG_ENV}: "${kv}" is not KEY=JSON`);
    }
  }
  return [...extra];
}

/**
 * Brings up the whole local stack on loopback: Temporal dev server, DynamoDB
 * Local, moto behind the EC2 proxy, the table, the worker and the API server.
 * Anything that fails to come up stops what was already started.
 */
export async function startStack(opts: StackOptions): Promise<RunningStack> {
  const log = opts.log ?? (() => undefined);
  const region = opts.region ?? 'us-east-1';
  const tableName = opts.tableName ?? 'provisioner';
  const namespace = opts.namespace ?? 'default';
  const { ports } = opts;
  const logs = join(opts.dataDir, 'logs');
  rmSync(opts.dataDir, { recursive: true, force: true });
  mkdirSync(logs, { recursive: true });

  const tools = await ensureToolchain(log);
  const artifacts = opts.artifacts ?? artifactsFromEnv();
  let shipped: { assembly: ShippedAssembly; workerApp: string } | undefined;
  if (artifacts === 'shipped') {
    const cdkOut = opts.cdkOut ?? process.env[CDK_OUT_ENV];
    const started = Date.now();
    if (!cdkOut) log('synthesizing (cdk synth -c env=dev) for the shipped artifacts');
    const assembly = readShippedAssembly(cdkOut ?? synthesize(join(opts.dataDir, 'cdk.out')));
    const workerApp = buildWorker(assembly.worker, opts.dataDir);
    shipped = { assembly, workerApp };
    log(
      `shipped artifacts: ${assembly.cdkOut} (${assembly.functions.size} functions), worker built ` +
        `in ${workerApp} (${Math.round((Date.now() - started) / 1000)} s)`,
    );
    if (opts.awsCallsFile)
      log('AWS calls are not recorded with shipped artifacts (the bundles carry their own SDK)');
  }
  const processes: ManagedProcess[] = [];
  const track = (proc: ManagedProcess): ManagedProcess => {
    processes.push(proc);
    opts.track?.(proc);
    return proc;
  };
  /** How each process was started, so `restart` can start it again the same way. */
  const spawned = new Map<string, Parameters<typeof spawnManaged>>();
  const spawnTracked = (...args: Parameters<typeof spawnManaged>): ManagedProcess => {
    spawned.set(args[0], args);
    return track(spawnManaged(...args));
  };
  const closers: Array<() => Promise<void>> = [];
  const stop = async () => {
    await Promise.all(closers.splice(0).map((close) => close().catch(() => undefined)));
    await Promise.all(
      processes
        .splice(0)
        .reverse()
        .map((p) => p.stop()),
    );
  };

  try {
    const temporal = spawnTracked(
      'temporal',
      tools.temporal,
      [
        'server',
        'start-dev',
        '--ip',
        LOOPBACK,
        '--port',
        String(ports.temporal),
        '--ui-ip',
        LOOPBACK,
        '--ui-port',
        String(ports.temporalUi),
        '--ui-disable-news-fetch',
        '--db-filename',
        join(opts.dataDir, 'temporal.sqlite'),
        // Write-ahead log, no fsync per transaction: a killed server loses
        // nothing (the fault suite restarts it on the same file), and the
        // server keeps up with a thousand machines. The default (a rollback
        // journal, fsync per commit) started 12 workflows a second here.
        '--sqlite-pragma',
        'journal_mode=wal',
        '--sqlite-pragma',
        'synchronous=off',
        '--log-level',
        process.env[TEMPORAL_LOG_LEVEL_ENV]?.trim() || 'warn',
        ...temporalDynamicConfig().flatMap((kv) => ['--dynamic-config-value', kv]),
        ...(ports.temporalMetrics !== undefined
          ? ['--metrics-port', String(ports.temporalMetrics)]
          : []),
        ...SEARCH_ATTRIBUTE_REGISTRATIONS.flatMap((sa) => [
          '--search-attribute',
          `${sa.name}=${sa.cliType}`,
        ]),
      ],
      { logFile: join(logs, 'temporal.log') },
    );

    const dynamodb = track(
      spawnManaged(
        'dynamodb',
        tools.java,
        [
          `-Djava.library.path=${tools.dynamodbLibDir}`,
          '-Xmx512m',
          ...DYNAMODB_JVM_OPTIONS,
          '-jar',
          tools.dynamodbJar,
          '-inMemory',
          '-sharedDb',
          '-port',
          String(ports.dynamodb),
          '-disableTelemetry',
        ],
        { logFile: join(logs, 'dynamodb.log') },
      ),
    );

    const moto = track(
      // moto_server's own entry, through local/moto-server.py: its tag lookup made direct
      spawnManaged(
        'moto',
        join(dirname(tools.motoServer), 'python'),
        [join(PROJECT_ROOT, 'local', 'moto-server.py'), '-H', LOOPBACK, '-p', String(ports.moto)],
        {
          logFile: join(logs, 'moto.log'),
          env: { ...process.env, MOTO_AMIS_PATH: join(PROJECT_ROOT, 'local', 'ubuntu-amis.json') },
        },
      ),
    );

    const temporalAddress = `${LOOPBACK}:${ports.temporal}`;
    const dynamodbEndpoint = `http://${LOOPBACK}:${ports.dynamodb}`;
    const motoEndpoint = `http://${LOOPBACK}:${ports.moto}`;
    const ddb = new DynamoDBClient({
      region,
      endpoint: dynamodbEndpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    closers.push(() => Promise.resolve(ddb.destroy()));

    await Promise.all([
      waitUntilHealthy(
        temporal,
        'Temporal dev server',
        () => temporalAnswers(temporalAddress, ports.temporal),
        60_000,
      ),
      waitUntilHealthy(
        dynamodb,
        'DynamoDB Local',
        async () => {
          await ddb.send(new ListTablesCommand({}));
          return true;
        },
        60_000,
      ),
      waitUntilHealthy(moto, 'moto', () => httpAnswers(`${motoEndpoint}/moto-api/`), 60_000),
    ]);
    log(
      `Temporal ${temporalAddress}, DynamoDB Local ${dynamodbEndpoint}, moto ${motoEndpoint} are up`,
    );

    await ensureTable(ddb, tableName);
    // moto's cognito-idp: the pool people and tests log in to (API.md, "Who is calling")
    const pool = await createLocalUserPool(motoEndpoint, region);

    const proxy = await startEc2Proxy({ upstream: motoEndpoint, host: LOOPBACK, port: ports.ec2 });
    closers.push(() => proxy.close());
    const ec2Endpoint = proxy.url;
    // the synthetic price list is made from moto's own catalogue (no proxy faults or limits)
    const pricing = await startPricingEmulator({
      ec2Endpoint: motoEndpoint,
      host: LOOPBACK,
      port: ports.pricing ?? 0,
    });
    closers.push(() => pricing.close());

    const serviceEnv: NodeJS.ProcessEnv = {
      ...process.env,
      AWS_REGION: region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_EC2_METADATA_DISABLED: 'true',
      PROVISIONER_TABLE: tableName,
      DYNAMODB_ENDPOINT: dynamodbEndpoint,
      EC2_ENDPOINT: ec2Endpoint,
      // the worker names each EC2 call's caller for the proxy's byCaller (ec2/caller.ts)
      PROVISIONER_EC2_CALLER_HEADER: 'on',
      PRICING_ENDPOINT: pricing.url,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'WARN',
    };

    let workers: ManagedProcess[];
    let api: ManagedProcess;
    if (shipped) {
      const secret = await createApiTokenSecret(motoEndpoint, region, opts.token);
      const lambdaEventsFile = join(opts.dataDir, 'lambda-events.jsonl');
      // the values the template's intrinsics take here; anything else it sets is kept as it is
      const replace: Record<string, string> = {
        PROVISIONER_TABLE: tableName,
        TEMPORAL_ADDRESS: temporalAddress,
        TEMPORAL_NAMESPACE: namespace,
        AWS_REGION: region,
        PROVISIONER_API_TOKEN_SECRET_ARN: secret,
        PROVISIONER_USER_POOL_ID: pool.userPoolId,
        PROVISIONER_USER_POOL_CLIENT_ID: pool.userPoolClientId,
      };
      const unset: Record<string, string> = {
        TEMPORAL_API_KEY_SECRET_ARN:
          'the local Temporal dev server takes no API key (a key also turns TLS on)',
        PROVISIONER_INSTANCE_PROFILE:
          'the hosts’ instance profile is made by the stack; moto has none (the sources path launches without one too)',
      };
      // the local endpoints and credentials, as the sources path sets them (never the code's settings)
      const endpoints: Record<string, string> = {
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_EC2_METADATA_DISABLED: 'true',
        DYNAMODB_ENDPOINT: dynamodbEndpoint,
        EC2_ENDPOINT: ec2Endpoint,
        PROVISIONER_EC2_CALLER_HEADER: 'on',
        PRICING_ENDPOINT: pricing.url,
        POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'WARN',
        ...(process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED
          ? { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }
          : {}),
      };
      const { assembly, workerApp } = shipped;
      const workerSubs: Substitutions = { replace, unset, add: endpoints };
      const workerEnv = {
        ...baseProcessEnv(),
        ...localEnvironment('worker', assembly.worker.environment, workerSubs),
        ...(opts.workerEnv as Record<string, string> | undefined),
      };
      workers = Array.from({ length: Math.max(1, opts.workers ?? 1) }, (_, i) =>
        spawnTracked(
          workerName(i),
          process.execPath,
          [...(opts.workerNodeArgs ?? []), ...WORKER_COMMAND],
          {
            cwd: workerApp,
            env: { ...workerEnv, ...perWorker(opts.workerEnv, i) },
            logFile: join(logs, `${workerName(i)}.log`),
          },
        ),
      );
      // EventBridge's target in the cloud, hosted beside the API's functions (local/ec2-events.ts)
      const instanceEvents = [...assembly.functions.values()].find((f) =>
        INSTANCE_EVENTS_FUNCTION.test(f.name),
      )?.logicalId;
      const plan: ShippedApiPlan = {
        routes: assembly.routes,
        functions: {},
        ...(instanceEvents ? { instanceEvents } : {}),
      };
      const hosted = new Set(assembly.routes.map((r) => r.functionLogicalId));
      if (instanceEvents) hosted.add(instanceEvents);
      for (const id of hosted) {
        const fn = assembly.functions.get(id)!;
        const functionName = fn.name.replace(/\//g, '-');
        const lambdaRuntime: Record<string, string> = {
          AWS_REGION: region,
          AWS_DEFAULT_REGION: region,
          AWS_LAMBDA_FUNCTION_NAME: functionName,
          AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMiB),
          AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
          AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
          LAMBDA_TASK_ROOT: fn.assetDir,
          _HANDLER: fn.handler,
          PROVISIONER_LAMBDA_TIMEOUT_SECONDS: String(fn.timeoutSeconds),
        };
        const subs: Substitutions = {
          replace,
          unset,
          add: {
            ...endpoints,
            ...lambdaRuntime,
            // where the template's Cognito and Secrets Manager answer here: moto
            PROVISIONER_COGNITO_ENDPOINT: motoEndpoint,
            AWS_ENDPOINT_URL_SECRETS_MANAGER: motoEndpoint,
            [LAMBDA_EVENTS_FILE_ENV]: lambdaEventsFile,
            ...(opts.apiEnv as Record<string, string> | undefined),
          },
        };
        plan.functions[id] = {
          name: fn.name,
          assetDir: fn.assetDir,
          handler: fn.handler,
          timeoutSeconds: fn.timeoutSeconds,
          memoryMiB: fn.memoryMiB,
          environment: { ...baseProcessEnv(), ...localEnvironment(fn.name, fn.environment, subs) },
        };
      }
      const planFile = join(opts.dataDir, 'shipped-api.json');
      writeFileSync(planFile, JSON.stringify(plan, null, 2));
      const [apiCmd, apiArgs] = tsEntry('local/api-server-shipped.ts');
      api = track(
        spawnManaged('api', apiCmd, apiArgs, {
          cwd: PROJECT_ROOT,
          env: {
            ...baseProcessEnv(),
            PROVISIONER_API_PORT: String(ports.api),
            [SHIPPED_API_PLAN_ENV]: planFile,
            ...(process.env[LAMBDA_TIMEOUT_FACTOR_ENV]
              ? { [LAMBDA_TIMEOUT_FACTOR_ENV]: process.env[LAMBDA_TIMEOUT_FACTOR_ENV] }
              : {}),
          },
          logFile: join(logs, 'api.log'),
        }),
      );
    } else {
      // the heap the task definition's NODE_OPTIONS gives the cloud's worker (worker/heap.ts); the
      // caller's options after it, so a bench's --worker-node-option overrides it
      const [workerCmd, workerArgs] = tsEntry(
        opts.awsCallsFile ? 'local/worker-recorded.ts' : 'worker/main.ts',
        [...workerNodeOptions(), ...(opts.workerNodeArgs ?? [])],
      );
      workers = Array.from({ length: Math.max(1, opts.workers ?? 1) }, (_, i) =>
        spawnTracked(workerName(i), workerCmd, workerArgs, {
          cwd: PROJECT_ROOT,
          env: {
            ...serviceEnv,
            ...opts.workerEnv,
            ...perWorker(opts.workerEnv, i),
            ...awsCallRecording(opts.awsCallsFile, 'worker'),
          },
          logFile: join(logs, `${workerName(i)}.log`),
        }),
      );

      // each request's calls are the Lambda of its route group's (local/api-server.ts)
      const [apiCmd, apiArgs] = tsEntry('local/api-server-main.ts');
      api = track(
        spawnManaged('api', apiCmd, apiArgs, {
          cwd: PROJECT_ROOT,
          env: {
            ...serviceEnv,
            ...opts.apiEnv,
            ...awsCallRecording(opts.awsCallsFile, 'api:unknown'),
            PROVISIONER_API_TOKEN: opts.token,
            PROVISIONER_API_PORT: String(ports.api),
            PROVISIONER_USER_POOL_ID: pool.userPoolId,
            PROVISIONER_USER_POOL_CLIENT_ID: pool.userPoolClientId,
            PROVISIONER_COGNITO_ENDPOINT: motoEndpoint,
          },
          logFile: join(logs, 'api.log'),
        }),
      );
    }

    const apiUrl = `http://${LOOPBACK}:${ports.api}`;
    await Promise.all([
      waitUntilHealthy(api, 'API server', () => httpAnswers(`${apiUrl}/v1/models`), 60_000),
      ...workers.map((worker) =>
        waitUntilHealthy(
          worker,
          worker.name,
          () => workerPolling(temporalAddress, namespace, `${worker.child.pid}@`),
          120_000,
        ),
      ),
      waitUntilHealthy(
        temporal,
        'Temporal Web UI',
        () => httpAnswers(`http://${LOOPBACK}:${ports.temporalUi}/`),
        60_000,
      ),
    ]);

    let ec2Events: Ec2StateEventsStats | undefined;
    if (opts.stateChangeEvents ?? true) {
      const events = new Ec2StateEvents({
        proxy,
        motoEndpoint,
        region,
        deliver: deliverToApi(apiUrl),
        log,
      });
      events.start();
      ec2Events = events.stats;
      // stopped before the API it delivers to (closers run at once)
      closers.unshift(() => events.close());
    }

    const info: StackInfo = {
      apiUrl,
      token: opts.token,
      temporalAddress,
      temporalNamespace: namespace,
      temporalUiUrl: `http://${LOOPBACK}:${ports.temporalUi}`,
      dynamodbEndpoint,
      ec2Endpoint,
      pricingEndpoint: pricing.url,
      region,
      cognitoEndpoint: motoEndpoint,
      userPoolId: pool.userPoolId,
      userPoolClientId: pool.userPoolClientId,
      motoEndpoint,
      tableName,
      artifacts,
      ...(shipped
        ? {
            cdkOut: shipped.assembly.cdkOut,
            workerApp: shipped.workerApp,
            shippedApiPlan: join(opts.dataDir, 'shipped-api.json'),
            lambdaEventsFile: join(opts.dataDir, 'lambda-events.jsonl'),
          }
        : {}),
    };
    // The server lists a dead worker's pollers for a minute after it is gone: a restarted
    // worker is ready once a poller of its own (the SDK's identity, `<pid>@<host>`) is listed.
    const healthy: Record<'worker' | 'temporal', (proc: ManagedProcess) => Promise<boolean>> = {
      worker: (proc) => workerPolling(temporalAddress, namespace, `${proc.child.pid}@`),
      temporal: () => temporalAnswers(temporalAddress, ports.temporal),
    };
    const restart = async (name: 'worker' | 'temporal', signal: NodeJS.Signals = 'SIGKILL') => {
      const spec = spawned.get(name);
      const index = processes.findIndex((p) => p.name === name);
      if (!spec || index < 0) throw new Error(`no ${name} process to restart`);
      await processes[index]!.kill(signal);
      processes.splice(index, 1);
      const proc = track(spawnManaged(...spec));
      await waitUntilHealthy(proc, name, () => healthy[name](proc), 120_000);
      return proc;
    };
    return { info, processes, serviceEnv, restart, stop, ...(ec2Events ? { ec2Events } : {}) };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The API token as the cloud keeps it, a Secrets Manager secret (moto's), which the bundles read. */
async function createApiTokenSecret(
  motoEndpoint: string,
  region: string,
  token: string,
): Promise<string> {
  const client = new SecretsManagerClient({
    region,
    endpoint: motoEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const out = await client.send(
      new CreateSecretCommand({ Name: 'provisioner/local/api-token', SecretString: token }),
    );
    return out.ARN!;
  } finally {
    client.destroy();
  }
}

async function temporalAnswers(address: string, port: number): Promise<boolean> {
  if (!(await tcpReachable(port))) return false;
  const connection = await Connection.connect({ address, connectTimeout: 2000 });
  try {
    await connection.workflowService.getSystemInfo({});
    return true;
  } finally {
    await connection.close();
  }
}

/** The worker is ready once it polls the task queue for workflow tasks (a poller whose identity starts with `identityPrefix`, when given). */
async function workerPolling(
  address: string,
  namespace: string,
  identityPrefix = '',
): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 2000 });
  try {
    const res = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: TASK_QUEUE },
      taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
    });
    return (res.pollers ?? []).some((p) => (p.identity ?? '').startsWith(identityPrefix));
  } finally {
    await connection.close();
  }
}
