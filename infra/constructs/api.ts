import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  type HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { GATEWAY_ROUTES, ROUTES, ROUTE_GROUPS, type RouteGroup } from '../../functions/routes';
import type { ApiSettings } from '../config';
import { bundledFunction } from '../bundling';
import { acknowledge } from '../nag';
import type { ProvisionerIdentity } from './identity';
import type { StateTable } from './state-table';

export interface ProvisionerApiProps {
  settings: ApiSettings;
  table: StateTable;
  /** Shared runtime settings (table, Temporal endpoint, secret ARNs). */
  environment: Record<string, string>;
  apiTokenSecret: ISecret;
  temporalApiKeySecret: ISecret;
  logRetention: RetentionDays;
  /** The user pool: its ids go to every API Lambda, its admin calls to the identity Lambda. */
  identity?: ProvisionerIdentity;
}

/**
 * EC2 calls of the models Lambda: model creation refuses a region EC2 does
 * not offer; create-model and set-model-constraints refuse a `zones=` value
 * the region lacks and an `instance-type` it does not offer
 * (service/offerings.ts checkOffered). Without the last two the check is
 * refused in the cloud, logged and skipped, and the bad value is stored.
 */
export const MODELS_EC2_ACTIONS = [
  'ec2:DescribeRegions',
  'ec2:DescribeAvailabilityZones',
  'ec2:DescribeInstanceTypeOfferings',
] as const;

/**
 * EC2 calls of the machines Lambda: reprovision asks EC2 for the instance's
 * state; add-machine refuses a zone the region lacks and an instance type it
 * does not offer (service/offerings.ts).
 */
export const MACHINES_EC2_ACTIONS = [
  'ec2:DescribeInstances',
  'ec2:DescribeAvailabilityZones',
  'ec2:DescribeInstanceTypeOfferings',
] as const;

/** EC2 calls of the applications Lambda: deploy refuses an unknown zone or instance type. */
export const APPLICATIONS_EC2_ACTIONS = [
  'ec2:DescribeAvailabilityZones',
  'ec2:DescribeInstanceTypeOfferings',
] as const;

/** EC2 calls of the units Lambda: add-unit refuses a `zone=` the region lacks. */
export const UNITS_EC2_ACTIONS = ['ec2:DescribeAvailabilityZones'] as const;

/**
 * Reads of the Lambdas that answer plans (`"dryRun": true`, service/plans.ts):
 * zones and their states, the instance-type catalogue and offerings, a
 * `subnet=` placement's subnet, and on-demand prices, as the worker reads
 * them. None has resource-level permissions; none changes anything.
 */
export const PLAN_READ_ACTIONS = [
  'ec2:DescribeAvailabilityZones',
  'ec2:DescribeInstanceTypes',
  'ec2:DescribeInstanceTypeOfferings',
  'ec2:DescribeSubnets',
  'pricing:GetProducts',
] as const;

/** The route groups whose routes take `dryRun` (deploy, add-unit, add-machine). */
export const PLAN_GROUPS: readonly RouteGroup[] = ['applications', 'units', 'machines'];

/** The group whose Lambda also answers unmatched requests (an authenticated 404). */
export const DEFAULT_ROUTE_GROUP: RouteGroup = 'models';

const METHODS: Record<string, HttpMethod> = {
  GET: HttpMethod.GET,
  POST: HttpMethod.POST,
  PUT: HttpMethod.PUT,
  PATCH: HttpMethod.PATCH,
  DELETE: HttpMethod.DELETE,
};

/**
 * The HTTPS API: one Lambda per route group of `functions/routes.ts`, a route
 * per entry of `ROUTES` and of `GATEWAY_ROUTES` (greedy routes that take a
 * container id the gateway has decoded into several segments), throttled and access-logged on the default stage.
 * Bearer-token checks happen in the handlers (`functions/http.ts`), which read
 * the token from Secrets Manager.
 */
export class ProvisionerApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly functions: ReadonlyMap<RouteGroup, NodejsFunction>;

  constructor(scope: Construct, id: string, props: ProvisionerApiProps) {
    super(scope, id);
    const functions = new Map<RouteGroup, NodejsFunction>();
    const integrations = new Map<RouteGroup, HttpLambdaIntegration>();
    for (const group of ROUTE_GROUPS) {
      const fn = bundledFunction(this, handlerId(group), {
        entry: `functions/${group}.ts`,
        description: `Provisioner API: ${group} routes`,
        memoryMiB: props.settings.lambdaMemoryMiB,
        timeout: Duration.seconds(props.settings.lambdaTimeoutSeconds),
        logRetention: props.logRetention,
        environment: { ...props.environment, ...props.identity?.environment },
      });
      if (group === 'identity') props.identity?.grantAdmin(fn);
      props.table.grantRepositoryAccess(fn);
      if (group === 'models') {
        // model creation refuses a region EC2 does not offer; create-model and set-model-constraints
        // check zones= and instance-type= (service/offerings.ts); none has resource scoping
        fn.addToRolePolicy(
          new PolicyStatement({ actions: [...MODELS_EC2_ACTIONS], resources: ['*'] }),
        );
        acknowledge(
          fn,
          'IAM5[Resource::*]',
          'ec2:DescribeRegions, DescribeAvailabilityZones and DescribeInstanceTypeOfferings have no resource-level permissions; the statement grants those read-only actions',
        );
      }
      if (group === 'machines') {
        // reprovision proceeds only when EC2 confirms the instance gone (service/instances.ts);
        // add-machine checks zones and instance types (service/offerings.ts); none has resource scoping
        fn.addToRolePolicy(
          new PolicyStatement({ actions: [...MACHINES_EC2_ACTIONS], resources: ['*'] }),
        );
        acknowledge(
          fn,
          'IAM5[Resource::*]',
          'ec2:DescribeInstances, DescribeAvailabilityZones and DescribeInstanceTypeOfferings have no resource-level permissions; the statement grants those read-only actions',
        );
      }
      if (group === 'applications' || group === 'units') {
        // deploy and add-unit refuse an unknown zone or instance type up front (service/offerings.ts)
        const actions = group === 'applications' ? APPLICATIONS_EC2_ACTIONS : UNITS_EC2_ACTIONS;
        fn.addToRolePolicy(new PolicyStatement({ actions: [...actions], resources: ['*'] }));
        acknowledge(
          fn,
          'IAM5[Resource::*]',
          `${actions.join(', ')}: no resource-level permissions; the statement grants only these read-only actions`,
        );
      }
      if (PLAN_GROUPS.includes(group)) {
        fn.addToRolePolicy(
          new PolicyStatement({ actions: [...PLAN_READ_ACTIONS], resources: ['*'] }),
        );
        acknowledge(
          fn,
          'IAM5[Resource::*]',
          'plans read zones, instance types, offerings, subnets and prices: Describe* and pricing:GetProducts have no resource-level permissions; every action granted is read-only',
        );
      }
      props.apiTokenSecret.grantRead(fn);
      props.temporalApiKeySecret.grantRead(fn);
      functions.set(group, fn);
      integrations.set(group, new HttpLambdaIntegration(`${handlerId(group)}Integration`, fn));
    }
    this.functions = functions;

    // the bearer token is checked by every handler (functions/http.ts) against the secret, 401 otherwise (API.md §1)
    acknowledge(
      this,
      'APIG4',
      'Every route is authorized in its Lambda: a bearer token compared with the Secrets Manager secret, 401 when missing or wrong (API.md §1, tested per route)',
    );
    this.api = new HttpApi(this, 'HttpApi', {
      description: 'Machine provisioner API',
      createDefaultStage: false,
      defaultIntegration: integrations.get(DEFAULT_ROUTE_GROUP),
    });
    // the documented routes, then the greedy ones a decoded container id needs (GATEWAY_ROUTES)
    for (const route of [...ROUTES, ...GATEWAY_ROUTES]) {
      const method = METHODS[route.method];
      const integration = integrations.get(route.group);
      if (!method || !integration)
        throw new Error(`route ${route.method} ${route.path}: no handler`);
      this.api.addRoutes({ path: route.path, methods: [method], integration });
    }

    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: props.settings.throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latency: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
  }

  /** The API's base URL (`https://…/`). */
  get url(): string {
    return this.stage.url;
  }
}

function handlerId(group: RouteGroup): string {
  return `${group.charAt(0).toUpperCase()}${group.slice(1)}Handler`;
}
