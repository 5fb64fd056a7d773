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

/** The repository's grant covers the table's secondary indexes by wildcard (`<table>/index/*`). */
export function acknowledgeTableIndexes(grantee: IConstruct, table: CfnElement): void {
  const logicalId = Stack.of(table).getLogicalId(table);
  acknowledge(
    grantee,
    `IAM5[Resource::<${logicalId}.Arn>/index/*]`,
    'Queries use the table’s own secondary indexes; the grant is scoped to this table’s indexes, which only the stack defines',
  );
}
