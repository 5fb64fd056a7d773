import {
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  CreateUserPoolCommand,
} from '@aws-sdk/client-cognito-identity-provider';

/**
 * The local stack's user pool, on moto's cognito-idp: the password policy the
 * CDK pool has (infra/constructs/identity.ts), no self sign-up, and an app
 * client allowing USER_PASSWORD_AUTH and refresh tokens (the CLI's login).
 */
export async function createLocalUserPool(
  endpoint: string,
  region: string,
): Promise<{ userPoolId: string; userPoolClientId: string }> {
  const client = new CognitoIdentityProviderClient({
    region,
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const pool = await client.send(
      new CreateUserPoolCommand({
        PoolName: 'provisioner-local',
        Policies: { PasswordPolicy: LOCAL_PASSWORD_POLICY },
        AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      }),
    );
    const userPoolId = pool.UserPool?.Id;
    if (!userPoolId) throw new Error('moto created a user pool without an id');
    const app = await client.send(
      new CreateUserPoolClientCommand({
        UserPoolId: userPoolId,
        ClientName: 'provisioner-cli',
        GenerateSecret: false,
        ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
      }),
    );
    const userPoolClientId = app.UserPoolClient?.ClientId;
    if (!userPoolClientId) throw new Error('moto created an app client without an id');
    return { userPoolId, userPoolClientId };
  } finally {
    client.destroy();
  }
}

/** Cognito's default policy: 8 characters or more, upper and lower case, a digit. */
export const LOCAL_PASSWORD_POLICY = {
  MinimumLength: 8,
  RequireLowercase: true,
  RequireUppercase: true,
  RequireNumbers: true,
  RequireSymbols: false,
};
