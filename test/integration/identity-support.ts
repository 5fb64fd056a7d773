import {
  CognitoIdentityProviderClient,
  InitiateAuthCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { apiClient } from './api-client';
import type { StackInfo } from './stack';

/** moto's cognito-idp of the test stack, as the CLI reaches it. */
export function cognitoClientFor(stack: StackInfo): CognitoIdentityProviderClient {
  return new CognitoIdentityProviderClient({
    region: stack.region,
    endpoint: stack.cognitoEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
}

/** Logs in with USER_PASSWORD_AUTH, as a person's `login --user` does: the pool's real tokens. */
export async function logIn(
  stack: StackInfo,
  user: string,
  password: string,
  clientId: string = stack.userPoolClientId,
): Promise<{ accessToken: string; idToken: string; refreshToken: string }> {
  const out = await cognitoClientFor(stack).send(
    new InitiateAuthCommand({
      ClientId: clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: user, PASSWORD: password },
    }),
  );
  const result = out.AuthenticationResult;
  if (!result?.AccessToken || !result.IdToken || !result.RefreshToken)
    throw new Error(`login of ${user} returned no tokens`);
  return {
    accessToken: result.AccessToken,
    idToken: result.IdToken,
    refreshToken: result.RefreshToken,
  };
}

export const PASSWORD = 'Correct-Horse-9';

/** Adds a user through the API (as admin), logs them in, and hands back a client with their token. */
export async function addUserAndLogIn(stack: StackInfo, name: string, password = PASSWORD) {
  const admin = apiClient(stack);
  const created = await admin.post('/v1/users', { name, password });
  if (created.status !== 201)
    throw new Error(`POST /v1/users ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  const tokens = await logIn(stack, name, password);
  return { ...tokens, api: apiClient(stack, tokens.accessToken) };
}
