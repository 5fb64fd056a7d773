import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../../../infra/bundling';
import { deploymentId } from '../../../infra/config';
import {
  KNOWN_REFUSALS,
  OBSERVED_CALLS_FILE,
  componentRoles,
  describeRefusal,
  grantedActions,
  isKnownRefusal,
  launchesAllTagged,
  parseObservedCalls,
  refusals,
  requiredPermissions,
  type ComponentRole,
} from '../../support/iam-grants';
import { CLI_WITHOUT_CREDENTIALS, synthEnvironment, type Synthesized } from './synth';

const SHARED_TABLE_GRANT =
  'one grant of the repository’s table actions (infra/permissions.ts TABLE_ACTIONS) for every component; the state layer is shared and the component does not use this one today (narrowing it per component is not done)';
const NOT_RUN_LOCALLY =
  'this component is not run by the local stack (the integration suite sees none of its calls); its grants are checked by stack.test.ts against what its code calls';
const SECRET_READ =
  'locally the API token and the Temporal key come from the environment (PROVISIONER_API_TOKEN; the dev server needs no key), so no secret is read; in the cloud each Lambda reads the API token and the Temporal key once per container (config/auth.ts, service/context.ts)';
const DESCRIBE_SECRET =
  'added by CDK’s grantRead together with GetSecretValue; the code never calls it';

/**
 * Granted actions the suite never calls, each with the reason it is kept.
 * By action for every component (`*`), or by component and action.
 */
const UNOBSERVED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  '*': {
    'secretsmanager:GetSecretValue': SECRET_READ,
    'secretsmanager:DescribeSecret': DESCRIBE_SECRET,
    'dynamodb:ConditionCheckItem': SHARED_TABLE_GRANT,
    'dynamodb:BatchGetItem': SHARED_TABLE_GRANT,
    'dynamodb:DeleteItem': SHARED_TABLE_GRANT,
    'dynamodb:PutItem': SHARED_TABLE_GRANT,
    'dynamodb:UpdateItem': SHARED_TABLE_GRANT,
    'dynamodb:GetItem': SHARED_TABLE_GRANT,
    'dynamodb:Query': SHARED_TABLE_GRANT,
    'dynamodb:PartiQLUpdate': SHARED_TABLE_GRANT,
  },
  worker: {
    'iam:PassRole':
      'launches pass the hosts’ instance profile only when PROVISIONER_INSTANCE_PROFILE is set, which the template does and the local stack does not (moto has no profile to pass)',
    'ec2:DescribeSubnets':
      'subnets are looked up only when a model names them (a spaces/subnet constraint), which the suite files run here do not',
    'ec2:DescribePlacementGroups':
      'availability-set mode reads an existing group only when creating it finds it already there',
  },
  ...Object.fromEntries(
    ['api:applications', 'api:units', 'api:machines'].map((component) => [
      component,
      {
        'ec2:DescribeSubnets':
          'a plan (dryRun) looks a subnet up only for a subnet= placement, which the suite files run here do not make',
      },
    ]),
  ),
};

function reasonFor(component: string, action: string): string | undefined {
  if (component === 'search-attributes') return NOT_RUN_LOCALLY;
  return UNOBSERVED[component]?.[action] ?? UNOBSERVED['*']?.[action];
}

describe('IAM from what the code does', () => {
  const calls = parseObservedCalls(
    readFileSync(path.join(PROJECT_ROOT, OBSERVED_CALLS_FILE), 'utf8'),
  );
  let synth: Synthesized;
  let roles: Map<string, ComponentRole>;
  let deployment: string;
  beforeAll(() => {
    synth = synthEnvironment('dev', {}, CLI_WITHOUT_CREDENTIALS, { bundle: false });
    roles = componentRoles(synth.stack, synth.template);
    deployment = deploymentId(synth.stack.config);
  });
  afterAll(() => synth?.cleanup());

  it('reads a list of the calls each component made, the worker’s launches all tagged', () => {
    const components = new Set(calls.map((c) => c.component));
    expect([...components].sort()).toEqual(
      expect.arrayContaining(['api:applications', 'api:machines', 'api:models', 'worker']),
    );
    for (const c of components) expect(roles.has(c)).toBe(true);
    expect(launchesAllTagged(calls)).toBe(true);
  });

  it('grants every observed call to the role of the component that made it, conditions included', () => {
    const refused = refusals(calls, roles, deployment);
    expect(refused.filter((r) => !isKnownRefusal(r)).map(describeRefusal)).toEqual([]);
  });

  it('keeps each known refusal only while the code still makes it', () => {
    const refused = refusals(calls, roles, deployment);
    for (const known of KNOWN_REFUSALS) {
      expect(
        refused.some((r) => r.component === known.component && r.action === known.action),
      ).toBe(true);
    }
  });

  it('refuses a plain CreateTags after launch: the policy tags only as part of RunInstances', () => {
    const [plain] = parseObservedCalls('worker ec2:CreateTags');
    expect(refusals([plain!], roles, deployment).map(describeRefusal)).toEqual([
      expect.stringMatching(
        /^ec2:CreateTags is not granted to worker \(role WorkerTaskDefinitionTaskRole/,
      ),
    ]);
    const [launch] = parseObservedCalls(
      'worker ec2:RunInstances tagOnCreate=instance requestTag:provisioner:deployment=local',
    );
    expect(refusals([launch!], roles, deployment)).toEqual([]);
    // a launch without the deployment's tag (or with another deployment's) is refused
    const [untagged] = parseObservedCalls(
      'worker ec2:RunInstances requestTag:provisioner:deployment=provisioner-prod',
    );
    expect(refusals([untagged!], roles, deployment).map((r) => r.action)).toEqual([
      'ec2:RunInstances',
    ]);
    // and the API Lambdas may not launch at all
    const [fromApi] = parseObservedCalls(
      'api:machines ec2:RunInstances requestTag:provisioner:deployment=local',
    );
    expect(refusals([fromApi!], roles, deployment).map((r) => r.action)).toEqual([
      'ec2:RunInstances',
    ]);
  });

  it('grants the zone claims’ BatchGetItem to the worker', () => {
    expect(
      calls.some((c) => c.component === 'worker' && c.operation === 'dynamodb:BatchGetItem'),
    ).toBe(true);
  });

  it('keeps a granted action no component was seen to call only with a reason', () => {
    const unexplained: string[] = [];
    for (const [component, role] of roles) {
      const used = new Set(
        calls
          .filter((c) => c.component === component)
          .flatMap((c) => requiredPermissions(c, deployment).map((p) => p.action)),
      );
      for (const action of grantedActions(role)) {
        if (used.has(action) || reasonFor(component, action)) continue;
        unexplained.push(`${component}: ${action} is granted, never observed, and has no reason`);
      }
    }
    expect(unexplained).toEqual([]);
  });
});
