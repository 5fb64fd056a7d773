import { ConfigError, optionalEnv, positiveIntEnv } from './env';

/**
 * The deployment's identity settings (README, "Identity, access and audit").
 * A pool is optional (then only the admin token is accepted); the admin token
 * is on unless `PROVISIONER_ADMIN_TOKEN_DISABLED=true`.
 */
export interface IdentitySettings {
  region: string;
  pool?: {
    userPoolId: string;
    clientId: string;
    /** Where the pool's API and JWKS are served when not AWS's regional endpoint (locally: moto). */
    endpoint?: string;
  };
  adminTokenEnabled: boolean;
  auditRetentionDays: number;
}

export function identitySettings(env: NodeJS.ProcessEnv = process.env): IdentitySettings {
  const userPoolId = env.PROVISIONER_USER_POOL_ID || undefined;
  const clientId = env.PROVISIONER_USER_POOL_CLIENT_ID || undefined;
  if ((userPoolId === undefined) !== (clientId === undefined)) {
    throw new ConfigError(
      'environment variables PROVISIONER_USER_POOL_ID and PROVISIONER_USER_POOL_CLIENT_ID are set together or not at all',
    );
  }
  const disabled = optionalEnv('PROVISIONER_ADMIN_TOKEN_DISABLED', 'false', env);
  if (disabled !== 'true' && disabled !== 'false') {
    throw new ConfigError(
      `environment variable PROVISIONER_ADMIN_TOKEN_DISABLED: "${disabled}" is not true or false`,
    );
  }
  const endpoint = env.PROVISIONER_COGNITO_ENDPOINT || undefined;
  return {
    region: optionalEnv('AWS_REGION', 'us-east-1', env),
    ...(userPoolId && clientId
      ? { pool: { userPoolId, clientId, ...(endpoint ? { endpoint } : {}) } }
      : {}),
    adminTokenEnabled: disabled === 'false',
    auditRetentionDays: positiveIntEnv('PROVISIONER_AUDIT_RETENTION_DAYS', 90, env),
  };
}
