import { RetentionDays } from 'aws-cdk-lib/aws-logs';

/**
 * Per-environment deployment settings: one typed record per environment,
 * chosen with `cdk synth -c env=<name>`. Values a deployer is likely to keep
 * outside the repository (Temporal endpoint and namespace, alarm email) can
 * also be given as context (`-c temporalAddress=… -c temporalNamespace=…
 * -c alarmEmail=…`), which wins over the record.
 */
export const ENVIRONMENT_NAMES = ['dev', 'staging', 'prod'] as const;
export type EnvironmentName = (typeof ENVIRONMENT_NAMES)[number];

/**
 * How the deployment registers the workflows' custom search attributes:
 * Temporal Cloud does not serve the operator service, so Cloud namespaces go
 * through the Cloud Ops API (`UpdateNamespace`); a self-hosted Temporal
 * service takes `OperatorService.AddSearchAttributes`.
 */
export type SearchAttributeRegistration = 'cloud-ops-api' | 'operator-service';

export interface TemporalSettings {
  /** gRPC endpoint, `host:port`. */
  address: string;
  /** Namespace; for Temporal Cloud its full id `<namespace>.<account>`. */
  namespace: string;
  /** Existing Secrets Manager secret (name) holding the namespace's API key as a plain string. */
  apiKeySecretName: string;
  searchAttributes: {
    registration: SearchAttributeRegistration;
    /**
     * Secret (name) with a Cloud Ops API key allowed to update the namespace
     * (Namespace Admin). Defaults to `apiKeySecretName` when that key's
     * identity has the permission.
     */
    opsApiKeySecretName?: string;
  };
  /** Where people inspect workflows; defaults to the Temporal Cloud UI for Cloud namespaces. */
  uiUrl?: string;
}

export interface ApiSettings {
  lambdaMemoryMiB: number;
  lambdaTimeoutSeconds: number;
  /** Default-stage throttling of the HTTP API. */
  throttle: { rateLimit: number; burstLimit: number };
}

export interface WorkerSettings {
  /** Fargate task size (CPU units and MiB; a valid Fargate pair). */
  cpu: number;
  memoryMiB: number;
  desiredCount: number;
  /**
   * NAT gateways in the worker's VPC. 0 puts the worker in public subnets with
   * a public IP (no NAT cost, no inbound rules); more keeps it in private
   * subnets behind that many NAT gateways.
   */
  natGateways: number;
  /** Worker tuning (API.md, "Worker tuning"), passed as its environment. */
  tuning: {
    startAttempts: number;
    retryDelay: string;
    sweepInterval: string;
    strayGrace: string;
  };
}

export interface EnvironmentConfig {
  name: EnvironmentName;
  /** Unset: the account and region of the CLI's credentials (or an environment-agnostic stack). */
  account?: string;
  region?: string;
  /** Keep the table (deletion protection, RETAIN) and secrets when the stack goes away. */
  retainData: boolean;
  temporal: TemporalSettings;
  api: ApiSettings;
  worker: WorkerSettings;
  logRetention: RetentionDays;
  /** An existing Cognito user pool and app client; unset: the stack creates one (infra/constructs/identity.ts). */
  identity?: { userPoolId: string; userPoolClientId: string };
  /** Switches the admin token off (`PROVISIONER_ADMIN_TOKEN_DISABLED`): only pool users get in. */
  adminTokenDisabled?: boolean;
  /** Subscribed to the alarm topic; unset leaves the topic without a subscriber (a warning at synth). */
  alarmEmail?: string;
}

const API_DEFAULT_TUNING: WorkerSettings['tuning'] = {
  startAttempts: 10,
  retryDelay: '10s',
  sweepInterval: '1m',
  strayGrace: '60s',
};

/** Stands for the Temporal Cloud account id until a deployer fills it in. */
export const ACCOUNT_PLACEHOLDER = 'ACCOUNT';

/**
 * A Temporal Cloud namespace per environment. Replace the placeholder with the
 * Cloud account id (here, or with `-c temporalAddress=… -c temporalNamespace=…`)
 * before deploying; synth warns while it is still there.
 */
function cloudTemporal(env: EnvironmentName): TemporalSettings {
  const namespace = `provisioner-${env}.${ACCOUNT_PLACEHOLDER}`;
  return {
    address: `${namespace}.tmprl.cloud:7233`,
    namespace,
    apiKeySecretName: `provisioner/${env}/temporal-api-key`,
    searchAttributes: { registration: 'cloud-ops-api' },
  };
}

export const ENVIRONMENTS: Readonly<Record<EnvironmentName, Omit<EnvironmentConfig, 'name'>>> = {
  dev: {
    retainData: false,
    temporal: cloudTemporal('dev'),
    api: {
      lambdaMemoryMiB: 512,
      lambdaTimeoutSeconds: 29,
      throttle: { rateLimit: 20, burstLimit: 40 },
    },
    worker: {
      cpu: 512,
      memoryMiB: 1024,
      desiredCount: 1,
      natGateways: 0,
      tuning: API_DEFAULT_TUNING,
    },
    logRetention: RetentionDays.ONE_WEEK,
  },
  staging: {
    retainData: true,
    temporal: cloudTemporal('staging'),
    api: {
      lambdaMemoryMiB: 1024,
      lambdaTimeoutSeconds: 29,
      throttle: { rateLimit: 50, burstLimit: 100 },
    },
    worker: {
      cpu: 512,
      memoryMiB: 1024,
      desiredCount: 1,
      natGateways: 1,
      tuning: API_DEFAULT_TUNING,
    },
    logRetention: RetentionDays.ONE_MONTH,
  },
  prod: {
    retainData: true,
    temporal: cloudTemporal('prod'),
    api: {
      lambdaMemoryMiB: 1024,
      lambdaTimeoutSeconds: 29,
      throttle: { rateLimit: 200, burstLimit: 400 },
    },
    worker: {
      cpu: 1024,
      memoryMiB: 2048,
      desiredCount: 2,
      natGateways: 2,
      tuning: { ...API_DEFAULT_TUNING, strayGrace: '5m' },
    },
    logRetention: RetentionDays.SIX_MONTHS,
  },
};

export class UnknownEnvironmentError extends Error {
  override readonly name = 'UnknownEnvironmentError';
}

export class InvalidEnvironmentConfigError extends Error {
  override readonly name = 'InvalidEnvironmentConfigError';
}

/** Context keys that override a record's values. */
export interface EnvironmentOverrides {
  temporalAddress?: string;
  temporalNamespace?: string;
  alarmEmail?: string;
}

function isEnvironmentName(name: string): name is EnvironmentName {
  return (ENVIRONMENT_NAMES as readonly string[]).includes(name);
}

/** The settings of one environment; throws naming the valid environments when `name` is none of them. */
export function resolveEnvironment(
  name: unknown,
  overrides: EnvironmentOverrides = {},
): EnvironmentConfig {
  const valid = ENVIRONMENT_NAMES.join(', ');
  if (name === undefined || name === null || name === '') {
    throw new UnknownEnvironmentError(`no environment given: pass -c env=<name>, one of ${valid}`);
  }
  if (typeof name !== 'string' || !isEnvironmentName(name)) {
    throw new UnknownEnvironmentError(
      `unknown environment ${JSON.stringify(name)}: valid environments are ${valid}`,
    );
  }
  const base = ENVIRONMENTS[name];
  const config: EnvironmentConfig = {
    ...base,
    name,
    temporal: {
      ...base.temporal,
      address: overrides.temporalAddress ?? base.temporal.address,
      namespace: overrides.temporalNamespace ?? base.temporal.namespace,
    },
    alarmEmail: overrides.alarmEmail ?? base.alarmEmail,
  };
  validateEnvironment(config);
  return config;
}

const FARGATE_MEMORY: Record<number, (m: number) => boolean> = {
  256: (m) => [512, 1024, 2048].includes(m),
  512: (m) => m >= 1024 && m <= 4096 && m % 1024 === 0,
  1024: (m) => m >= 2048 && m <= 8192 && m % 1024 === 0,
  2048: (m) => m >= 4096 && m <= 16384 && m % 1024 === 0,
  4096: (m) => m >= 8192 && m <= 30720 && m % 1024 === 0,
};

/** Throws listing every problem with an environment's settings. */
export function validateEnvironment(config: EnvironmentConfig): void {
  const problems: string[] = [];
  if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(config.temporal.address)) {
    problems.push(`temporal address "${config.temporal.address}" is not host:port`);
  }
  if (config.temporal.namespace === '') problems.push('temporal namespace is empty');
  // Secrets are imported by name, so ARNs are partial; a name ending like Secrets
  // Manager's own `-abc123` suffix makes those lookups fail (ECS secrets included).
  for (const secretName of [
    config.temporal.apiKeySecretName,
    config.temporal.searchAttributes.opsApiKeySecretName,
  ]) {
    if (secretName !== undefined && /-[A-Za-z0-9]{6}$/.test(secretName)) {
      problems.push(`secret name "${secretName}" ends like a Secrets Manager suffix (-xxxxxx)`);
    }
  }
  const memoryOk = FARGATE_MEMORY[config.worker.cpu];
  if (!memoryOk?.(config.worker.memoryMiB)) {
    problems.push(
      `worker cpu ${config.worker.cpu} with memory ${config.worker.memoryMiB} MiB is not a Fargate task size`,
    );
  }
  if (config.worker.desiredCount < 1) problems.push('worker desiredCount must be at least 1');
  if (config.alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+$/.test(config.alarmEmail)) {
    problems.push(`alarm email "${config.alarmEmail}" is not an email address`);
  }
  if (problems.length > 0) {
    throw new InvalidEnvironmentConfigError(`environment ${config.name}: ${problems.join('; ')}`);
  }
}

/** The tag value (and `PROVISIONER_DEPLOYMENT`) that scopes this deployment's EC2 instances. */
export function deploymentId(config: Pick<EnvironmentConfig, 'name'>): string {
  return `provisioner-${config.name}`;
}

export function stackName(config: Pick<EnvironmentConfig, 'name'>): string {
  return `Provisioner-${config.name}`;
}

/** The Temporal UI for the configured namespace, when one is known. */
export function temporalUiUrl(temporal: TemporalSettings): string | undefined {
  if (temporal.uiUrl) return temporal.uiUrl;
  if (temporal.searchAttributes.registration === 'cloud-ops-api') {
    return `https://cloud.temporal.io/namespaces/${temporal.namespace}/workflows`;
  }
  return undefined;
}
