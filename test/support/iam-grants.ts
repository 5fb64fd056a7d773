import type { CfnElement } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import { ROUTE_GROUPS } from '../../functions/routes';
import { DEPLOYMENT_TAG } from '../../infra/permissions';
import type { ProvisionerStack } from '../../infra/provisioner-stack';

/**
 * IAM from what the code does: the AWS calls the local stack's components made
 * (local/aws-call-recorder.ts writes them, one line per distinct call) mapped
 * to the IAM actions and condition values they need, checked against the
 * policies of the role each component runs as in the synthesized template.
 */

/** The deployment tag value of the local stack's worker (worker/main.ts: PROVISIONER_DEPLOYMENT unset). */
export const LOCAL_DEPLOYMENT = 'local';

export interface ObservedCall {
  component: string;
  /** `service:Operation`, the API operation (not yet the IAM action). */
  operation: string;
  facts: Map<string, string[]>;
  line: string;
}

export function parseObservedCalls(text: string): ObservedCall[] {
  const calls: ObservedCall[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [component, operation, ...rest] = line.split(/\s+/);
    if (!component || !operation)
      throw new Error(`observed call "${line}": not "<component> <service>:<Operation>"`);
    const facts = new Map<string, string[]>();
    for (const fact of rest) {
      const at = fact.indexOf('=');
      const key = fact.slice(0, at);
      facts.set(key, [...(facts.get(key) ?? []), decodeURIComponent(fact.slice(at + 1))]);
    }
    calls.push({ component, operation, facts, line });
  }
  return calls;
}

/** One IAM authorization a call needs: the action and the condition keys' values of its request. */
export interface RequiredPermission {
  action: string;
  /** Condition keys' values; a list for a multivalued key (dynamodb:Attributes). */
  context: Record<string, string | string[]>;
  /**
   * The EC2 resource type the authorization is for, when the policy splits an
   * action by resource (RunInstances: the instance with its conditions, the
   * image, subnet and the rest without); a statement counts only if one of its
   * resources is of that type or `*`.
   */
  resourceType?: string;
}

const TRANSACT_ITEM_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
  Get: 'dynamodb:GetItem',
};

/**
 * What IAM evaluates for one call, with `deployment` the template's deployment
 * tag value (the local worker's `local` stands for it). Resource tags the
 * client cannot see (aws:ResourceTag, ssm:resourceTag) are taken to be the
 * deployment's: the worker terminates and commands only instances it
 * launched, and every launch it made carried the tag (`launchesAllTagged`).
 */
export function requiredPermissions(call: ObservedCall, deployment: string): RequiredPermission[] {
  const [service, operation] = call.operation.split(':') as [string, string];
  const ours = (value: string) => (value === LOCAL_DEPLOYMENT ? deployment : value);
  if (service === 'dynamodb' && operation.startsWith('Transact')) {
    const kinds = (call.facts.get('items')?.[0] ?? '').split(',').filter(Boolean);
    return kinds.map((kind) => {
      const action = TRANSACT_ITEM_ACTIONS[kind];
      if (!action) throw new Error(`${call.line}: unknown transaction item kind ${kind}`);
      return { action, context: {} };
    });
  }
  if (service === 'dynamodb' && operation.endsWith('ExecuteStatement')) {
    // PartiQL: each statement is authorized by its verb (Update → dynamodb:PartiQLUpdate)
    const verbs = (call.facts.get('statements')?.[0] ?? '').split(',').filter(Boolean);
    if (verbs.length === 0) throw new Error(`${call.line}: no statement verbs recorded`);
    return verbs.map((verb) => ({ action: `dynamodb:PartiQL${verb}`, context: {} }));
  }
  if (call.operation === 'ec2:RunInstances') {
    const context: Record<string, string> = {};
    for (const [fact, values] of call.facts) {
      if (!fact.startsWith('requestTag:')) continue;
      const key = fact.slice('requestTag:'.length);
      const value = values[0] ?? '';
      context[`aws:RequestTag/${key}`] = key === DEPLOYMENT_TAG ? ours(value) : value;
    }
    const out: RequiredPermission[] = [
      { action: 'ec2:RunInstances', context, resourceType: 'instance' },
    ];
    if (call.facts.has('tagOnCreate')) {
      out.push({
        action: 'ec2:CreateTags',
        context: { 'ec2:CreateAction': 'RunInstances' },
        resourceType: 'instance',
      });
    }
    for (const service of call.facts.get('passRole') ?? []) {
      out.push({ action: 'iam:PassRole', context: { 'iam:PassedToService': service } });
    }
    return out;
  }
  if (call.operation === 'ec2:TerminateInstances') {
    return [
      {
        action: call.operation,
        context: { [`aws:ResourceTag/${DEPLOYMENT_TAG}`]: deployment },
        resourceType: 'instance',
      },
    ];
  }
  if (call.operation === 'ssm:SendCommand') {
    return [
      {
        action: call.operation,
        context: { [`ssm:resourceTag/${DEPLOYMENT_TAG}`]: deployment },
        resourceType: 'instance',
      },
    ];
  }
  if (call.operation === 'dynamodb:UpdateItem' && call.facts.has('attributes')) {
    // recorded for the components whose role names the attributes (local/aws-call-recorder.ts)
    const context: Record<string, string | string[]> = {
      'dynamodb:Attributes': (call.facts.get('attributes')?.[0] ?? '').split(',').filter(Boolean),
    };
    const returnValues = call.facts.get('returnValues')?.[0];
    if (returnValues) context['dynamodb:ReturnValues'] = returnValues;
    return [{ action: call.operation, context }];
  }
  // a plain call: no condition key has a value (CreateTags outside a launch has no ec2:CreateAction)
  return [{ action: call.operation, context: {} }];
}

/** Whether the worker's every observed launch carried the deployment tag (the assumption above rests on it). */
export function launchesAllTagged(calls: ObservedCall[]): boolean {
  return calls
    .filter((c) => c.operation === 'ec2:RunInstances')
    .every((c) => c.facts.has(`requestTag:${DEPLOYMENT_TAG}`));
}

interface Statement {
  Effect?: string;
  Action?: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

const list = <T>(v: T | T[] | undefined): T[] =>
  v === undefined ? [] : Array.isArray(v) ? v : [v];

function actionMatches(pattern: string, action: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    'i',
  );
  return re.test(action);
}

/**
 * Whether a statement's conditions hold for a request context. Only the
 * operators the project's policies use are understood; any other fails
 * closed, so a new kind of condition is looked at rather than waved through.
 */
function conditionsHold(
  conditions: Statement['Condition'],
  context: Record<string, string | string[]>,
): boolean {
  for (const [operator, keys] of Object.entries(conditions ?? {})) {
    for (const [key, expected] of Object.entries(keys)) {
      const found = Object.entries(context).find(
        ([k]) => k.toLowerCase() === key.toLowerCase(),
      )?.[1];
      const values = list(expected as string | string[]).map(String);
      if (operator === 'ForAllValues:StringEquals') {
        // IAM: every value the request has is allowed (none at all passes)
        if (!list(found).every((v) => values.includes(v))) return false;
        continue;
      }
      const actual = Array.isArray(found) ? undefined : found;
      if (operator === 'StringEquals') {
        if (actual === undefined || !values.includes(actual)) return false;
      } else if (operator === 'StringEqualsIfExists') {
        if (actual !== undefined && !values.includes(actual)) return false;
      } else if (operator === 'StringLike') {
        if (actual === undefined || !values.some((v) => actionMatches(v, actual))) return false;
      } else {
        return false;
      }
    }
  }
  return true;
}

function coversResourceType(statement: Statement, type: string | undefined): boolean {
  if (type === undefined) return true;
  return list(statement.Resource).some((r) => r === '*' || JSON.stringify(r).includes(`:${type}/`));
}

export function allows(statements: Statement[], permission: RequiredPermission): boolean {
  const matching = statements.filter(
    (s) =>
      list(s.Action).some((a) => actionMatches(a, permission.action)) &&
      coversResourceType(s, permission.resourceType),
  );
  if (matching.some((s) => s.Effect === 'Deny' && conditionsHold(s.Condition, permission.context)))
    return false;
  return matching.some(
    (s) => s.Effect === 'Allow' && conditionsHold(s.Condition, permission.context),
  );
}

export interface ComponentRole {
  component: string;
  /** The role's logical id in the template. */
  role: string;
  statements: Statement[];
}

/** The role each component runs as, and the statements of the policies attached to it. */
export function componentRoles(
  stack: ProvisionerStack,
  template: Template,
): Map<string, ComponentRole> {
  const roleId = (role: IRole | undefined) => {
    if (!role) throw new Error('component without a role');
    return stack.getLogicalId(role.node.defaultChild as CfnElement);
  };
  const roles = new Map<string, string>();
  for (const group of ROUTE_GROUPS)
    roles.set(`api:${group}`, roleId(stack.api.functions.get(group)?.role));
  roles.set('worker', roleId(stack.worker.service.taskDefinition.taskRole));
  roles.set('instance-events', roleId(stack.instanceEvents.function.role));
  const searchAttributes = stack.searchAttributes.node.tryFindChild('Handler') as
    { role?: IRole } | undefined;
  roles.set('search-attributes', roleId(searchAttributes?.role));

  const resources = template.toJSON().Resources as Record<
    string,
    { Type: string; Properties?: Record<string, unknown> }
  >;
  const statementsOf = (role: string): Statement[] => {
    const out: Statement[] = [];
    for (const res of Object.values(resources)) {
      if (res.Type !== 'AWS::IAM::Policy') continue;
      const attached = list(res.Properties?.Roles as Array<{ Ref?: string }> | undefined);
      if (!attached.some((r) => r.Ref === role)) continue;
      out.push(
        ...((res.Properties?.PolicyDocument as { Statement?: Statement[] }).Statement ?? []),
      );
    }
    const inline = list(
      resources[role]?.Properties?.Policies as
        Array<{ PolicyDocument: { Statement?: Statement[] } }> | undefined,
    );
    for (const policy of inline) out.push(...(policy.PolicyDocument.Statement ?? []));
    return out;
  };
  return new Map(
    [...roles].map(([component, role]) => [
      component,
      { component, role, statements: statementsOf(role) },
    ]),
  );
}

export interface Refusal {
  component: string;
  role: string;
  action: string;
  context: Record<string, string | string[]>;
  call: string;
}

/** Every observed call some permission of which its component's role does not grant. */
export function refusals(
  calls: ObservedCall[],
  roles: Map<string, ComponentRole>,
  deployment: string,
): Refusal[] {
  const out: Refusal[] = [];
  for (const call of calls) {
    const role = roles.get(call.component);
    for (const permission of requiredPermissions(call, deployment)) {
      if (!role || !allows(role.statements, permission)) {
        out.push({
          component: call.component,
          role: role?.role ?? '(no such component)',
          action: permission.action,
          context: permission.context,
          call: call.line,
        });
      }
    }
  }
  return out;
}

export function describeRefusal(r: Refusal): string {
  const context = Object.entries(r.context)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`)
    .join(', ');
  return `${r.action} is not granted to ${r.component} (role ${r.role})${context ? ` for ${context}` : ''}: observed "${r.call}"`;
}

/** Actions granted to each component's role (its own statements; CDK's log grants are managed policies). */
export function grantedActions(role: ComponentRole): string[] {
  return [
    ...new Set(role.statements.filter((s) => s.Effect === 'Allow').flatMap((s) => list(s.Action))),
  ].sort();
}

/**
 * Calls the code makes today that the template rightly refuses, each until
 * the change named fixes the code. An entry matches by component and action.
 */
export const KNOWN_REFUSALS: ReadonlyArray<{ component: string; action: string; why: string }> = [];

export function isKnownRefusal(r: Refusal): boolean {
  return KNOWN_REFUSALS.some((k) => k.component === r.component && k.action === r.action);
}

/** The checked-in list of calls the integration suite was seen to make (refreshed by its last file). */
export const OBSERVED_CALLS_FILE = 'test/support/observed-aws-calls.txt';
