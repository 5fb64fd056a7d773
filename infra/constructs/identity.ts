import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccountRecovery,
  FeaturePlan,
  StandardThreatProtectionMode,
  UserPool,
  type IUserPool,
} from 'aws-cdk-lib/aws-cognito';
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { acknowledge } from '../nag';

/**
 * The pool's admin API calls the provisioner makes (service/identity.ts), and
 * no other: add-user (create, then a permanent password), a grant to a user
 * the pool has and the provisioner has not met yet (look them up, to adopt
 * them), remove-user (sign out everywhere, then delete).
 */
export const USER_POOL_ADMIN_ACTIONS = [
  'cognito-idp:AdminCreateUser',
  'cognito-idp:AdminSetUserPassword',
  'cognito-idp:AdminGetUser',
  'cognito-idp:AdminDeleteUser',
  'cognito-idp:AdminUserGlobalSignOut',
] as const;

/** The pool's password policy; the local stack's pool has the same (local/user-pool.ts). */
export const PASSWORD_POLICY = {
  minLength: 12,
  requireLowercase: true,
  requireUppercase: true,
  requireDigits: true,
  requireSymbols: true,
} as const;

export interface IdentityProps {
  environmentName: string;
  /** Production: the pool cannot be deleted (deletion protection) and is kept with the stack. */
  retain: boolean;
  /** An existing pool and app client (from config) instead of a new one. */
  existing?: { userPoolId: string; userPoolClientId: string };
}

/**
 * Who may call the API (API.md, "Who is calling"): one Cognito user pool per
 * environment, with no self sign-up (users are added by a superuser through
 * `POST /v1/users`), a strong password policy, threat protection (Plus
 * plan), and one app client for the CLI (USER_PASSWORD_AUTH and refresh
 * tokens, no secret: the CLI is a public client). Or an existing pool.
 */
export class ProvisionerIdentity extends Construct {
  readonly userPool: IUserPool;
  readonly userPoolClientId: string;

  constructor(scope: Construct, id: string, props: IdentityProps) {
    super(scope, id);
    if (props.existing) {
      this.userPool = UserPool.fromUserPoolId(this, 'UserPool', props.existing.userPoolId);
      this.userPoolClientId = props.existing.userPoolClientId;
      return;
    }
    const pool = new UserPool(this, 'UserPool', {
      userPoolName: `provisioner-${props.environmentName}`,
      selfSignUpEnabled: false,
      signInAliases: { username: true },
      signInCaseSensitive: false,
      passwordPolicy: { ...PASSWORD_POLICY, tempPasswordValidity: Duration.days(1) },
      // a forgotten password is reset by a superuser (remove-user, add-user), never by email
      accountRecovery: AccountRecovery.NONE,
      featurePlan: FeaturePlan.PLUS,
      standardThreatProtectionMode: StandardThreatProtectionMode.FULL_FUNCTION,
      deletionProtection: props.retain,
      removalPolicy: props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    acknowledge(
      pool,
      'COG2',
      'People log in from the provisioner CLI with USER_PASSWORD_AUTH, which has no MFA step yet; threat protection (Plus plan, full function) blocks risky sign-ins, and access tokens live an hour',
    );
    const client = pool.addClient('CliClient', {
      userPoolClientName: 'provisioner-cli',
      generateSecret: false,
      authFlows: { userPassword: true },
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.days(30),
    });
    this.userPool = pool;
    this.userPoolClientId = client.userPoolClientId;
  }

  /** What every API Lambda needs to verify the pool's tokens (functions/access.ts). */
  get environment(): Record<string, string> {
    return {
      PROVISIONER_USER_POOL_ID: this.userPool.userPoolId,
      PROVISIONER_USER_POOL_CLIENT_ID: this.userPoolClientId,
    };
  }

  /** The admin calls of the identity Lambda, on this pool only. */
  grantAdmin(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [...USER_POOL_ADMIN_ACTIONS],
        resources: [this.userPool.userPoolArn],
      }),
    );
  }
}
