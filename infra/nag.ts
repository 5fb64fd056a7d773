import { Stack, Validations, type CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Acknowledgments of AWS Solutions (cdk-nag) findings, each with the reason it
 * is accepted. Every synth runs the pack (`infra/provisioner-app.ts`); a
 * finding without an acknowledgment here fails it.
 */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${id}`, reason });
}

const LAMBDA_BASIC_EXECUTION =
  'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]';

/** What every Lambda of the project (and the CDK provider framework's) is granted by default. */
export function acknowledgeLambdaDefaults(fn: IConstruct): void {
  acknowledge(
    fn,
    LAMBDA_BASIC_EXECUTION,
    'AWSLambdaBasicExecutionRole grants only CloudWatch Logs writes, to the function’s own log group in practice; a copy as a customer policy would add nothing',
  );
  acknowledge(
    fn,
    'L1',
    'The runtime is pinned on purpose (Node.js 22, the version the code is built and tested for); moving to a newer one is a tested change, not a synth-time default',
  );
}

/**
 * How cdk-nag names a resource in an `appliesTo` finding
 * (`Resource::arn:<AWS::Partition>:ec2:us-east-1:<AWS::AccountId>:instance/*`):
 * the value as CloudFormation will see it, with `Ref`s written `<Name>`,
 * `Fn::GetAtt`s `<Logical.Attr>` and `Fn::Join`s joined. Whether the region
 * and partition are literals or pseudo-parameters depends on how the stack's
 * environment resolves (the CLI passes `CDK_DEFAULT_REGION`, tests may not),
 * so an acknowledgment must be rendered from the value, never typed by hand.
 */
export function nagResourceName(scope: IConstruct, value: string): string {
  return flattenReference(Stack.of(scope).resolve(value));
}

function flattenReference(node: unknown): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/\}/g, '>');
  if (typeof node === 'object' && node !== null) {
    const fn = node as Record<string, unknown>;
    if (Array.isArray(fn['Fn::Join'])) {
      const [delimiter, items] = fn['Fn::Join'] as [string, unknown[]];
      return items.map(flattenReference).join(delimiter);
    }
    if (fn['Fn::Sub'] !== undefined) return flattenReference(fn['Fn::Sub']);
    if (Array.isArray(fn['Fn::GetAtt'])) {
      const [resource, attribute] = fn['Fn::GetAtt'] as [unknown, unknown];
      return `<${flattenReference(resource)}.${flattenReference(attribute)}>`;
    }
    if (fn['Fn::ImportValue'] !== undefined) return flattenReference(fn['Fn::ImportValue']);
    if (fn.Ref !== undefined) return `<${flattenReference(fn.Ref)}>`;
  }
  return JSON.stringify(node);
}

/**
 * Acknowledges AwsSolutions-IAM5 for every wildcard resource of `statements`
 * (other than `*` itself, which callers acknowledge once with their own
 * reason), rendered as the synth at hand renders it.
 */
export function acknowledgeWildcardResources(
  grantee: IConstruct,
  statements: ReadonlyArray<{ resources: string[]; sid?: string }>,
  reason: (statement: { sid?: string }, resource: string) => string,
): void {
  const done = new Set<string>();
  for (const statement of statements) {
    for (const resource of statement.resources) {
      const name = nagResourceName(grantee, resource);
      if (name === '*' || !name.includes('*') || done.has(name)) continue;
      done.add(name);
      acknowledge(grantee, `IAM5[Resource::${name}]`, reason(statement, name));
    }
  }
}

/** The repository's grant covers the table's secondary indexes by wildcard (`<table>/index/*`). */
export function acknowledgeTableIndexes(grantee: IConstruct, table: CfnElement): void {
  const logicalId = Stack.of(table).getLogicalId(table);
  acknowledge(
    grantee,
    `IAM5[Resource::<${logicalId}.Arn>/index/*]`,
    'Queries use the table’s own secondary indexes; the grant is scoped to this table’s indexes, which only the stack defines',
  );
}
