import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BUNDLING_STACKS } from 'aws-cdk-lib/cx-api';
import { AwsSolutionsChecks } from 'cdk-nag';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { resolveEnvironment, type EnvironmentConfig } from '../../../infra/config';
import { USER_POOL_ADMIN_ACTIONS } from '../../../infra/constructs/identity';
import { ProvisionerStack } from '../../../infra/provisioner-stack';
import { ROUTE_GROUPS } from '../../../functions/routes';
import { allPolicyStatements, asList, cdkJsonContext, resourcesOfType } from './synth';

/**
 * An environment whose config names an existing user pool (README, "In
 * AWS"), with the admin token switched off: the stack makes no pool of its
 * own, every API Lambda verifies that pool's tokens, only the identity Lambda
 * gets the pool's admin calls, on that pool's ARN, and cdk-nag stays clean.
 */
const EXISTING = { userPoolId: 'eu-west-2_Existing1', userPoolClientId: 'existingclient123' };

describe('an existing user pool from config, admin token off', () => {
  const outdir = mkdtempSync(path.join(tmpdir(), 'provisioner-cdk-identity-'));
  let stack: ProvisionerStack;
  let template: Template;

  beforeAll(() => {
    const app = new App({
      outdir,
      context: { ...cdkJsonContext(), [BUNDLING_STACKS]: [], env: 'dev' },
    });
    const config: EnvironmentConfig = {
      ...resolveEnvironment('dev'),
      identity: EXISTING,
      adminTokenDisabled: true,
    };
    stack = new ProvisionerStack(app, 'Provisioner-dev', {
      config,
      env: { account: '123456789012', region: 'eu-west-2' },
    });
    // a finding nobody acknowledged fails the synth, as `cdk synth` does
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      app.synth();
    } finally {
      quiet.mockRestore();
    }
    template = Template.fromStack(stack);
  });
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  it('makes no pool and no app client of its own', () => {
    expect(Object.keys(resourcesOfType(template, 'AWS::Cognito::UserPool'))).toEqual([]);
    expect(Object.keys(resourcesOfType(template, 'AWS::Cognito::UserPoolClient'))).toEqual([]);
  });

  it('every API Lambda verifies the existing pool’s tokens, with the admin token off', () => {
    const functions = resourcesOfType(template, 'AWS::Lambda::Function');
    for (const group of ROUTE_GROUPS) {
      const fn = stack.api.functions.get(group)!;
      const id = stack.getLogicalId(fn.node.defaultChild as never);
      const vars = (
        functions[id]!.Properties!.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      expect({
        group,
        pool: vars.PROVISIONER_USER_POOL_ID,
        client: vars.PROVISIONER_USER_POOL_CLIENT_ID,
        adminTokenDisabled: vars.PROVISIONER_ADMIN_TOKEN_DISABLED,
      }).toEqual({
        group,
        pool: EXISTING.userPoolId,
        client: EXISTING.userPoolClientId,
        adminTokenDisabled: 'true',
      });
    }
  });

  it('only the identity Lambda calls the admin API, exactly its actions, on the existing pool’s ARN', () => {
    const identityRole = stack.getLogicalId(
      stack.api.functions.get('identity')!.role!.node.defaultChild as never,
    );
    const cognito = allPolicyStatements(template).filter(({ statement }) =>
      asList(statement.Action).some((a) => a.startsWith('cognito-idp:')),
    );
    expect(cognito).toHaveLength(1);
    const { owner, statement } = cognito[0]!;
    const roles = (
      resourcesOfType(template, 'AWS::IAM::Policy')[owner]!.Properties!.Roles as Array<{
        Ref: string;
      }>
    ).map((r) => r.Ref);
    expect(roles).toEqual([identityRole]);
    expect([...asList(statement.Action)].sort()).toEqual([...USER_POOL_ADMIN_ACTIONS].sort());
    expect(JSON.stringify(stack.resolve(statement.Resource))).toContain(
      `:userpool/${EXISTING.userPoolId}`,
    );
    expect(JSON.stringify(statement.Resource)).not.toContain('*');
  });
});
