import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import type { Asset } from 'aws-cdk-lib/aws-s3-assets';
import type { IConstruct } from 'constructs';
import {
  GATEWAY_ROUTES,
  ROUTES,
  ROUTE_GROUPS,
  routeKey,
  type RouteGroup,
} from '../../../functions/routes';
import { DEFAULT_TABLE_NAME, TABLE_SCHEMA } from '../../../state/schema';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../../../temporal/search-attributes';
import {
  ENVIRONMENT_NAMES,
  deploymentId,
  resolveEnvironment,
  stackName,
  type EnvironmentConfig,
  type EnvironmentName,
  type EnvironmentOverrides,
} from '../../../infra/config';
import { ENTRY_METADATA } from '../../../infra/bundling';
import {
  DEFAULT_ROUTE_GROUP,
  MACHINES_EC2_ACTIONS,
  MODELS_EC2_ACTIONS,
} from '../../../infra/constructs/api';
import { USER_POOL_ADMIN_ACTIONS } from '../../../infra/constructs/identity';
import {
  DEPLOYMENT_TAG,
  EC2_DESCRIBE_ACTIONS,
  PRICING_ACTIONS,
  SSM_READ_ACTIONS,
  TABLE_ACTIONS,
} from '../../../infra/permissions';
import {
  allPolicyStatements,
  ENVIRONMENT_AGNOSTIC,
  asList,
  resourcesOfType,
  synthEnvironment,
  type PolicyStatementJson,
  type Resource,
  type Synthesized,
} from './synth';

/** prod is synthesized with the context overrides a deployer would pass. */
const OVERRIDES: Record<EnvironmentName, EnvironmentOverrides> = {
  dev: {},
  staging: {},
  prod: {
    temporalAddress: 'provisioner-prod.a1b2c.tmprl.cloud:7233',
    temporalNamespace: 'provisioner-prod.a1b2c',
    alarmEmail: 'oncall@example.org',
  },
};

/** The only actions any statement may grant on every resource (EC2 cannot scope them). */
const RESOURCE_WILDCARD_ALLOWED = new Set<string>([
  ...EC2_DESCRIBE_ACTIONS,
  ...PRICING_ACTIONS,
  // containers: which instances SSM has online, and how their commands ended
  ...SSM_READ_ACTIONS,
  'ecr:GetAuthorizationToken',
  // model creation refuses a region EC2 does not offer, create-model and set-model-constraints an unknown zone or type
  ...MODELS_EC2_ACTIONS,
  // reprovision asks EC2 whether the instance is gone
  ...MACHINES_EC2_ACTIONS,
]);

/** Names of variables that would hold a secret in plain text. */
const PLAIN_SECRET_NAME = /(TOKEN|API_KEY|PASSWORD|SECRET)$/;

describe.each(ENVIRONMENT_NAMES)('Provisioner-%s', (env) => {
  const config: EnvironmentConfig = resolveEnvironment(env, OVERRIDES[env]);
  let synth: Synthesized;

  beforeAll(() => {
    // environment-agnostic: the template's ARNs keep their pseudo-parameters (nag.test.ts covers the CLI's paths)
    synth = synthEnvironment(env, OVERRIDES[env] as Record<string, string>, ENVIRONMENT_AGNOSTIC);
  });
  afterAll(() => synth?.cleanup());

  const logicalId = (construct: IConstruct) =>
    synth.stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const resources = () => synth.template.toJSON().Resources as Record<string, Resource>;
  const apiFunctionId = (group: RouteGroup) => logicalId(synth.stack.api.functions.get(group)!);
  const poolId = () => Object.keys(resourcesOfType(synth.template, 'AWS::Cognito::UserPool'))[0];

  it('is named after the environment', () => {
    expect(synth.stack.stackName).toBe(stackName(config));
    expect(synth.stack.stackName).toBe(`Provisioner-${env}`);
  });

  describe('table', () => {
    it('expires idempotency records by TTL on expiresAt', () => {
      synth.template.hasResourceProperties('AWS::DynamoDB::Table', {
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      });
    });

    it('has the keys and indexes of state/schema.ts, all strings', () => {
      const table = Object.values(resourcesOfType(synth.template, 'AWS::DynamoDB::Table'));
      expect(table).toHaveLength(1);
      const props = table[0]!.Properties!;
      expect(props.TableName).toBe(`${DEFAULT_TABLE_NAME}-${env}`);
      expect(props.KeySchema).toEqual([
        { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
      ]);
      expect(props.GlobalSecondaryIndexes).toEqual(
        TABLE_SCHEMA.globalSecondaryIndexes.map((index) => ({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' },
            { AttributeName: index.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: index.projection ?? 'ALL' },
        })),
      );
      // gsi2 (machines by status) is gone, and with it its key attributes; machines by
      // instance id (issue 30) hold keys only
      const indexes = props.GlobalSecondaryIndexes as Array<{
        IndexName: string;
        Projection: { ProjectionType: string };
      }>;
      expect(indexes.map((i) => [i.IndexName, i.Projection.ProjectionType])).toEqual([
        ['gsi1', 'ALL'],
        ['byInstance', 'KEYS_ONLY'],
      ]);
      const keyNames = [
        ...new Set([
          TABLE_SCHEMA.partitionKey,
          TABLE_SCHEMA.sortKey,
          ...TABLE_SCHEMA.globalSecondaryIndexes.flatMap((i) => [i.partitionKey, i.sortKey]),
        ]),
      ];
      expect(props.AttributeDefinitions).toEqual(
        expect.arrayContaining(
          keyNames.map((name) => ({ AttributeName: name, AttributeType: 'S' })),
        ),
      );
      expect(props.AttributeDefinitions).toHaveLength(keyNames.length);
    });

    it('is on-demand, with point-in-time recovery and a NEW_AND_OLD_IMAGES stream', () => {
      synth.template.hasResourceProperties('AWS::DynamoDB::Table', {
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      });
    });

    it(`is ${env === 'dev' ? 'destroyed with the stack' : 'retained and deletion-protected'}`, () => {
      const retained = env !== 'dev';
      expect(config.retainData).toBe(retained);
      expect(synth.stack.terminationProtection).toBe(retained);
      synth.template.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: retained ? 'Retain' : 'Delete',
        UpdateReplacePolicy: retained ? 'Retain' : 'Delete',
        Properties: Match.objectLike({ DeletionProtectionEnabled: retained }),
      });
    });
  });

  describe('API Lambdas', () => {
    it('are one per route group, Node 22, with handler `index.handler`', () => {
      const apiFunctions = Object.values(
        resourcesOfType(synth.template, 'AWS::Lambda::Function'),
      ).filter(
        (fn) =>
          (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
            ?.Variables?.POWERTOOLS_SERVICE_NAME === 'provisioner-api',
      );
      expect(apiFunctions).toHaveLength(ROUTE_GROUPS.length);
      expect([...synth.stack.api.functions.keys()].sort()).toEqual([...ROUTE_GROUPS].sort());
      for (const fn of apiFunctions) {
        expect(fn.Properties).toMatchObject({
          Runtime: 'nodejs22.x',
          Handler: 'index.handler',
          MemorySize: config.api.lambdaMemoryMiB,
          Timeout: config.api.lambdaTimeoutSeconds,
        });
      }
    });

    it.each(ROUTE_GROUPS)(
      '%s is bundled from functions/<group>.ts by esbuild, with source maps',
      (group) => {
        const fn = synth.stack.api.functions.get(group)!;
        const asset = fn.node.findChild('Code') as Asset;
        const dir = path.join(synth.outdir, asset.assetPath);
        expect(existsSync(path.join(dir, 'index.js'))).toBe(true);
        const map = JSON.parse(readFileSync(path.join(dir, 'index.js.map'), 'utf8')) as {
          sources: string[];
        };
        const entry = fn.node.metadata.find((m) => m.type === ENTRY_METADATA)?.data as string;
        expect(entry).toBe(`functions/${group}.ts`);
        expect(map.sources.filter((source) => source.endsWith(`/${entry}`))).toHaveLength(1);
      },
    );

    it('get the table, Temporal settings and secret ARNs, never a secret value', () => {
      const tableId = logicalId(synth.stack.table.table);
      const tokenId = logicalId(synth.stack.apiTokenSecret);
      for (const group of ROUTE_GROUPS) {
        const fn = resources()[apiFunctionId(group)]!;
        const vars = (fn.Properties!.Environment as { Variables: Record<string, unknown> })
          .Variables;
        expect(Object.keys(vars).sort()).toEqual(
          [
            'NODE_OPTIONS',
            'POWERTOOLS_METRICS_NAMESPACE',
            'POWERTOOLS_SERVICE_NAME',
            'PROVISIONER_API_TOKEN_SECRET_ARN',
            'PROVISIONER_DEPLOYMENT',
            'PROVISIONER_TABLE',
            'PROVISIONER_USER_POOL_CLIENT_ID',
            'PROVISIONER_USER_POOL_ID',
            'TEMPORAL_ADDRESS',
            'TEMPORAL_API_KEY_SECRET_ARN',
            'TEMPORAL_NAMESPACE',
          ].sort(),
        );
        // every API Lambda verifies the pool's tokens against this stack's pool and client
        expect(vars.PROVISIONER_USER_POOL_ID).toEqual({ Ref: poolId() });
        expect(vars.PROVISIONER_USER_POOL_CLIENT_ID).toEqual({
          Ref: Object.keys(resourcesOfType(synth.template, 'AWS::Cognito::UserPoolClient'))[0],
        });
        expect(vars).toMatchObject({
          PROVISIONER_TABLE: { Ref: tableId },
          TEMPORAL_ADDRESS: config.temporal.address,
          TEMPORAL_NAMESPACE: config.temporal.namespace,
          PROVISIONER_API_TOKEN_SECRET_ARN: { Ref: tokenId },
          NODE_OPTIONS: '--enable-source-maps',
          // plans read the worker's launch record under the same deployment
          PROVISIONER_DEPLOYMENT: deploymentId(config),
        });
        expect(JSON.stringify(vars.TEMPORAL_API_KEY_SECRET_ARN)).toContain(
          `:secret:${config.temporal.apiKeySecretName}`,
        );
      }
    });

    it('log to groups with the environment’s retention', () => {
      for (const group of ROUTE_GROUPS) {
        const fn = resources()[apiFunctionId(group)]!;
        const logGroupRef = (fn.Properties!.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup
          .Ref;
        expect(resources()[logGroupRef]!.Properties!.RetentionInDays).toBe(config.logRetention);
      }
    });
  });

  describe('user pool', () => {
    it('one pool and one CLI client: no self sign-up, a strong password policy, threat protection, deletion protection when data is kept', () => {
      const pools = Object.values(resourcesOfType(synth.template, 'AWS::Cognito::UserPool'));
      expect(pools).toHaveLength(1);
      const props = pools[0]!.Properties!;
      expect(props.AdminCreateUserConfig).toEqual({ AllowAdminCreateUserOnly: true });
      expect(props.Policies).toMatchObject({
        PasswordPolicy: {
          MinimumLength: 12,
          RequireLowercase: true,
          RequireUppercase: true,
          RequireNumbers: true,
          RequireSymbols: true,
        },
      });
      expect(props.UserPoolTier).toBe('PLUS');
      expect(props.DeletionProtection).toBe(config.retainData ? 'ACTIVE' : 'INACTIVE');
      const clients = Object.values(
        resourcesOfType(synth.template, 'AWS::Cognito::UserPoolClient'),
      );
      expect(clients).toHaveLength(1);
      expect(clients[0]!.Properties!.GenerateSecret).toBe(false);
      expect([...(clients[0]!.Properties!.ExplicitAuthFlows as string[])].sort()).toEqual([
        'ALLOW_REFRESH_TOKEN_AUTH',
        'ALLOW_USER_PASSWORD_AUTH',
      ]);
    });

    it('only the identity Lambda calls the pool’s admin API: exactly the four actions, on this pool', () => {
      const identityRole = logicalId(synth.stack.api.functions.get('identity')!.role!);
      const cognito = allPolicyStatements(synth.template).filter(({ statement }) =>
        asList(statement.Action).some((a) => a.startsWith('cognito-idp:')),
      );
      expect(cognito).toHaveLength(1);
      const { owner, statement } = cognito[0]!;
      expect(
        (resources()[owner]!.Properties!.Roles as Array<{ Ref: string }>).map((r) => r.Ref),
      ).toEqual([identityRole]);
      expect([...asList(statement.Action)].sort()).toEqual([...USER_POOL_ADMIN_ACTIONS].sort());
      expect(statement.Resource).toEqual({ 'Fn::GetAtt': [poolId(), 'Arn'] });
    });
  });

  describe('HTTP API', () => {
    it('has exactly one route per ROUTES and GATEWAY_ROUTES entry, plus $default', () => {
      const routeKeys = Object.values(
        resourcesOfType(synth.template, 'AWS::ApiGatewayV2::Route'),
      ).map((r) => r.Properties!.RouteKey as string);
      const expected = [...ROUTES.map(routeKey), ...GATEWAY_ROUTES.map(routeKey), '$default'];
      // the greedy routes a decoded container id needs, one per machine method
      expect(GATEWAY_ROUTES.map(routeKey)).toEqual([
        'GET /v1/models/{model}/machines/{id+}',
        'DELETE /v1/models/{model}/machines/{id+}',
        'POST /v1/models/{model}/machines/{id+}',
      ]);
      expect(new Set(routeKeys).size).toBe(routeKeys.length);
      expect([...routeKeys].sort()).toEqual([...expected].sort());
    });

    it('sends each route to its group’s Lambda and $default to the models Lambda', () => {
      const integrations = resourcesOfType(synth.template, 'AWS::ApiGatewayV2::Integration');
      const targetFunction = (route: Resource): string => {
        const join = (
          route.Properties!.Target as { 'Fn::Join': [string, [string, { Ref: string }]] }
        )['Fn::Join'];
        const integration = integrations[join[1][1].Ref]!;
        expect(integration.Properties).toMatchObject({
          IntegrationType: 'AWS_PROXY',
          PayloadFormatVersion: '2.0',
        });
        return (integration.Properties!.IntegrationUri as { 'Fn::GetAtt': [string, string] })[
          'Fn::GetAtt'
        ][0];
      };
      const routes = Object.values(resourcesOfType(synth.template, 'AWS::ApiGatewayV2::Route'));
      const byKey = new Map(routes.map((r) => [r.Properties!.RouteKey as string, r]));
      for (const route of [...ROUTES, ...GATEWAY_ROUTES]) {
        expect(targetFunction(byKey.get(routeKey(route))!)).toBe(apiFunctionId(route.group));
      }
      expect(apiFunctionId('machines')).toBe(
        targetFunction(byKey.get('POST /v1/models/{model}/machines/{id+}')!),
      );
      expect(DEFAULT_ROUTE_GROUP).toBe('models');
      expect(targetFunction(byKey.get('$default')!)).toBe(apiFunctionId('models'));
    });

    it('throttles and access-logs the default stage', () => {
      const accessLogsId = logicalId(synth.stack.api.node.findChild('AccessLogs'));
      synth.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        AutoDeploy: true,
        DefaultRouteSettings: {
          ThrottlingRateLimit: config.api.throttle.rateLimit,
          ThrottlingBurstLimit: config.api.throttle.burstLimit,
        },
        AccessLogSettings: {
          DestinationArn: { 'Fn::GetAtt': [accessLogsId, 'Arn'] },
          Format: Match.stringLikeRegexp('\\$context\\.requestId'),
        },
      });
      expect(resources()[accessLogsId]!.Properties!.RetentionInDays).toBe(config.logRetention);
    });

    it('outputs the API URL and the table name', () => {
      const outputs = synth.template.toJSON().Outputs as Record<string, { Value: unknown }>;
      expect(JSON.stringify(outputs.ApiUrl?.Value)).toContain('execute-api');
      expect(outputs.TableName?.Value).toEqual({ Ref: logicalId(synth.stack.table.table) });
    });
  });

  describe('IAM', () => {
    let statements: Array<{ owner: string; statement: PolicyStatementJson }>;
    beforeAll(() => {
      statements = allPolicyStatements(synth.template);
    });

    it('found statements to check', () => {
      expect(statements.length).toBeGreaterThan(10);
    });

    it('grants no wildcard action and no NotAction/NotResource', () => {
      for (const { owner, statement } of statements) {
        expect({
          owner,
          notAction: statement.NotAction,
          notResource: statement.NotResource,
        }).toEqual({
          owner,
          notAction: undefined,
          notResource: undefined,
        });
        for (const action of asList(statement.Action)) {
          expect({ owner, action }).toEqual({
            owner,
            action: expect.not.stringContaining('*') as string,
          });
        }
      }
    });

    it('grants only describe-style actions on every resource', () => {
      for (const { owner, statement } of statements) {
        if (!asList(statement.Resource).includes('*')) continue;
        for (const action of asList(statement.Action)) {
          expect({ owner, action, allowed: RESOURCE_WILDCARD_ALLOWED.has(action) }).toEqual({
            owner,
            action,
            allowed: true,
          });
        }
      }
    });

    it('grants DynamoDB actions only on this table and its indexes, only those the repository uses', () => {
      const tableId = logicalId(synth.stack.table.table);
      const dynamo = statements.filter(({ statement }) =>
        asList(statement.Action).some((a) => a.startsWith('dynamodb:')),
      );
      expect(dynamo.length).toBeGreaterThanOrEqual(ROUTE_GROUPS.length + 2);
      const eventsRole = logicalId(synth.stack.instanceEvents.function.role!);
      for (const { owner, statement } of dynamo) {
        if (resources()[owner]!.Properties!.Roles) {
          const roles = (resources()[owner]!.Properties!.Roles as Array<{ Ref: string }>).map(
            (r) => r.Ref,
          );
          if (roles.includes(eventsRole)) {
            // the state-change Lambda finds a machine by its instance, on that index, and
            // writes routine news to the machine's item: nothing else
            if (statement.Action === 'dynamodb:UpdateItem') {
              expect(statement.Resource).toEqual({ 'Fn::GetAtt': [tableId, 'Arn'] });
              // only the routine write's own attributes (key, set, condition), nothing read back
              expect(statement.Condition).toEqual({
                'ForAllValues:StringEquals': {
                  'dynamodb:Attributes': [
                    'pk',
                    'sk',
                    'instanceId',
                    'life',
                    'status',
                    'instanceStatus',
                    'instanceStatusAt',
                    'updatedAt',
                  ],
                },
                StringEqualsIfExists: { 'dynamodb:ReturnValues': 'NONE' },
              });
              continue;
            }
            expect(statement.Action).toEqual('dynamodb:Query');
            expect(statement.Resource).toEqual({
              'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, '/index/byInstance']],
            });
            continue;
          }
        }
        expect([...asList(statement.Action)].sort()).toEqual([...TABLE_ACTIONS].sort());
        expect(statement.Resource).toEqual([
          { 'Fn::GetAtt': [tableId, 'Arn'] },
          { 'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, '/index/*']] },
        ]);
      }
    });

    it('gives each API Lambda exactly its EC2 and Price List reads: regions, zones and offerings (models); instances, zones, offerings and the plan reads (machines); zones, offerings and the plan reads (applications, units); none elsewhere', () => {
      const planReads = [
        'ec2:DescribeAvailabilityZones',
        'ec2:DescribeInstanceTypeOfferings',
        'ec2:DescribeInstanceTypes',
        'ec2:DescribeSubnets',
        'pricing:GetProducts',
      ];
      const expected: Partial<Record<RouteGroup, string[]>> = {
        // create-model and set-model-constraints run checkOffered (zones and offerings)
        models: [
          'ec2:DescribeAvailabilityZones',
          'ec2:DescribeInstanceTypeOfferings',
          'ec2:DescribeRegions',
        ],
        machines: ['ec2:DescribeInstances', ...planReads],
        applications: planReads,
        units: planReads,
      };
      const roleGroup = new Map(
        ROUTE_GROUPS.map((g) => [logicalId(synth.stack.api.functions.get(g)!.role!), g] as const),
      );
      const granted = new Map<RouteGroup, Set<string>>();
      for (const [, policy] of Object.entries(
        resourcesOfType(synth.template, 'AWS::IAM::Policy'),
      )) {
        const roles = (policy.Properties!.Roles as Array<{ Ref: string }>).map((r) => r.Ref);
        const actions = (
          policy.Properties!.PolicyDocument as { Statement: PolicyStatementJson[] }
        ).Statement.flatMap((s) => asList(s.Action));
        for (const role of roles) {
          const group = roleGroup.get(role);
          if (!group) continue;
          const set = granted.get(group) ?? new Set<string>();
          for (const a of actions) if (a.startsWith('ec2:') || a.startsWith('pricing:')) set.add(a);
          granted.set(group, set);
        }
      }
      for (const group of ROUTE_GROUPS) {
        expect({ group, actions: [...(granted.get(group) ?? [])].sort() }).toEqual({
          group,
          actions: [...(expected[group] ?? [])].sort(),
        });
      }
    });
  });

  describe('EC2 state-change events', () => {
    const eventsFunctionId = () => logicalId(synth.stack.instanceEvents.function);

    it('are matched by a rule on aws.ec2 "EC2 Instance State-change Notification"', () => {
      const rules = Object.values(resourcesOfType(synth.template, 'AWS::Events::Rule'));
      expect(rules).toHaveLength(1);
      expect(rules[0]!.Properties).toMatchObject({
        State: 'ENABLED',
        EventPattern: {
          source: ['aws.ec2'],
          'detail-type': ['EC2 Instance State-change Notification'],
        },
      });
      expect(rules[0]!.Properties!.EventBusName).toBeUndefined(); // the default bus, where EC2 sends
    });

    it('go to the state-change Lambda, which EventBridge may invoke', () => {
      synth.template.hasResourceProperties('AWS::Events::Rule', {
        Targets: [
          Match.objectLike({
            Arn: { 'Fn::GetAtt': [eventsFunctionId(), 'Arn'] },
            RetryPolicy: Match.objectLike({ MaximumRetryAttempts: Match.anyValue() }),
          }),
        ],
      });
      synth.template.hasResourceProperties('AWS::Lambda::Permission', {
        Action: 'lambda:InvokeFunction',
        Principal: 'events.amazonaws.com',
        FunctionName: { 'Fn::GetAtt': [eventsFunctionId(), 'Arn'] },
      });
    });

    it('are handled by functions/instance-events.ts, bundled by esbuild on Node 22', () => {
      const fn = synth.stack.instanceEvents.function;
      expect(fn.node.metadata.find((m) => m.type === ENTRY_METADATA)?.data).toBe(
        'functions/instance-events.ts',
      );
      const asset = fn.node.findChild('Code') as Asset;
      expect(existsSync(path.join(synth.outdir, asset.assetPath, 'index.js'))).toBe(true);
      expect(resources()[eventsFunctionId()]!.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Handler: 'index.handler',
      });
    });

    it('get the table, Temporal settings, the secret ARN and the deployment tag value', () => {
      const vars = (
        resources()[eventsFunctionId()]!.Properties!.Environment as {
          Variables: Record<string, unknown>;
        }
      ).Variables;
      expect(Object.keys(vars).sort()).toEqual(
        [
          'NODE_OPTIONS',
          'POWERTOOLS_METRICS_NAMESPACE',
          'POWERTOOLS_SERVICE_NAME',
          'PROVISIONER_DEPLOYMENT',
          'PROVISIONER_TABLE',
          'TEMPORAL_ADDRESS',
          'TEMPORAL_API_KEY_SECRET_ARN',
          'TEMPORAL_NAMESPACE',
        ].sort(),
      );
      expect(vars).toMatchObject({
        PROVISIONER_TABLE: { Ref: logicalId(synth.stack.table.table) },
        PROVISIONER_DEPLOYMENT: deploymentId(config),
        TEMPORAL_ADDRESS: config.temporal.address,
        TEMPORAL_NAMESPACE: config.temporal.namespace,
        POWERTOOLS_METRICS_NAMESPACE: `Provisioner/${config.name}`,
      });
      expect(JSON.stringify(vars.TEMPORAL_API_KEY_SECRET_ARN)).toContain(
        `:secret:${config.temporal.apiKeySecretName}`,
      );
    });

    it('may query the machines-by-instance index, update a machine’s item and read the Temporal secret: nothing else', () => {
      const role = logicalId(synth.stack.instanceEvents.function.role!);
      const actions = Object.values(resourcesOfType(synth.template, 'AWS::IAM::Policy'))
        .filter((p) => (p.Properties!.Roles as Array<{ Ref: string }>).some((r) => r.Ref === role))
        .flatMap(
          (p) => (p.Properties!.PolicyDocument as { Statement: PolicyStatementJson[] }).Statement,
        )
        .flatMap((s) => asList(s.Action));
      expect(actions.filter((a) => a.startsWith('ec2:'))).toEqual([]);
      expect(actions.filter((a) => a.startsWith('dynamodb:')).sort()).toEqual([
        'dynamodb:Query',
        'dynamodb:UpdateItem',
      ]);
      expect([...new Set(actions.map((a) => a.split(':')[0]))].sort()).toEqual([
        'dynamodb',
        'secretsmanager',
      ]);
    });

    it('alarm on the Lambda’s errors', () => {
      const ref = JSON.stringify({ Ref: eventsFunctionId() });
      const errors = Object.values(
        resourcesOfType(synth.template, 'AWS::CloudWatch::Alarm'),
      ).filter(
        (a) =>
          a.Properties!.Namespace === 'AWS/Lambda' &&
          a.Properties!.MetricName === 'Errors' &&
          JSON.stringify(a.Properties!.Dimensions).includes(ref),
      );
      expect(errors).toHaveLength(1);
      expect(errors[0]!.Properties).toMatchObject({
        Threshold: 1,
        AlarmActions: [{ Ref: logicalId(synth.stack.alarms.topic) }],
      });
    });
  });

  describe('worker', () => {
    const taskRoleStatements = (): PolicyStatementJson[] => {
      const taskRoleId = logicalId(synth.stack.worker.service.taskDefinition.taskRole);
      return Object.values(resourcesOfType(synth.template, 'AWS::IAM::Policy'))
        .filter((p) =>
          (p.Properties!.Roles as Array<{ Ref: string }>).some((r) => r.Ref === taskRoleId),
        )
        .flatMap(
          (p) => (p.Properties!.PolicyDocument as { Statement: PolicyStatementJson[] }).Statement,
        );
    };

    it('runs as a Fargate service with the configured size, a circuit breaker and rollback', () => {
      synth.template.hasResourceProperties('AWS::ECS::Service', {
        LaunchType: 'FARGATE',
        DesiredCount: config.worker.desiredCount,
        DeploymentConfiguration: Match.objectLike({
          DeploymentCircuitBreaker: { Enable: true, Rollback: true },
          MinimumHealthyPercent: 100,
        }),
        NetworkConfiguration: {
          AwsvpcConfiguration: Match.objectLike({
            AssignPublicIp: config.worker.natGateways === 0 ? 'ENABLED' : 'DISABLED',
          }),
        },
      });
      synth.template.hasResourceProperties('AWS::ECS::TaskDefinition', {
        RequiresCompatibilities: ['FARGATE'],
        Cpu: String(config.worker.cpu),
        Memory: String(config.worker.memoryMiB),
      });
      synth.template.resourceCountIs('AWS::EC2::NatGateway', config.worker.natGateways);
    });

    it('gets the Temporal API key as an ECS secret and its settings as plain environment', () => {
      const [taskDef] = Object.values(resourcesOfType(synth.template, 'AWS::ECS::TaskDefinition'));
      const containers = taskDef!.Properties!.ContainerDefinitions as Array<{
        Environment: Array<{ Name: string; Value: unknown }>;
        Secrets: Array<{ Name: string; ValueFrom: unknown }>;
        LogConfiguration: { LogDriver: string };
      }>;
      expect(containers).toHaveLength(1);
      const container = containers[0]!;
      expect(container.Secrets.map((s) => s.Name)).toEqual(['TEMPORAL_API_KEY']);
      expect(JSON.stringify(container.Secrets[0]!.ValueFrom)).toContain(
        `:secret:${config.temporal.apiKeySecretName}`,
      );
      const vars = Object.fromEntries(container.Environment.map((e) => [e.Name, e.Value]));
      expect(vars).toMatchObject({
        PROVISIONER_TABLE: { Ref: logicalId(synth.stack.table.table) },
        TEMPORAL_ADDRESS: config.temporal.address,
        TEMPORAL_NAMESPACE: config.temporal.namespace,
        PROVISIONER_DEPLOYMENT: deploymentId(config),
        PROVISIONER_START_ATTEMPTS: String(config.worker.tuning.startAttempts),
        PROVISIONER_RETRY_DELAY: config.worker.tuning.retryDelay,
        PROVISIONER_SWEEP_INTERVAL: config.worker.tuning.sweepInterval,
        PROVISIONER_STRAY_GRACE: config.worker.tuning.strayGrace,
        POWERTOOLS_SERVICE_NAME: 'provisioner-worker',
        // the young generation the bench measures, not one derived from the task's memory
        NODE_OPTIONS: '--max-semi-space-size=16',
      });
      expect(JSON.stringify(vars.TEMPORAL_API_KEY_SECRET_ARN)).toContain(
        `:secret:${config.temporal.apiKeySecretName}`,
      );
      expect(Object.keys(vars).filter((name) => PLAIN_SECRET_NAME.test(name))).toEqual([]);
      expect(container.LogConfiguration.LogDriver).toBe('awslogs');
      expect(resources()[logicalId(synth.stack.worker.logGroup)]!.Properties!.RetentionInDays).toBe(
        config.logRetention,
      );
    });

    it('launches, tags and terminates only instances tagged for this deployment', () => {
      const deployment = deploymentId(config);
      const ec2 = taskRoleStatements().filter((s) =>
        asList(s.Action).some((a) => a.startsWith('ec2:')),
      );
      const bySid = new Map(ec2.map((s) => [s.Sid, s]));
      expect(bySid.get('RunTaggedInstances')).toMatchObject({
        Action: 'ec2:RunInstances',
        Condition: { StringEquals: { [`aws:RequestTag/${DEPLOYMENT_TAG}`]: deployment } },
      });
      expect(JSON.stringify(bySid.get('RunTaggedInstances')!.Resource)).toMatch(/:instance\/\*"/);
      expect(bySid.get('TagOnLaunchOnly')).toMatchObject({
        Action: 'ec2:CreateTags',
        Condition: { StringEquals: { 'ec2:CreateAction': 'RunInstances' } },
      });
      expect(bySid.get('TerminateOwnInstances')).toMatchObject({
        Action: 'ec2:TerminateInstances',
        Condition: { StringEquals: { [`aws:ResourceTag/${DEPLOYMENT_TAG}`]: deployment } },
      });
      expect(JSON.stringify(bySid.get('TerminateOwnInstances')!.Resource)).toMatch(
        /:instance\/\*"/,
      );
      expect(bySid.get('Describe')).toMatchObject({ Resource: '*' });
      expect([...asList(bySid.get('Describe')!.Action)].sort()).toEqual(
        [...EC2_DESCRIBE_ACTIONS].sort(),
      );
      expect([...asList(bySid.get('ManagePlacementGroups')!.Action)].sort()).toEqual([
        'ec2:CreatePlacementGroup',
        'ec2:DeletePlacementGroup',
      ]);
      expect(JSON.stringify(bySid.get('ManagePlacementGroups')!.Resource)).toMatch(
        /:placement-group\/juju-\*"/,
      );
      expect(EC2_DESCRIBE_ACTIONS).toContain('ec2:DescribePlacementGroups');
      // a launch into a placement group touches the group too
      expect(JSON.stringify(bySid.get('RunInstancesSupportingResources')!.Resource)).toMatch(
        /:placement-group\/juju-\*"/,
      );
      const allEc2 = new Set(ec2.flatMap((s) => asList(s.Action)));
      expect([...allEc2].sort()).toEqual(
        [
          'ec2:CreateTags',
          'ec2:RunInstances',
          'ec2:TerminateInstances',
          'ec2:CreatePlacementGroup',
          'ec2:DeletePlacementGroup',
          ...EC2_DESCRIBE_ACTIONS,
        ].sort(),
      );
      // Unconditioned RunInstances covers only what a launch uses besides the instance itself.
      const unconditioned = ec2.filter((s) => s.Action === 'ec2:RunInstances' && !s.Condition);
      expect(unconditioned).toHaveLength(1);
      expect(JSON.stringify(unconditioned[0]!.Resource)).not.toMatch(/:instance\//);
    });

    it('reads the table and the Temporal secret, nothing else', () => {
      const services = new Set(
        taskRoleStatements().flatMap((s) => asList(s.Action).map((a) => a.split(':')[0])),
      );
      expect([...services].sort()).toEqual([
        'dynamodb',
        'ec2',
        'iam',
        'pricing',
        'secretsmanager',
        'ssm',
      ]);
    });

    it('runs AWS-RunShellScript only, only on this deployment’s instances, and passes only the hosts’ role', () => {
      const deployment = deploymentId(config);
      const statements = taskRoleStatements();
      const ssm = statements.filter((s) => asList(s.Action).some((a) => a.startsWith('ssm:')));
      const bySid = new Map(ssm.map((s) => [s.Sid, s]));
      expect([...bySid.keys()].sort()).toEqual([
        'ReadCommandsAndInstances',
        'RunShellScriptDocument',
        'SendCommandToOwnInstances',
      ]);
      expect(bySid.get('RunShellScriptDocument')).toMatchObject({ Action: 'ssm:SendCommand' });
      expect(bySid.get('RunShellScriptDocument')!.Condition).toBeUndefined();
      expect(JSON.stringify(bySid.get('RunShellScriptDocument')!.Resource)).toMatch(
        /:ssm:",\{"Ref":"AWS::Region"\},"::document\/AWS-RunShellScript"/,
      );
      expect(bySid.get('SendCommandToOwnInstances')).toMatchObject({
        Action: 'ssm:SendCommand',
        Condition: { StringEquals: { [`ssm:resourceTag/${DEPLOYMENT_TAG}`]: deployment } },
      });
      expect(JSON.stringify(bySid.get('SendCommandToOwnInstances')!.Resource)).toMatch(
        /:instance\/\*"/,
      );
      expect(bySid.get('ReadCommandsAndInstances')).toMatchObject({ Resource: '*' });
      expect([...asList(bySid.get('ReadCommandsAndInstances')!.Action)].sort()).toEqual([
        'ssm:DescribeInstanceInformation',
        'ssm:GetCommandInvocation',
      ]);
      const hostsRole = logicalId(synth.stack.worker.hosts.role);
      const passRole = statements.filter((s) => asList(s.Action).includes('iam:PassRole'));
      expect(passRole).toEqual([
        {
          Sid: 'PassInstanceRole',
          Effect: 'Allow',
          Action: 'iam:PassRole',
          Resource: { 'Fn::GetAtt': [hostsRole, 'Arn'] },
          Condition: { StringEquals: { 'iam:PassedToService': 'ec2.amazonaws.com' } },
        },
      ]);
    });

    it('launches instances with a profile whose role EC2 assumes and that holds only the SSM agent’s policy', () => {
      const hostsRole = logicalId(synth.stack.worker.hosts.role);
      const role = resources()[hostsRole]!.Properties!;
      expect(role.AssumeRolePolicyDocument).toMatchObject({
        Statement: [
          {
            Action: 'sts:AssumeRole',
            Effect: 'Allow',
            Principal: { Service: 'ec2.amazonaws.com' },
          },
        ],
      });
      expect(JSON.stringify(role.ManagedPolicyArns)).toContain(
        ':iam::aws:policy/AmazonSSMManagedInstanceCore',
      );
      expect(role.ManagedPolicyArns).toHaveLength(1);
      expect(role.Policies).toBeUndefined();
      // no inline or attached customer policy grants the hosts anything more
      const attached = Object.values(resourcesOfType(synth.template, 'AWS::IAM::Policy')).filter(
        (p) => (p.Properties!.Roles as Array<{ Ref: string }>).some((r) => r.Ref === hostsRole),
      );
      expect(attached).toEqual([]);
      const profiles = Object.entries(resourcesOfType(synth.template, 'AWS::IAM::InstanceProfile'));
      expect(profiles).toHaveLength(1);
      const [profileId, profile] = profiles[0]!;
      expect(profile.Properties!.Roles).toEqual([{ Ref: hostsRole }]);
      const [taskDef] = Object.values(resourcesOfType(synth.template, 'AWS::ECS::TaskDefinition'));
      const env = (
        taskDef!.Properties!.ContainerDefinitions as Array<{
          Environment: Array<{ Name: string; Value: unknown }>;
        }>
      )[0]!.Environment;
      expect(env.find((e) => e.Name === 'PROVISIONER_INSTANCE_PROFILE')?.Value).toEqual({
        Ref: profileId,
      });
    });

    it('may read on-demand prices (pricing:GetProducts) and nothing else of the Price List API', () => {
      const pricing = taskRoleStatements().filter((s) =>
        asList(s.Action).some((a) => a.startsWith('pricing:')),
      );
      expect(pricing).toEqual([
        { Sid: 'ReadPrices', Effect: 'Allow', Action: 'pricing:GetProducts', Resource: '*' },
      ]);
    });

    it('accepts no inbound traffic', () => {
      synth.template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
      const sgId = logicalId(synth.stack.worker.service.connections.securityGroups[0]!);
      const sg = resources()[sgId]!;
      expect(sg.Properties!.SecurityGroupIngress).toBeUndefined();
      const ports = (sg.Properties!.SecurityGroupEgress as Array<{ FromPort: number }>).map(
        (e) => e.FromPort,
      );
      expect(ports.sort()).toEqual([443, Number(config.temporal.address.split(':')[1])].sort());
    });

    it('uses an image built from the repo’s Dockerfile at deploy time, without Docker at synth', () => {
      const manifest = JSON.parse(
        readFileSync(path.join(synth.outdir, `${synth.stack.stackName}.assets.json`), 'utf8'),
      ) as {
        dockerImages: Record<
          string,
          { source: { directory: string; dockerFile?: string; platform?: string } }
        >;
      };
      const images = Object.values(manifest.dockerImages);
      expect(images).toHaveLength(1);
      const source = images[0]!.source;
      expect(source).toMatchObject({ dockerFile: 'Dockerfile', platform: 'linux/amd64' });
      const staged = path.join(synth.outdir, source.directory);
      expect(existsSync(path.join(staged, 'Dockerfile'))).toBe(true);
      expect(existsSync(path.join(staged, 'worker', 'main.ts'))).toBe(true);
      expect(existsSync(path.join(staged, 'workflows'))).toBe(true);
      expect(existsSync(path.join(staged, 'core'))).toBe(true);
      expect(existsSync(path.join(staged, 'node_modules'))).toBe(false);
      expect(existsSync(path.join(staged, 'infra'))).toBe(false);
      synth.template.hasResourceProperties('AWS::ECS::TaskDefinition', {
        ContainerDefinitions: [
          Match.objectLike({
            Image: { 'Fn::Sub': Match.stringLikeRegexp('container-assets') },
          }),
        ],
      });
    });

    it('starts after the search attributes are registered', () => {
      const serviceId = logicalId(synth.stack.worker.service);
      const attributesId = synth.stack.getLogicalId(
        synth.stack.searchAttributes.resource.node.defaultChild as CfnElement,
      );
      expect(resources()[serviceId]!.DependsOn).toEqual(expect.arrayContaining([attributesId]));
    });
  });

  describe('search attributes', () => {
    it('are registered by a custom resource with the list the workflows use', () => {
      const [resource] = Object.values(
        resourcesOfType(synth.template, 'Custom::TemporalSearchAttributes'),
      );
      const props = resource!.Properties!;
      expect(props).toMatchObject({
        Mode: config.temporal.searchAttributes.registration,
        Address: config.temporal.address,
        Namespace: config.temporal.namespace,
      });
      expect(JSON.parse(props.Attributes as string)).toEqual(SEARCH_ATTRIBUTE_REGISTRATIONS);
      expect(JSON.stringify(props.ApiKeySecretArn)).toContain(
        `:secret:${config.temporal.apiKeySecretName}`,
      );
    });

    it('run on Node 22 like the API', () => {
      const handler = synth.stack.searchAttributes.node.findChild('Handler');
      expect(handler.node.metadata.find((m) => m.type === ENTRY_METADATA)?.data).toBe(
        'infra/search-attributes/handler.ts',
      );
      const fn = resources()[logicalId(handler)]!;
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs22.x', Handler: 'index.handler' });
    });
  });

  describe('operability', () => {
    const alarms = () => Object.values(resourcesOfType(synth.template, 'AWS::CloudWatch::Alarm'));
    const metricAlarm = (namespace: string, metricName: string, dimension?: unknown) =>
      alarms().filter(
        (a) =>
          a.Properties!.Namespace === namespace &&
          a.Properties!.MetricName === metricName &&
          (dimension === undefined ||
            JSON.stringify(a.Properties!.Dimensions).includes(JSON.stringify(dimension))),
      );

    it('alarms on each API Lambda’s errors and throttles', () => {
      for (const group of ROUTE_GROUPS) {
        const ref = { Ref: apiFunctionId(group) };
        expect(metricAlarm('AWS/Lambda', 'Errors', ref)).toHaveLength(1);
        expect(metricAlarm('AWS/Lambda', 'Throttles', ref)).toHaveLength(1);
      }
    });

    it('alarms on DynamoDB throttling', () => {
      const tableRef = JSON.stringify({ Ref: logicalId(synth.stack.table.table) });
      const throttle = alarms().filter((a) => {
        const metrics = JSON.stringify(a.Properties!.Metrics ?? []);
        return metrics.includes('ThrottledRequests') && metrics.includes(tableRef);
      });
      expect(throttle).toHaveLength(1);
    });

    it('alarms when fewer worker tasks run than desired', () => {
      const [alarm] = metricAlarm('ECS/ContainerInsights', 'RunningTaskCount');
      expect(alarm?.Properties).toMatchObject({
        Threshold: config.worker.desiredCount,
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
      });
      synth.template.hasResourceProperties('AWS::ECS::Cluster', {
        ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }],
      });
    });

    it('sends every alarm to the alarm topic', () => {
      const topicRef = { Ref: logicalId(synth.stack.alarms.topic) };
      // errors and throttles of each API Lambda and the state-change Lambda, table, API 5xx, worker,
      // and the EMF ones: machines in error, handler 5xx, EC2 throttling (observability.test.ts)
      expect(alarms().length).toBe((ROUTE_GROUPS.length + 1) * 2 + 3 + 3);
      for (const alarm of alarms()) {
        expect(alarm.Properties!.AlarmActions).toEqual([topicRef]);
      }
      if (config.alarmEmail) {
        synth.template.hasResourceProperties('AWS::SNS::Subscription', {
          Protocol: 'email',
          Endpoint: config.alarmEmail,
          TopicArn: topicRef,
        });
      } else {
        synth.template.resourceCountIs('AWS::SNS::Subscription', 0);
      }
    });

    it('keeps every log group for the environment’s retention', () => {
      const groups = Object.values(resourcesOfType(synth.template, 'AWS::Logs::LogGroup'));
      expect(groups.length).toBeGreaterThanOrEqual(ROUTE_GROUPS.length + 3);
      for (const group of groups)
        expect(group.Properties!.RetentionInDays).toBe(config.logRetention);
    });
  });
});
