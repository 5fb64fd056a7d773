import { createHash, timingSafeEqual } from 'node:crypto';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ConfigError } from './env';

/**
 * The API's bearer token: `PROVISIONER_API_TOKEN` locally, or the secret named
 * by `PROVISIONER_API_TOKEN_SECRET_ARN` in the cloud (read once per container,
 * never put in a plain environment variable there).
 */
export type TokenSource = () => Promise<string>;

export function tokenSourceFromEnv(env: NodeJS.ProcessEnv = process.env): TokenSource {
  const direct = env.PROVISIONER_API_TOKEN;
  if (direct) return () => Promise.resolve(direct);
  const secretArn = env.PROVISIONER_API_TOKEN_SECRET_ARN;
  if (!secretArn) {
    throw new ConfigError(
      'environment variable PROVISIONER_API_TOKEN or PROVISIONER_API_TOKEN_SECRET_ARN is required but not set',
    );
  }
  let cached: Promise<string> | undefined;
  return () => {
    cached ??= new SecretsManagerClient({})
      .send(new GetSecretValueCommand({ SecretId: secretArn }))
      .then((out) => {
        if (!out.SecretString) throw new ConfigError(`secret ${secretArn} has no string value`);
        return out.SecretString.trim();
      })
      .catch((err: unknown) => {
        cached = undefined; // a transient failure must not poison the container
        throw err;
      });
    return cached;
  };
}

/** Compares in constant time (digests have equal length whatever the input). */
export function tokensMatch(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && presented.length === expected.length;
}

/** Extracts the token from an `Authorization: Bearer <token>` header value. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
