import * as path from 'node:path';
import { RemovalPolicy, type Duration } from 'aws-cdk-lib';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { acknowledgeLambdaDefaults } from './nag';

/** The repository root: `infra/` lives directly under it. */
export const PROJECT_ROOT = path.resolve(__dirname, '..');

export const LAMBDA_RUNTIME = Runtime.NODEJS_22_X;

/** Construct metadata naming a bundled function's entry file (relative to the project root). */
export const ENTRY_METADATA = 'provisioner:entry';

export interface BundledFunctionProps {
  /** Entry file, relative to the project root, exporting `handler`. */
  entry: string;
  memoryMiB: number;
  timeout: Duration;
  environment: Record<string, string>;
  logRetention: RetentionDays;
  description: string;
}

/**
 * A Node.js Lambda bundled by the project's own esbuild (never Docker):
 * minified with `keepNames` so error classes keep their `name`, source maps
 * on and used, and the AWS SDK bundled at the version the tests ran against.
 */
export function bundledFunction(
  scope: Construct,
  id: string,
  props: BundledFunctionProps,
): NodejsFunction {
  const logGroup = new LogGroup(scope, `${id}Logs`, {
    retention: props.logRetention,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const fnProps: NodejsFunctionProps = {
    entry: path.join(PROJECT_ROOT, props.entry),
    handler: 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
    runtime: LAMBDA_RUNTIME,
    architecture: Architecture.ARM_64,
    memorySize: props.memoryMiB,
    timeout: props.timeout,
    description: props.description,
    logGroup,
    environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
    bundling: {
      format: OutputFormat.CJS,
      target: 'node22',
      keepNames: true,
      sourceMap: true,
      sourcesContent: false,
      minify: true,
      bundleAwsSDK: true,
      tsconfig: path.join(PROJECT_ROOT, 'tsconfig.json'),
      forceDockerBundling: false,
      logLevel: LogLevel.WARNING,
    },
  };
  const fn = new NodejsFunction(scope, id, fnProps);
  acknowledgeLambdaDefaults(fn);
  fn.node.addMetadata(ENTRY_METADATA, props.entry);
  return fn;
}
